"""Outside mutation audit (issue 37): behaviours of the streaming call, its limits and
the structured-output ladder that no other test pinned. Numbers are the ones the docs
print (docs/reliability.md, README.md)."""

from __future__ import annotations

from deepsearch.llm.call_limits import CallLimits
from deepsearch.llm.streaming import CallTimedOut, StallGuard, StreamedReply


def test_a_chunk_after_the_finish_keeps_the_finish_reason() -> None:
    """Servers send a last chunk (usage, an empty delta) after `finish_reason`: the
    reply is still complete."""
    reply = StreamedReply()
    reply.add({"choices": [{"index": 0, "delta": {"content": "done"}}]})
    reply.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    reply.add({"choices": [{"index": 0, "delta": {}}], "usage": {"total_tokens": 3}})
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == "done"


def test_a_stalled_server_gets_at_most_30_s_to_its_first_token_never_more() -> None:
    """docs/reliability.md: after a first-token timeout, later calls get at most 30 s;
    an allowance already shorter stays as it was."""
    guard = StallGuard()
    guard.saw(CallTimedOut("first token", 600))
    assert guard.limits(CallLimits(600.0, 900.0)) == CallLimits(30.0, 900.0)
    assert guard.limits(CallLimits(10.0, 900.0)) == CallLimits(10.0, 900.0)


def test_a_rate_limit_is_no_stall_and_an_answer_ends_one() -> None:
    """A first-token timeout while the server kept answering 429 is a rate limit, not a
    hung server; a stalled server that answers again gets its whole allowance back."""
    limits = CallLimits(600.0, 900.0)
    limited = CallTimedOut("first token", 600)
    limited.answered = 429
    guard = StallGuard()
    guard.saw(limited)
    assert guard.limits(limits) == limits
    guard.saw(CallTimedOut("first token", 600))
    assert guard.limits(limits).first_token_s == 30.0
    guard.saw(None)
    assert guard.limits(limits) == limits
