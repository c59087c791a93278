"""A deterministic policy LLM: replies to the real requests like a competent model.

It reads each chat-completions request the way a model would (the system prompt,
the messages, the response schema) and knows the current HotpotQA item:

- agent step: search the question first; visit the URLs in the numbered list that
  are the item's gold (supporting) pages; once one gold page has been read and the
  other is neither read nor listed, search for the other one's title (the bridge
  entity); answer, quoting the supporting sentences, once both gold pages are in
  the prompt's knowledge. With neither possible it answers that it could not find
  it (the evaluator then rejects that, as a strict one would);
- evaluator checks pass an answer that contains the gold answer, fail others;
- the question classifier asks only for a definitive answer;
- the finalizer returns the answer unchanged; every other tool gets a minimal
  object that validates against the request's schema.

The tool is told by the schema's properties (`action`, `pass`, `needs_definitive`,
`queries`), not by its name, so renamed schemas keep working; replies fill every
property of the schema (optional ones as null), which strict mode requires.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from bench.latency_site import wiki_path
from deepsearch.agent.schema import allowed_actions

_URL_LINE = re.compile(r"^\[(\d+)\][^\n]*?(https?://\S+)", re.MULTILINE)
_KNOWLEDGE = re.compile(
    r'<knowledge-\d+ type="(?P<type>[^"]+)"[^>]*>(?P<body>.*?)</knowledge-\d+>', re.S
)
_QUERIES = re.compile(r"<queries-done>\n(.*?)\n</queries-done>", re.S)
NOT_FOUND = "I could not find the answer in the sources I read."


def normalize(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def contains_answer(text: str, gold: str) -> bool:
    return f" {normalize(gold)} " in f" {normalize(text)} "


@dataclass
class Item:
    """The parts of a HotpotQA item the policy uses."""

    question: str
    answer: str
    gold: list[str]  # distinct supporting titles, in order
    facts: list[str] = field(default_factory=list)  # the supporting sentences

    @classmethod
    def from_hotpot(cls, raw: dict[str, Any], corpus: dict[str, list[str]]) -> Item:
        gold = list(dict.fromkeys(t for t, _ in raw["supporting_facts"]))
        facts: list[str] = []
        for title, index in raw["supporting_facts"]:
            sentences = corpus.get(title) or []
            if int(index) < len(sentences) and sentences[int(index)].strip() not in facts:
                facts.append(sentences[int(index)].strip())
        return cls(raw["question"].strip(), raw["answer"], gold, facts)


def minimal(schema: Any, defs: dict[str, Any]) -> Any:
    """The smallest value valid under a JSON schema (the subset pydantic emits)."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        return minimal(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        if any(o.get("type") == "null" for o in options):
            return None
        return minimal(options[0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        return None if "null" in kind else minimal({**schema, "type": kind[0]}, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return {k: minimal(v, defs) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [minimal(schema.get("items", {}), defs) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "x" * schema.get("minLength", 0)


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("schema")


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "system"
    )


def last_user(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


@dataclass
class Policy:
    """Callable on a request body; `item` is the question being run."""

    item: Item | None = None
    agent_prompts: list[str] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> str:
        schema = request_schema(body)
        if schema is None:  # free text: the finalizer's editor pass keeps the answer
            return last_user(body)
        defs = schema.get("$defs", {})
        reply = minimal(schema, defs)
        props = schema.get("properties", {})
        if "action" in props:
            self.agent_prompts.append(system_text(body))
            reply = self.step(system_text(body), allowed_actions(schema))
        elif "needs_definitive" in props:
            reply.update(think="a single fact", needs_definitive=True)
        elif "pass" in props:
            reply.update(self.check(last_user(body), props))
        return json.dumps(reply)

    # ------------------------------------------------------------ evaluator

    def check(self, user: str, props: dict[str, Any]) -> dict[str, Any]:
        answer = user.split("<answer>", 1)[-1]
        ok = self.item is not None and contains_answer(answer, self.item.answer)
        out: dict[str, Any] = {"think": "checked against the sources", "pass": ok}
        if "improvement_plan" in props:
            out["improvement_plan"] = "" if ok else "Find the page that states the answer."
        return out

    # ------------------------------------------------------------ agent step

    def step(self, prompt: str, allowed: list[str]) -> dict[str, Any]:
        item = self.item
        if item is None:
            return self._act(allowed[0], {}, allowed)
        listed = {page_key(url): int(i) for i, url in _URL_LINE.findall(prompt)}
        pages = [m.group("body") for m in _KNOWLEDGE.finditer(prompt) if m.group("type") == "url"]
        done = set((_QUERIES.search(prompt) or [None, ""])[1].split("; ")) - {""}
        read = [t for t in item.gold if any(_is_page_of(t, page) for page in pages)]
        unread = [t for t in item.gold if t not in read]
        to_visit = [listed[k] for t in unread if (k := title_key(t)) in listed]
        if not unread and "answer" in allowed:
            return self._act("answer", {"answer": self.answer_text()}, allowed)
        if to_visit and "visit" in allowed:
            return self._act("visit", {"url_indices": to_visit[:5]}, allowed)
        if "search" in allowed:
            # The question first; then (a hop read, or the question's results missed
            # the pages) the entities still missing, by name: the bridge search.
            wanted = [item.question] if not done else []
            wanted += [t for t in unread if title_key(t) not in listed]
            wanted = [q for q in wanted if q not in done][: 1 if not done else 5]
            if wanted:
                return self._act("search", {"queries": wanted}, allowed)
        sub_question = f"What is {unread[0] if unread else item.gold[0]}?"
        if "reflect" in allowed and sub_question not in prompt:
            # Stuck without search: name the missing entity as a sub-question, once.
            return self._act("reflect", {"questions": [sub_question]}, allowed)
        if "answer" in allowed:
            return self._act("answer", {"answer": NOT_FOUND}, allowed)
        return self._act(allowed[0], {}, allowed)

    def _act(self, action: str, payload: dict[str, Any], allowed: list[str]) -> dict[str, Any]:
        return {"think": f"next: {action}", "action": {action: payload or _empty_payload(action)}}

    def answer_text(self) -> str:
        """The supporting sentences (verbatim: quotable) and the answer itself."""
        assert self.item is not None
        return " ".join([*self.item.facts, f"So the answer is {self.item.answer}."])


def page_key(url: str) -> str:
    """A page's identity whatever normalization the URL pool applied."""
    return unquote(urlsplit(url).path).rstrip("/")


def title_key(title: str) -> str:
    return unquote(wiki_path(title))


def _is_page_of(title: str, block: str) -> bool:
    """Is a `type="url"` knowledge block the page of `title`? Only its header (the
    page title) and its sources line count: its text links to other pages."""
    header = block.split("\nA:", 1)[0]
    lines = block.rstrip().splitlines()
    sources = lines[-1] if lines and lines[-1].startswith("sources:") else ""
    own = {page_key(u) for u in re.findall(r"https?://[^\s,]+", sources)}
    return f'"{title} - ' in header or f'"{title}"' in header or title_key(title) in own


def _empty_payload(action: str) -> dict[str, Any]:
    return {
        "search": {"queries": ["more"]},
        "visit": {"url_indices": [1]},
        "reflect": {"questions": ["What is missing?"]},
        "answer": {"answer": NOT_FOUND},
        "coding": {"problem": "none"},
    }.get(action, {})
