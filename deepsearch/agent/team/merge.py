"""The children's work in the parent's state: accepted answers as knowledge, and every
page and snippet they read, so the parent's references can cite a child's reading
(verified against the page text as any citation is)."""

from __future__ import annotations

from deepsearch.agent.retrieval.evidence import PageEvidence
from deepsearch.agent.state import AgentState
from deepsearch.agent.team.report import TeamMember
from deepsearch.agent.types import KnowledgeItem

MAX_ANSWER_CHARS = 4000


def _merge_pages(parent: AgentState, child: AgentState) -> None:
    """Each page once, as a knowledge item of the parent's (its id, its step)."""
    for url, page in child.pages.items():
        if url in parent.pages:
            continue
        parent.record_page(page)
        old = child.evidence.get(url)
        if old is None:
            continue
        item = old.item.model_copy(update={"relevance_to": {}, "pinned": False})
        parent.add_knowledge(item)
        # Chunks are kept; what is shown is re-chosen for the parent's questions.
        parent.add_evidence(
            PageEvidence(url=url, title=old.title, chunks=list(old.chunks), item=item)
        )


def _merge_lists(parent: AgentState, child: AgentState) -> None:
    parent.mark_visiting([u for u in child.visited if u not in parent.visited])
    parent.record_queries([q for q in child.searched_queries if q not in parent.searched_queries])
    for url, reason in child.failed_urls.items():
        if url not in parent.failed_urls:
            parent.mark_failed(url, reason)
    for url, record in child.url_pool.items():
        parent.url_pool.setdefault(url, record.model_copy())
    for url, snippet in child.snippets.items():
        parent.snippets.setdefault(url, snippet)
    parent.dead_hosts |= child.dead_hosts


def merge_child(parent: AgentState, child: AgentState, member: TeamMember) -> None:
    """An accepted answer becomes a pinned qa item (it stays in every later prompt, as
    an accepted sub-answer does); any child's reading joins the parent's evidence."""
    _merge_pages(parent, child)
    _merge_lists(parent, child)
    if member.status == "answered" and member.answer.strip():
        parent.add_knowledge(
            KnowledgeItem(
                question=member.question,
                answer=member.answer[:MAX_ANSWER_CHARS],
                type="qa",
                references=list(child.read_urls),
                pinned=True,
            )
        )
