"""`deepsearch serve`'s multi-turn `messages` continue the run behind the last reply
(docs/history.md): the follow-up is made standalone and nothing that run read is
fetched again."""

from __future__ import annotations

from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, SEARCH, VISIT, router, schema_name
from tests.cli.test_history_cli import ANSWER_WRITER, page_fetches, with_follow_up
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.web_server import LoopbackServer
from tests.server.conftest import Serve


def test_a_reply_of_this_server_is_continued_without_fetching_again(
    serve: Serve, web: LoopbackServer
) -> None:
    first = [{"role": "user", "content": QUESTION}]
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = serve(llm).client().chat.completions.create(model="deepsearch", messages=first)
    reply = done.choices[0].message.content or ""
    fetched = page_fetches(web)
    assert "Stephen King" in reply and len(fetched) == 4

    follow = [
        *first,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "and who wrote it?"},
    ]
    with FakeOpenAIServer(with_follow_up(router([ANSWER_WRITER]))) as llm:
        again = serve(llm).client().chat.completions.create(model="deepsearch", messages=follow)
        rewrites = [r for r in llm.chat_requests if schema_name(r.body) == "FollowUpReply"]
    assert len(rewrites) == 1 and page_fetches(web) == fetched
    assert "wrote it" in (again.choices[0].message.content or "")
