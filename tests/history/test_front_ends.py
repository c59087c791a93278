"""The one continuation (session.ResearchSession's `earlier`) behind every front end:
the library's `continue_from=`, the MCP tool's `continue_from` argument, and serve's
multi-turn `messages` whose last reply is a run the history kept."""

from __future__ import annotations

from typing import Any

import pytest

import deepsearch
from deepsearch.errors import UsageError
from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, SEARCH, VISIT, router
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.cli.test_history_cli import ANSWER_WRITER, STANDALONE, page_fetches, with_follow_up
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer
from tests.test_library import llm as llm  # noqa: F401
from tests.test_library import options


def first_run(llm: FakeOpenAIServer, search: FakeSearchServers) -> deepsearch.ResearchResult:  # noqa: F811
    llm.handler = router([SEARCH, VISIT, ANSWER_STEP])
    result = deepsearch.research(QUESTION, **options(search))
    assert result.status == "answered" and result.run_id
    return result


def test_the_library_continues_a_run(
    llm: FakeOpenAIServer,  # noqa: F811
    search: FakeSearchServers,  # noqa: F811
    web: LoopbackServer,  # noqa: F811
) -> None:
    one = first_run(llm, search)
    fetched = page_fetches(web)
    llm.handler = with_follow_up(router([ANSWER_WRITER]))
    two = deepsearch.research("and who wrote it?", continue_from=one.run_id, **options(search))
    assert two.continued_from == one.run_id and two.question == STANDALONE
    assert page_fetches(web) == fetched and two.references
    llm.handler = with_follow_up(router([ANSWER_WRITER]))
    last = deepsearch.research("and when?", continue_from="last", **options(search))
    assert last.continued_from == two.run_id
    with pytest.raises(UsageError, match="no run 'nosuch' in the history"):
        deepsearch.research("and then?", continue_from="nosuch", **options(search))


async def test_the_mcp_tool_continues_a_run(
    llm: FakeOpenAIServer,  # noqa: F811
    search: FakeSearchServers,  # noqa: F811
) -> None:
    from deepsearch.mcp_server import tool
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    assert "continue_from" in tool.input_schema()["properties"]
    config = McpConfig(options=options(search), max_budget=200_000)
    llm.handler = router([SEARCH, VISIT, ANSWER_STEP])
    one = await call_research(config, {"question": QUESTION}, Progress(None))
    run_id = (one.structuredContent or {})["run_id"]
    assert run_id and not one.isError
    llm.handler = with_follow_up(router([ANSWER_WRITER]))
    two = await call_research(
        config, {"question": "and who wrote it?", "continue_from": run_id}, Progress(None)
    )
    assert not two.isError and (two.structuredContent or {})["run_id"] != run_id
    missing = await call_research(
        config, {"question": "and then?", "continue_from": "nosuch"}, Progress(None)
    )
    assert missing.isError and "no run 'nosuch'" in str(missing.content[0])


def test_serve_continues_the_run_behind_the_last_reply(
    llm: FakeOpenAIServer,  # noqa: F811
    search: FakeSearchServers,  # noqa: F811
) -> None:
    from deepsearch.library import load_settings
    from deepsearch.server.request import conversation, parse_request
    from deepsearch.server.research import continued

    one = first_run(llm, search)
    settings = load_settings(options(search))

    def turns(reply: str) -> Any:
        messages = [
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": reply},
            {"role": "user", "content": "and who wrote it?"},
        ]
        return conversation(
            parse_request({"model": "jina-deepsearch-v1", "messages": messages}).messages
        )[1]

    earlier, left = continued(settings, turns(one.answer))
    assert earlier is not None and earlier.run_id == one.run_id and left == []
    assert earlier.urls_read == one.read_urls
    assert continued(settings, turns("some other reply"))[0] is None
