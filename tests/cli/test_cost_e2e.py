"""What a run costs, and `--max-cost`, end to end over loopback (issue 34).

The fake OpenAI-compatible server counts every request's tokens itself, as OpenAI
does (the o200k vocabulary; the messages, the schema it was sent, a few tokens per
message) and never writes more than the request's output cap (a reply longer than it
is cut, finish_reason "length"). What it served, priced at gpt-4o-mini's list price
($0.15 / $0.60 per million input / output tokens), is the truth the run's
`usage.cost_usd` is checked against, and what `--max-cost` must never let it exceed.

The loopback server is a local server, which costs $0 by default: its price is set
with `llm.prices`, the user's override (the shipped table's figure for gpt-4o-mini is
checked to be the same list price).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepsearch.llm.prices import shipped_table
from deepsearch.llm.tokens import count_tokens
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import (  # noqa: F401 (fixtures)
    ANSWER_STEP,
    SEARCH,
    VISIT,
    router,
    run_in_process,
    search,
    web,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.steps import forever

INPUT_PER_M, OUTPUT_PER_M = 0.15, 0.60  # gpt-4o-mini's list price
CAP = 0.0015


class CountingModel:
    """Wraps a router: every reply is counted (and cut at the request's output cap) by
    the server, and its usage reported from that count."""

    def __init__(self, route: Callable[[dict[str, Any]], Any], *, pad_think: int = 0) -> None:
        self.route = route
        self.pad_think = pad_think  # extra words in every agent step's think
        self.served: list[tuple[int, int]] = []  # (prompt, completion) tokens per request

    def __call__(self, body: dict[str, Any]) -> Reply:
        reply = self.route(body)
        if self.pad_think and isinstance(reply, dict) and "think" in reply:
            reply = {**reply, "think": reply["think"] + " hmm" * self.pad_think}
        text = reply if isinstance(reply, str) else json.dumps(reply)
        schema = json.dumps(body.get("response_format") or {})
        prompt = (
            3
            + count_tokens(schema, model="gpt-4o-mini")
            + sum(
                4 + count_tokens(str(m.get("content") or ""), model="gpt-4o-mini")
                for m in body["messages"]
            )
        )
        cap = body.get("max_tokens") or body.get("max_completion_tokens") or 1 << 30
        completion, finish = count_tokens(text, model="gpt-4o-mini"), "stop"
        while completion > cap:  # a real server stops at the cap
            text, finish = text[: max(0, len(text) * cap // completion - 1)], "length"
            completion = count_tokens(text, model="gpt-4o-mini")
        self.served.append((prompt, completion))
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}  # fmt: skip
        return Reply(content=text, usage=usage, finish_reason=finish)

    @property
    def cost(self) -> float:
        prompt = sum(p for p, _ in self.served)
        completion = sum(c for _, c in self.served)
        return (prompt * INPUT_PER_M + completion * OUTPUT_PER_M) / 1_000_000


def priced_config(tmp: Path) -> Path:
    path = tmp / "prices.json"
    price = {"model": "gpt-4o-mini", "input": INPUT_PER_M, "output": OUTPUT_PER_M}
    path.write_text(json.dumps({"llm": {"prices": [price]}}), "utf-8")
    return path


def test_the_shipped_table_prices_gpt_4o_mini_at_its_list_price() -> None:
    price = shipped_table().models["gpt-4o-mini"]
    assert (price.input, price.output) == (INPUT_PER_M, OUTPUT_PER_M)


def test_cost_usd_is_what_the_server_counted_at_the_list_price(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    model = CountingModel(router([SEARCH, VISIT, ANSWER_STEP]))
    with FakeOpenAIServer(model) as llm:
        done = run_in_process(llm, search, "--config", str(priced_config(tmp_path)), tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    assert model.cost > 0 and usage["cost_usd"] == pytest.approx(model.cost, rel=0.03)
    assert usage["estimated"] is False and usage["max_cost"] is None
    assert sum(t["cost_usd"] for t in usage["by_tool"].values()) == pytest.approx(
        usage["cost_usd"], rel=1e-6
    )
    assert "$0.00" in done.stderr.splitlines()[-1]  # the summary line names the dollars


def never_answers() -> Callable[[dict[str, Any]], Any]:
    """A model that keeps searching (and reading), the costly kind of question."""
    steps = [SEARCH, VISIT, forever({"think": "more", "action": {"search": {"queries": ["x"]}}})]
    return router(steps, strict_pass=False)


@pytest.mark.parametrize(
    ("name", "route", "pad"),
    [
        ("never answers", never_answers, 0),
        ("answers, rejected, verbosely", lambda: router([SEARCH, VISIT, forever(ANSWER_STEP)],
                                                         strict_pass=False), 150),
    ],
)  # fmt: skip
def test_max_cost_is_never_crossed_and_the_cost_limit_is_named(
    name: str,
    route: Callable[[], Callable[[dict[str, Any]], Any]],
    pad: int,
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    uncapped = CountingModel(route(), pad_think=pad)
    with FakeOpenAIServer(uncapped) as llm:
        run_in_process(llm, search, "--config", str(priced_config(tmp_path)), tmp=tmp_path)
    assert uncapped.cost > CAP, f"{name}: the question must cost more than the cap"

    model = CountingModel(route(), pad_think=pad)
    with FakeOpenAIServer(model) as llm:
        flags = ("--config", str(priced_config(tmp_path)), "--max-cost", str(CAP))
        done = run_in_process(llm, search, *flags, tmp=tmp_path)
    out = json.loads(done.stdout)
    assert model.cost <= CAP, f"{name}: served ${model.cost:.6f} over the ${CAP} cap"
    assert out["usage"]["cost_usd"] == pytest.approx(model.cost, rel=0.03)
    assert out["usage"]["max_cost"] == CAP
    assert out["status"] in ("forced", "not_found") and done.returncode in (3, 4)
    assert out["answer"].strip(), "an answer, or an honest not-found with what was looked for"
    assert "cost limit" in out["stop_reason"]


def test_an_unpriced_model_refuses_a_cost_limit_before_any_call(tmp_path: Path) -> None:
    """A hosted endpoint (OpenAI's own: no base URL) and a model the table does not
    know: exit 2, one line naming the model and the key, nothing sent anywhere."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"llm": {"model": "acme-large-2"}}), "utf-8")
    env = {**cli_env_without_base_url(tmp_path)}
    refused = run_cli_in_process(
        "q?", "--json", "--config", str(config), "--max-cost", "0.01", env=env
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert "acme-large-2" in refused.stderr and "llm.prices" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def cli_env_without_base_url(tmp: Path) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-key-0123456789", "HOME": str(tmp), "NO_COLOR": "1",
            "DEEPSEARCH_CACHE_DIR": str(tmp / "cache")}  # fmt: skip
