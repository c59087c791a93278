"""Render the agent's prompt from the state, within the model's context window.

Knowledge can outgrow any context window. Items are scored by relevance to the
current question and by recency; the best fit the token allowance and are shown in
their original order. Left-out items stay in the state (and in Beast Mode's pool).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from deepsearch.agent import limits
from deepsearch.agent.schema import ActionName, AllowFlags
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem, ScoredUrl
from deepsearch.llm import tokens
from deepsearch.llm.tokens import count_tokens, upper_bound_tokens
from deepsearch.prompts import render, untrusted

if TYPE_CHECKING:
    from deepsearch.config import ToolName
    from deepsearch.llm.client import LLMClient

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_DIARY_ENTRIES = 12
MAX_QUERIES_SHOWN = 40
# Search snippets repeat what the URL list shows: the newest few, a small share.
MAX_SIDE_INFO_SHOWN = 2
SIDE_INFO_SHARE = 0.2
PINNED_ROOM = 2


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def _item_words(item: KnowledgeItem) -> frozenset[str]:
    if item.words is None:
        item.words = frozenset(_words(item.question + " " + item.answer[:2000]))
    return item.words


def format_item(index: int, item: KnowledgeItem) -> str:
    """One knowledge block; what came from pages and snippets (all but the block's own
    tag) cannot forge a tag (`prompts.untrusted`): it stays inside the block."""
    sources = ""
    if item.references:
        sources = "\n" + render(
            "context/knowledge_item_sources", urls=untrusted(", ".join(item.references[:5]))
        )
    updated = (
        " " + render("context/knowledge_item_updated", date=untrusted(item.updated))
        if item.updated
        else ""
    )
    return render(
        "context/knowledge_item",
        index=index,
        type=item.type,
        updated=updated,
        question=untrusted(item.question),
        answer=untrusted(item.answer),
        sources=sources,
    )


def item_tokens(item: KnowledgeItem) -> int:
    if item.tokens is None:
        item.tokens = count_tokens(format_item(item.id, item))
    return item.tokens


def _priorities(items: Sequence[KnowledgeItem], question: str, current_step: int) -> list[float]:
    q_words = _words(question)
    n_q = len(q_words) or 1
    for item in items:  # relevance per (item, question) is computed once and kept
        if question not in item.relevance_to:
            item.relevance_to[question] = len(q_words & _item_words(item)) / n_q
    # One pass, no per-item function calls: this runs every step over every item.
    return [
        item.relevance_to[question]
        + 1.0 / (1.0 + 0.25 * max(0, current_step - item.step))
        + (0.5 if item.type == "qa" else 0.0)  # answered sub-questions are dense
        + (10.0 if item.pinned else 0.0)  # an answer rests on it: always shown
        for item in items
    ]


def select_knowledge(
    items: Sequence[KnowledgeItem], question: str, token_allowance: int, *, current_step: int
) -> tuple[list[KnowledgeItem], int]:
    """The items to show (original order) and how many were left out.

    Pinned items first (up to PINNED_ROOM times the allowance); search snippets (side-info) only the newest
    MAX_SIDE_INFO_SHOWN within SIDE_INFO_SHARE of the allowance; the rest by
    relevance to `question` and recency.
    """
    if not items:
        return [], 0
    side_ok, side_cap = _side_limits(items, token_allowance)
    everything = _all_fit(items, side_ok, token_allowance, side_cap)
    if everything is not None:  # no count needed: exact costs would choose the same
        return everything, len(items) - len(everything)
    costs = [item_tokens(item) for item in items]
    priorities = _priorities(items, question, current_step)
    chosen: set[int] = set()
    spent = side_spent = 0
    for i in sorted(range(len(items)), key=priorities.__getitem__, reverse=True):
        side_info = items[i].type == "side-info"
        if side_info and (i not in side_ok or side_spent + costs[i] > side_cap):
            continue
        # Pinned items (the chain, an answer's support) may take up to PINNED_ROOM times
        # the allowance: at the smallest budget the chain is what the answer needs.
        room = token_allowance * (PINNED_ROOM if items[i].pinned else 1)
        if spent + costs[i] <= room:
            chosen.add(i)
            spent += costs[i]
            side_spent += costs[i] if side_info else 0
    kept = [items[i] for i in sorted(chosen)]
    return kept, len(items) - len(kept)


def _side_limits(items: Sequence[KnowledgeItem], allowance: int) -> tuple[set[int], int]:
    """The side-info items that may be shown (the newest few) and their token cap."""
    side = [i for i, item in enumerate(items) if item.type == "side-info"]
    return set(side[-MAX_SIDE_INFO_SHOWN:]), int(allowance * SIDE_INFO_SHARE)


def needs_exact_counts(items: Sequence[KnowledgeItem], token_allowance: int) -> bool:
    """Whether choosing among `items` takes their exact token counts (the vocabulary):
    their byte bounds no longer fit the allowances."""
    if not items:
        return False
    side_ok, side_cap = _side_limits(items, token_allowance)
    return _all_fit(items, side_ok, token_allowance, side_cap) is None


def warm_vocabulary(state: AgentState, llm: LLMClient) -> bool:
    """Start building the token vocabulary in the background when the next step's
    prompt will count its knowledge exactly (True if started). The build (~0.5-1 s of
    CPU, once a process) then runs while a call the step makes anyway is in flight,
    not between that call and the next step's request; a run whose knowledge always
    fits by its byte bounds never builds it."""
    encoding = tokens.encoding_for_model("")  # the one `item_tokens` counts with
    if tokens.is_loaded(encoding):
        return False
    if not needs_exact_counts(state.knowledge, knowledge_allowance(llm, "agent")):
        return False
    tokens.preload(encoding)
    return True


def _all_fit(
    items: Sequence[KnowledgeItem], side_ok: set[int], allowance: int, side_cap: int
) -> list[KnowledgeItem] | None:
    """Every item that may be shown, when even their byte bounds (never below a
    token count) fit both allowances; None when only exact counts can tell."""
    shown = [i for i, item in enumerate(items) if item.type != "side-info" or i in side_ok]
    bounds = {
        i: items[i].tokens or upper_bound_tokens(format_item(items[i].id, items[i])) for i in shown
    }
    side = sum(bounds[i] for i in shown if items[i].type == "side-info")
    if sum(bounds.values()) > allowance or side > side_cap:
        return None
    return [items[i] for i in shown]


def render_context(state: AgentState, knowledge: Sequence[KnowledgeItem], omitted: int) -> str:
    parts = [render("context/original_question", question=state.question)]
    if state.current_question != state.question:  # a sub-question: the model wrote it
        parts.append(render("context/current_question", question=untrusted(state.current_question)))
    if knowledge:
        # Blank lines between items let token counting cache each item (see count_tokens).
        items = "\n\n".join(format_item(item.id, item) for item in knowledge)
        note = "\n" + render("context/knowledge_omitted", count=omitted) if omitted else ""
        parts.append(render("context/knowledge", items=items, omitted=note))
    if state.diary:
        entries = "\n".join(state.diary[-MAX_DIARY_ENTRIES:])
        parts.append(render("context/diary", entries=untrusted(entries)))
    if state.searched_queries:
        shown = state.searched_queries[-MAX_QUERIES_SHOWN:]
        parts.append(render("context/queries_done", queries=untrusted("; ".join(shown))))
    if len(state.gaps) > 1:
        pending = [g for g in state.gaps if g != state.question]
        lines = "\n".join(
            render("context/open_sub_question", question=untrusted(g)) for g in pending
        )
        parts.append(render("context/open_sub_questions", questions=lines))
    return "\n\n".join(parts)


def _url_line(url: ScoredUrl) -> str:
    score = f"{url.score:.2f}"
    if url.origin == "link":
        return render(
            "context/url_link",
            index=url.index,
            score=score,
            url=untrusted(url.url),
            title=untrusted(url.title),
        )
    return render(
        "context/url_hit",
        index=url.index,
        score=score,
        url=untrusted(url.url),
        title=untrusted(url.title),
        snippet=untrusted(url.snippet[:200]),
    )


def render_url_list(state: AgentState) -> str:
    lines = [_url_line(u) for u in state.shown_urls]
    return "\n".join(lines) if lines else render("context/no_urls")


def render_requirements(state: AgentState, *, for_original: bool) -> str:
    if not for_original or not state.improvement_plans:
        return ""
    plans = "\n".join(
        render("context/reviewer_plan", number=i + 1, plan=untrusted(plan))
        for i, plan in enumerate(state.improvement_plans)
    )
    return render("context/requirements", plans=plans)


def _action_section(name: ActionName, state: AgentState, language: str, requirements: str) -> str:
    """One allowed action's instructions; the limits it states come from agent/limits.py."""
    if name == "search":
        return render("actions/search", max_queries=limits.MAX_QUERIES)
    if name == "visit":
        return render("actions/visit", max_visits=limits.MAX_VISITS, urls=render_url_list(state))
    if name == "reflect":
        return render("actions/reflect", max_subquestions=limits.MAX_SUBQUESTIONS)
    if name == "answer":
        return render("actions/answer", language=language, requirements=requirements)
    return render("actions/coding")


def render_actions(state: AgentState, flags: AllowFlags, *, language: str, beast: bool) -> str:
    for_original = state.current_question == state.question
    requirements = render_requirements(state, for_original=for_original)
    if beast:
        return render("actions/beast", language=language, requirements=requirements)
    sections = [_action_section(name, state, language, requirements) for name in flags.allowed()]
    return "\n\n".join(sections)


def build_system_prompt(
    state: AgentState,
    flags: AllowFlags,
    *,
    now: datetime,
    language: str,
    knowledge_allowance: int,
    beast: bool = False,
) -> tuple[str, int]:
    """The system prompt, and how many knowledge items it had to leave out."""
    knowledge, omitted = select_knowledge(
        state.knowledge, state.current_question, knowledge_allowance, current_step=state.step
    )
    prompt = render(
        "agent",
        now=now.strftime("%Y-%m-%d %H:%M"),
        language=language,
        context=render_context(state, knowledge, omitted),
        actions=render_actions(state, flags, language=language, beast=beast),
    )
    return prompt, omitted


PROMPT_OVERHEAD_TOKENS = 4096
# Lean prompts: beyond this, more knowledge costs tokens every step without helping.
KNOWLEDGE_CAP_TOKENS = 24_000
BEAST_PROMPT_TOKENS = 800  # the template, question and diary around the knowledge


def knowledge_allowance(llm: LLMClient, tool: ToolName) -> int:
    """Tokens of knowledge a prompt may carry: bounded by the context window, by a
    share of the budget, and in Beast Mode by what is left (it must fit to answer)."""
    max_out = llm.settings.tool_settings(llm.provider_name, tool).max_tokens
    by_window = llm.context_window - max_out - PROMPT_OVERHEAD_TOKENS
    by_budget = max(4000, llm.tracker.budget // 12)
    allowance = min(by_window, by_budget, KNOWLEDGE_CAP_TOKENS)
    if tool == "agent_beast":
        allowance = min(allowance, llm.tracker.beast_room(BEAST_PROMPT_TOKENS))
    return max(200, allowance)
