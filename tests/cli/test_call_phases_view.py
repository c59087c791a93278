"""The spinner names what an LLM call waits for (issue 36, item 10): "no first token yet
after 40 s (limit 600 s)" while the server has sent nothing, "rate limited, retrying in
4 s" (counting down) during a 429's pause, and once tokens come, no claim that none did.

Through the real wire (a MockTransport, the run's FakeClock): the wire tells the call's
watch (llm/call_watch.py), the run's bridge (agent/stalls.call_watch) turns each phase
into an LlmPhase event, and the text is the spinner's as rich draws it."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import httpx
from rich.console import Console
from rich.live_render import LiveRender
from rich.spinner import Spinner

from deepsearch.agent.events import LlmPhase, StepStarted
from deepsearch.agent.stalls import call_watch
from deepsearch.frontend.live import LiveView, _Ticker
from deepsearch.llm.call_watch import watching
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from deepsearch.runtime import llm_tap
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.sse import completion_chunks, sse
from tests.llm.helpers import ASK
from tests.llm.test_openai_wire import PAYLOAD


def spinner_line(view: LiveView) -> str:
    """The spinner's line as rich's Status draws it (its frame, then the text)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=True, color_system=None)
    console.print(LiveRender(Spinner("dots", text=_Ticker(view))), end="")
    return buffer.getvalue().splitlines()[0]


def phase_of(view: LiveView) -> str:
    """The spinner line without its frame: `step 2: <what is in flight> <clock> <cost>`."""
    return spinner_line(view).split(" ", 1)[1]


def _view(clock: FakeClock) -> LiveView:
    console = Console(file=io.StringIO(), width=160, force_terminal=True, color_system=None)
    view = LiveView(console=console, clock=clock)
    view._spin = lambda: None  # type: ignore[method-assign]  # no spinner thread in tests
    view(StepStarted(step=2, question="q", allowed=["search"]))
    return view


def _client(clock: FakeClock, view: LiveView, handle: httpx.MockTransport) -> LLMClient:
    provider = OpenAIProvider(
        api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=2, timeout_s=900,
        first_token_s=600, clock=clock, http_client=httpx.AsyncClient(transport=handle),
    )  # fmt: skip
    tracker = TokenTracker(100_000)
    return LLMClient(
        provider=provider, provider_name="openai", settings=offline_settings(),
        tracker=tracker, trace=llm_tap(view, tracker, None),
    )  # fmt: skip


async def test_the_spinner_says_what_the_call_waits_for_in_each_phase() -> None:
    clock = FakeClock()
    view = _view(clock)
    seen: dict[str, str] = {}
    requests = 0

    async def body() -> AsyncIterator[bytes]:
        chunks = list(sse(completion_chunks(PAYLOAD, include_usage=True)))
        yield chunks[0]
        clock.advance(25)  # tokens are coming (the call is 65 s old now)
        seen["generating"] = phase_of(view)
        for chunk in chunks[1:]:
            yield chunk

    async def handle(request: httpx.Request) -> httpx.Response:
        nonlocal requests
        requests += 1
        if requests == 1:
            clock.advance(10)
            seen["young"] = phase_of(view)  # sent 10 s ago: nothing to say yet
            busy = json.dumps({"error": {"message": "slow down"}}).encode()
            return httpx.Response(429, content=busy, headers={"retry-after": "4"})
        clock.advance(26)  # the retried request: 40 s into the call, no first token
        seen["waiting"] = phase_of(view)
        return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    client = _client(clock, view, httpx.MockTransport(handle))

    async def pause(seconds: float) -> None:
        seen["pause"] = phase_of(view)
        clock.advance(1.5)
        seen["pause later"] = phase_of(view)
        clock.advance(seconds - 1.5)

    client.provider.wire.sleep = pause  # type: ignore[attr-defined]
    with watching(call_watch(clock, view)):
        assert (await client.generate_text("agent", "s", ASK)).text == "Paris it is."
    await client.aclose()
    assert seen == {
        "young": "step 2: choosing the next step 0:10 $0",  # nothing to say yet
        "pause": "step 2: choosing the next step — rate limited, retrying in 4 s 0:10 $0",
        "pause later": "step 2: choosing the next step — rate limited, retrying in 3 s 0:11 $0",
        "waiting": (
            "step 2: choosing the next step — no first token yet after 40 s (limit 600 s) 0:40 $0"
        ),
        "generating": "step 2: choosing the next step — writing its reply (65 s) 1:05 $0",
    }
    assert phase_of(view).startswith("step 2: working 1:05")  # the call is over


def test_other_retry_pauses_say_their_cause() -> None:
    clock = FakeClock()
    view = _view(clock)
    from deepsearch.agent.events import Activity

    view(Activity(what="llm", delta=1, tool="agent"))
    view(LlmPhase(tool="agent", phase="retrying", status=503, wait_s=2.0))
    words = "step 2: choosing the next step — "
    assert phase_of(view) == words + "the server answered HTTP 503, retrying in 2 s 0:00"
    view(LlmPhase(tool="agent", phase="retrying", status=None, wait_s=0.5))
    assert phase_of(view) == words + "no answer from the server, retrying in 1 s 0:00"
    clock.advance(3)  # past the pause, the next request not yet told: never below 0
    assert phase_of(view) == words + "no answer from the server, retrying in 0 s 0:03"


def test_the_wait_is_said_from_15_s_and_a_new_call_starts_without_the_last_ones_phase() -> None:
    """15 s, as docs/output.md prints it; a call that has ended leaves no phase behind."""
    from deepsearch.agent.events import Activity

    clock = FakeClock()
    view = _view(clock)
    words = "step 2: choosing the next step"
    view(Activity(what="llm", delta=1, tool="agent"))
    view(LlmPhase(tool="agent", phase="waiting"))  # no limit told: none said
    clock.advance(14.9)
    assert phase_of(view) == words + " 0:14"
    clock.advance(0.1)
    assert phase_of(view) == words + " — no first token yet after 15 s 0:15"
    view(LlmPhase(tool="agent", phase="generating"))
    view(Activity(what="llm", delta=-1, tool="agent"))
    view(Activity(what="llm", delta=1, tool="agent"))  # the next call, nothing told yet
    clock.advance(40)
    assert phase_of(view) == words + " — no reply yet after 40 s 0:55"
