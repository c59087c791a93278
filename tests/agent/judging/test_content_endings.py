"""Honest endings (issue 17, item 5): an answer accepted without a judge must say
something. A direct answer at step 1 stands unjudged only when it has content and the
model does not mark it uncertain; a Beast Mode answer that says nothing (`},`, "I don't
know") is a not-found (exit 4), never a forced answer."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.judging.content import answers_something, is_refusal
from deepsearch.agent.loop import ResearchRun
from deepsearch.text import has_content
from tests.agent.helpers import make_deps, options, router, scripted

Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look", "action": {"search": {"queries": ["eiffel tower completed"]}}}
VISIT = {"think": "read", "action": {"visit": {"url_indices": [1, 2]}}}
ANSWER = {"think": "done", "action": {"answer": {"answer": "It was completed in 1889."}}}


def answer(text: str, **marks: bool) -> dict[str, Any]:
    return {"think": "", "action": {"answer": {"answer": text, **marks}}}


def checks_asked(provider: Any) -> int:
    """Evaluator calls that judged an answer (not the question's classification)."""
    return sum(
        1
        for c in provider.calls_for("evaluator")
        if "needs_definitive" not in (c.json_schema or {}).get("properties", {})
    )


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("},", False),
        ("...", False),
        ("null", False),
        ('{"answer": ""}', False),
        ("**", False),
        ("1889", True),
        ("Paris", True),
        ("東京", True),
        ("서울", True),
        ('{"answer": "Paris"}', True),
    ],
)
def test_content_is_a_letter_or_digit_of_any_script_outside_json_syntax(
    text: str, content: bool
) -> None:
    assert has_content(text) is content


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("I don't know.", True),
        ("I’m not sure.", True),
        ("**Unknown**", True),
        ("N/A", True),
        ("I cannot determine who directed the film from the information provided.", True),
        ("Ich weiß nicht.", True),
        ("answer", True),  # the output format echoed (Gemma 3 270M on llama-server)
        ("The Answer (a 1996 film)", False),
        ("我不知道", True),
        ("无法确定该电影的导演。", True),
        ("Unknown Pleasures is the debut album of Joy Division.", False),
        ("I don't know the day, but it was completed in 1889.", False),
        ("It was completed in 1889.", False),
        ("1889年に完成しました。", False),
    ],
)
def test_refusals_are_recognised_from_the_data_file(text: str, refusal: bool) -> None:
    assert is_refusal(text) is refusal
    assert answers_something(text) is not refusal


@pytest.mark.parametrize(
    "reply",
    [
        answer("I don't know."),
        answer("I cannot determine the completion date."),
        answer("},"),
        answer("我不知道"),
        answer("It was probably completed in 1889.", uncertain=True),
    ],
    ids=["dont-know", "cannot-determine", "json-fragment", "cjk-dont-know", "uncertain"],
)
async def test_a_step_one_answer_that_says_nothing_or_hedges_goes_to_the_evaluator(
    reply: dict[str, Any],
) -> None:
    deps, provider = make_deps(
        router([reply, SEARCH, VISIT, ANSWER, ANSWER], strict_pass=False)
    )  # Beast: 5th
    result = await ResearchRun(Q, deps, options(max_steps=4)).run()
    assert result.steps[0].detail != "answered directly at step 1"
    assert checks_asked(provider) >= 1, "judged like any later answer"
    assert result.confidence_basis is not None and result.confidence_basis.checks != "direct"


@pytest.mark.parametrize("said", ["I don't know.", "},"])
async def test_an_answer_that_says_nothing_is_never_judged_nor_accepted(said: str) -> None:
    """Found in review: with a lenient judge (a weak local model passing everything)
    "I don't know" at a later step was accepted as answered."""
    deps, provider = make_deps(
        router([SEARCH, VISIT, answer(said), answer(said)])
    )  # every check passes
    result = await ResearchRun(Q, deps, options(max_steps=3, direct_answer=False)).run()
    assert result.steps[2].action == "answer" and "accepted" not in result.steps[2].detail
    assert checks_asked(provider) == 0  # not even asked: a lenient judge cannot pass it
    assert result.status == "not_found" and result.exit_code == 4


async def test_a_step_one_answer_with_content_in_any_script_stands_unjudged() -> None:
    script = scripted([answer("1889年に完成しました。")])  # no check queued
    deps, provider = make_deps(script)
    result = await ResearchRun("エッフェル塔はいつ完成しましたか?", deps, options()).run()
    script.assert_complete()
    assert result.status == "answered" and checks_asked(provider) == 0


@pytest.mark.parametrize("said", ["},", "I don't know.", "…"])
async def test_a_beast_mode_answer_that_says_nothing_is_not_found(said: str) -> None:
    script = scripted([SEARCH, VISIT], beast=[answer(said)])
    deps, _ = make_deps(script)
    result = await ResearchRun(Q, deps, options(max_steps=2)).run()
    script.assert_complete()
    assert result.status == "not_found" and result.exit_code == 4
    assert result.answer.startswith("**Not found.** Looked for:")
    assert "}," not in result.answer


async def test_a_beast_mode_answer_that_says_nothing_keeps_a_candidate_that_does() -> None:
    deps, _ = make_deps(router([SEARCH, VISIT, ANSWER, answer("},")], strict_pass=False))
    result = await ResearchRun(Q, deps, options(max_steps=3, direct_answer=False)).run()
    assert result.status == "forced" and "1889" in result.answer


async def test_a_rejected_candidate_that_says_nothing_is_never_reported_as_forced() -> None:
    idk = answer("I don't know.")
    deps, _ = make_deps(router([SEARCH, VISIT, idk, answer("},")], strict_pass=False))
    result = await ResearchRun(Q, deps, options(max_steps=3, direct_answer=False)).run()
    assert result.status == "not_found" and result.exit_code == 4


async def test_a_run_cut_short_reports_no_candidate_that_says_nothing() -> None:
    """Beast Mode never answers (its call would overrun the budget): the "I don't
    know" given before is not reported as a forced answer."""
    from deepsearch.errors import BudgetExceeded
    from deepsearch.llm.base import CompletionRequest

    idk = answer("I don't know.")
    deps, provider = make_deps(router([SEARCH, VISIT, idk], strict_pass=False))
    complete = provider.complete

    async def no_room_for_beast(request: CompletionRequest) -> Any:
        if request.tool == "agent_beast":
            raise BudgetExceeded(budget=1, used=1, needed=1)
        return await complete(request)

    provider.complete = no_room_for_beast  # type: ignore[method-assign]
    run = ResearchRun(Q, deps, options(max_steps=3, direct_answer=False))
    result = await run.run()
    assert not run.state.candidate_answer  # a refusal is never even a candidate
    assert result.status == "not_found" and result.exit_code == 4


async def test_a_step_one_answer_that_copies_the_prompt_goes_to_the_evaluator() -> None:
    """Seen against a weak local model: it answered with its own instructions."""
    from deepsearch.llm.base import CompletionRequest

    base = router([SEARCH, VISIT, ANSWER, ANSWER], strict_pass=False)  # the last: Beast Mode's
    first = True

    def reply(request: CompletionRequest) -> Any:
        nonlocal first
        if request.tool == "agent" and first:
            first = False
            words = request.system.split()
            return answer(" ".join(words[40:80]))  # a stretch of the instructions
        return base(request)

    deps, provider = make_deps(reply)
    result = await ResearchRun(Q, deps, options(max_steps=4)).run()
    assert result.steps[0].detail != "answered directly at step 1"
    assert checks_asked(provider) >= 1


def test_copying_needs_a_long_run_of_the_prompts_words() -> None:
    from deepsearch.agent.judging.content import ECHO_WORDS, copies

    prompt = "You are a research agent. Answer the question from the knowledge below, citing it."
    assert copies("Answer the question from the knowledge below, citing it.", prompt, words=8)
    assert not copies("The tower was completed in 1889.", prompt)
    assert ECHO_WORDS >= 8  # a short common phrase ("the question") is no copy


def _beast_says(pick: Any) -> Any:
    """Search and visit, then Beast Mode answers `pick(its system prompt)`."""
    from deepsearch.llm.base import CompletionRequest

    base = router([SEARCH, VISIT])

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent_beast":
            return answer(pick(request.system))
        return base(request)

    return reply


async def test_a_beast_mode_answer_that_copies_its_instructions_is_not_found() -> None:
    """Seen against llama-server with Gemma 3 270M: the forced answer was "search: run
    up to 5 web queries at once. Use short, specific ..." (the prompt's own text)."""
    from deepsearch.agent.judging.content import instructions_of

    def instructions(system: str) -> str:
        words = instructions_of(system).split()
        return " ".join(words[20:60])

    deps, _ = make_deps(_beast_says(instructions))
    result = await ResearchRun(Q, deps, options(max_steps=2)).run()
    assert result.status == "not_found" and result.exit_code == 4


async def test_a_beast_mode_answer_may_quote_what_was_gathered_at_length() -> None:
    """Only the instructions are off limits: a long quote of a page is an answer."""
    import re

    def quote(system: str) -> str:
        knowledge = re.search(r"<knowledge>(.*?)</knowledge>", system, re.S)
        assert knowledge is not None
        return "The page says: " + " ".join(knowledge.group(1).split()[:40])

    deps, _ = make_deps(_beast_says(quote))
    result = await ResearchRun(Q, deps, options(max_steps=2)).run()
    assert result.status == "forced" and result.exit_code == 3
