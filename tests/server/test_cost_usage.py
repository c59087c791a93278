"""serve's `usage` carries the request's dollars as an extra field (issue 34)."""

from __future__ import annotations

from tests.cli.test_end_to_end import ANSWER_STEP, QUESTION, router
from tests.fakes.openai_server import FakeOpenAIServer
from tests.server.conftest import Serve


def test_usage_has_cost_usd_a_local_server_costing_nothing(serve: Serve) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        server = serve(llm, max_cost=0.25)  # the server's ceiling: a local model is priced $0
        done = server.client().chat.completions.create(
            model="deepsearch",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"max_cost": 5},
        )
    assert done.usage is not None and done.usage.total_tokens > 0
    assert (done.usage.model_extra or {})["cost_usd"] == 0.0
