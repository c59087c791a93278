"""The request's knobs become run settings; the conversation becomes question and turns."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.types import Reference
from deepsearch.config import load_config
from deepsearch.server.request import (
    ChatRequest,
    RequestError,
    conversation,
    parse_request,
    run_settings,
)
from deepsearch.server.shapes import answer_pieces, finish_reason, url_annotations

BASE = load_config(
    overrides={"agent.budget": 200_000, "agent.bad_hostnames": ["spam.example.com"]},
    environ={},
).settings


def request(**fields: Any) -> ChatRequest:
    return parse_request({"messages": [{"role": "user", "content": "q?"}], **fields})


def test_knobs_map_onto_the_run_settings() -> None:
    agent = run_settings(
        BASE,
        request(
            max_completion_tokens=40_000,
            only_hostnames=["https://www.Example.org/page"],
            no_direct_answer=True,
            max_annotations=3,
            language_code="de",
        ),
        max_budget=1_000_000,
    ).agent
    assert agent.token_budget == 40_000 and agent.max_bad_attempts == 1
    assert agent.only_hostnames == ["www.example.org"]
    assert agent.bad_hostnames == ["spam.example.com"], "the server's list stays unless replaced"
    assert agent.direct_answer is False and agent.max_references == 3 and agent.language == "de"


def test_defaults_leave_the_server_settings_alone() -> None:
    agent = run_settings(BASE, request(), max_budget=1_000_000).agent
    assert agent.token_budget == 200_000 and agent.max_bad_attempts == 2
    assert agent.direct_answer is True and agent.language is None


@pytest.mark.parametrize(
    ("fields", "budget"),
    [
        ({"budget_tokens": 30_000, "max_completion_tokens": 60_000}, 30_000),
        ({"max_completion_tokens": 60_000, "reasoning_effort": "high"}, 60_000),
        ({"reasoning_effort": "low"}, 100_000),
        ({"reasoning_effort": "high"}, 150_000),
    ],
)
def test_budget_precedence_and_cap(fields: dict[str, Any], budget: int) -> None:
    assert run_settings(BASE, request(**fields), max_budget=150_000).agent.token_budget == budget


def test_turns_pair_each_question_with_its_reply() -> None:
    chat = parse_request(
        {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "first?"},
                {"role": "user", "content": "second?"},
                {"role": "assistant", "content": "<think>x</think> two"},
                {"role": "tool", "content": "ignored"},
                {"role": "user", "content": "  and   now?  "},
            ]
        }
    )
    question, turns = conversation(chat.messages)
    assert question == "and now?"
    assert [(t.question.rsplit(": ", 1)[1], t.answer) for t in turns] == [
        ("first?", "(no reply)"),
        ("second?", "two"),
    ]
    assert all(t.pinned and t.type == "qa" for t in turns)


def test_unknown_fields_are_ignored_and_bad_ones_named() -> None:
    assert request(team_size=4, temperature=0.3, tools=[]).stream is False
    with pytest.raises(RequestError) as caught:
        request(max_annotations="3")  # the JSON type: checked as the body is parsed
    assert caught.value.param == "max_annotations"
    with pytest.raises(RequestError) as caught:  # the bound: the key's, as a flag's
        run_settings(BASE, request(max_annotations=-1), max_budget=1_000_000)
    assert caught.value.param == "max_annotations"
    assert str(caught.value) == (
        "max_annotations: agent.max_references: Input should be greater than or equal to 0"
    )
    with pytest.raises(RequestError):
        parse_request(["not", "an", "object"])


def test_annotation_spans_and_answer_pieces() -> None:
    content = 'Ünïcode first.[^1] Then.[^2]\n\n[^1]: "a" — [A](https://a.example)\n'
    refs = [Reference(url="https://a.example", title="A", quote="a")] * 2
    spans = [
        (n["url_citation"]["start_index"], n["url_citation"]["end_index"])
        for n in url_annotations(content, refs)
    ]
    assert [content[s:e] for s, e in spans] == ["[^1]", "[^2]"]
    long = "".join(f"line {i} " * 20 + "\n" for i in range(10))
    pieces = answer_pieces(long)
    assert "".join(pieces) == long and len(pieces) > 1
    assert all(p.endswith("\n") for p in pieces)


def test_secrets_are_masked_in_what_a_client_sees() -> None:
    from deepsearch.server.app import ServerConfig

    settings = load_config(environ={"OPENAI_API_KEY": "sk-provider-123456"}).settings
    config = ServerConfig(settings=settings, max_budget=100_000, api_key="srv-key-999")
    text = config.mask("failed with sk-provider-123456 and srv-key-999")
    assert text == "failed with **** and ****"


def test_reasoning_text_per_event() -> None:
    from deepsearch.agent.events import Activity, Notice, PhaseChanged, StepFinished
    from deepsearch.server.reasoning import ReasoningText

    text = ReasoningText()
    step = StepFinished(
        step=2, action="visit", think="read  both", detail="read 2", tokens_used=1,
        budget=9, elapsed_s=1.0,
    )  # fmt: skip
    assert text(step) == "**Step 2 · visit** read both (read 2)\n\n"
    once = Notice(text="left out", once="k")
    assert text(once) == "_left out_\n\n" and text(once) is None
    assert text(Notice(text="again")) == text(Notice(text="again")) == "_again_\n\n"
    assert "Beast Mode" in (text(PhaseChanged(phase="beast", reason="85% used")) or "")
    assert text(Activity(what="llm", delta=1)) is None and text(PhaseChanged(phase="done")) is None


@pytest.mark.parametrize(
    ("status", "reason"),
    [("answered", "stop"), ("not_found", "stop"), ("forced", "length"), ("failed", "length")],
)
def test_finish_reason_says_stop_for_a_finished_answer(status: str, reason: str) -> None:
    from deepsearch.agent.result import ResearchResult, UsageReport

    usage = UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=1, by_tool={})
    result = ResearchResult(question="q", answer="a", status=status, usage=usage, elapsed_s=0.0)  # type: ignore[arg-type]
    assert finish_reason(result) == reason


def test_reasoning_effort_applies_its_whole_preset_and_the_request_knobs_win() -> None:
    low = run_settings(BASE, request(reasoning_effort="low"), max_budget=1_000_000).agent
    assert (low.max_steps, low.max_bad_attempts, low.reflect) == (10, 1, False)
    high = run_settings(BASE, request(reasoning_effort="high"), max_budget=1_000_000).agent
    assert (high.team_size, high.recheck, high.max_bad_attempts) == (2, True, 3)
    own = run_settings(
        BASE,
        request(reasoning_effort="high", team_size=3, no_direct_answer=True),
        max_budget=1_000_000,
    ).agent
    assert (own.team_size, own.direct_answer, own.recheck) == (3, False, True)
    plain = run_settings(BASE, request(), max_budget=1_000_000).agent
    assert (plain.team_size, plain.recheck) == (BASE.agent.team_size, BASE.agent.recheck)


@pytest.mark.parametrize("bad", [0, 9, "3", True])
def test_team_size_outside_its_range_is_a_request_error(bad: object) -> None:
    with pytest.raises(RequestError, match="team_size") as caught:
        chat = parse_request({"messages": [{"role": "user", "content": "q?"}], "team_size": bad})
        run_settings(BASE, chat, max_budget=1_000_000)  # the range: the key's, here
    assert caught.value.param == "team_size"


def test_a_requests_cost_limit_is_never_above_the_servers() -> None:
    capped = load_config(overrides={"agent.max_cost": 0.5}, environ={}).settings
    assert run_settings(capped, request(max_cost=2), 1_000_000).agent.max_cost == 0.5
    assert run_settings(capped, request(max_cost=0.1), 1_000_000).agent.max_cost == 0.1
    assert run_settings(capped, request(), 1_000_000).agent.max_cost == 0.5  # the default
    assert run_settings(BASE, request(max_cost=2), 1_000_000).agent.max_cost == 2
    assert run_settings(BASE, request(), 1_000_000).agent.max_cost is None
    with pytest.raises(RequestError, match="max_cost") as info:
        run_settings(capped, request(max_cost=-1), 1_000_000)
    assert info.value.param == "max_cost"
