"""Re-record the pocket benchmark's cassettes against the test suite's loopback fakes:

    .venv/bin/python -m tests.pocket.record        # rewrites tests/pocket/cassettes/

Each question runs the real research command (its flag parser, settings, runtime and
agent) with `--record`, against a fake OpenAI-compatible server (the real `openai`
SDK), a fake SearXNG and loopback pages built from pages.json. The fake model
searches, reads both pages and answers with the gold page's sentence; every check
passes. The cassettes are then rewritten to a fixed page origin, and the clock is
fixed, so re-recording changes nothing unless behaviour changed. Commit the output.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.pocket.pocket import (
    CASSETTES,
    FIXED_ORIGIN,
    RESEARCH_FLAGS,
    STARTED_AT,
    Question,
    pages,
    questions,
    slug,
)

FAKE_KEY = "sk-pocket-fake-key-0000000000"
_CLEARED = ("GEMINI_API_KEY", "JINA_API_KEY", "BRAVE_API_KEY", "SERPER_API_KEY", "DEEPSEARCH_")


def answer_sentence(question: Question, text: str) -> str:
    """The gold page's sentence that states the answer (what the fake model says)."""
    sentences = [s.strip() + "." for s in text.split(". ") if s.strip()]
    for sentence in sentences:
        if question.answer.lower() in sentence.lower():
            return sentence.replace("..", ".")
    return sentences[0]


def steps(question: Question, world: dict[str, Any]) -> list[dict[str, Any]]:
    gold = world["pages"][0]["text"]
    return [
        {"think": "search", "action": {"search": {"queries": [world["query"]]}}},
        {"think": "read both", "action": {"visit": {"url_indices": [1, 2]}}},
        {
            "think": "the page says it",
            "action": {"answer": {"answer": answer_sentence(question, gold)}},
        },
    ]


def _clean_environment(home: Path, base_url: str) -> None:
    for var in list(os.environ):
        if var.startswith(_CLEARED) or var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            del os.environ[var]
    os.environ.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        DEEPSEARCH_CACHE_DIR=str(home / ".cache" / "deepsearch"),
        OPENAI_API_KEY=FAKE_KEY,
        OPENAI_BASE_URL=base_url,
        NO_COLOR="1",
    )


def record_one(question: Question, directory: Path, searxng_url: str) -> dict[str, Any]:
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.commands.flags import research_flags
    from deepsearch.commands.run_research import run_research
    from deepsearch.config import load_config
    from deepsearch.frontend.options import FLAG_OF

    flags = [
        *RESEARCH_FLAGS,
        *["--llm-provider", "openai", "--search-provider", "searxng"],
        *["--searxng-url", searxng_url, "--allow-private-urls", "--no-cache"],
    ]
    overrides, _ = research_flags(flags, "research")
    settings = load_config(overrides=overrides, override_labels=FLAG_OF).settings
    spec = CassetteSpec(mode="record", directory=directory, started_at=STARTED_AT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_research(
            question.question, settings, as_json=True, quiet=True, trace_path=None, cassette=spec
        )
    result: dict[str, Any] = json.loads(out.getvalue())
    if code != 0:
        raise SystemExit(f"{question.id}: exit {code}: {result.get('error')}")
    return result


def _zero_elapsed(path: Path) -> None:
    """The one time in a result: zero, so the committed files do not churn."""
    result = json.loads(path.read_text("utf-8"))
    result["elapsed_s"] = 0.0
    path.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", "utf-8")


def main() -> int:
    from deepsearch.cassettes import rewrite
    from tests.cli.test_end_to_end import page_html, router
    from tests.fakes.openai_server import FakeOpenAIServer
    from tests.fakes.search_servers import FakeSearchServers
    from tests.fakes.web_server import LoopbackServer, _text

    worlds = pages()
    routes = {
        f"/{qid}/{slug(page['title'])}": _text(page_html(page["title"], page["text"]), "text/html")
        for qid, world in worlds.items()
        for page in world["pages"]
    }
    shutil.rmtree(CASSETTES, ignore_errors=True)
    with (
        tempfile.TemporaryDirectory() as home,
        LoopbackServer(routes=routes) as web,
        FakeSearchServers() as search,
        FakeOpenAIServer() as llm,
    ):
        _clean_environment(Path(home), llm.base_url)
        for question in questions():
            world = worlds[question.id]
            results = [
                {
                    "title": page["title"],
                    "url": web.url(f"/{question.id}/{slug(page['title'])}"),
                    "content": page["text"].split(". ")[0] + ".",
                }
                for page in world["pages"]
            ]
            search.always("searxng", 200, {"results": results})
            llm.handler = router(steps(question, world))
            directory = CASSETTES / question.id
            result = record_one(question, directory, search.base_url("searxng"))
            rewrite(directory, {web.base: FIXED_ORIGIN}, fetched_at=STARTED_AT.isoformat())
            _zero_elapsed(directory / "result.json")
            print(f"{question.id}: {result['status']}: {result['answer'][:60]!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
