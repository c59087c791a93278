"""The budget's stop rules (llm/tracker.py) and the diary's one writer (state.note,
prompts/diary.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.agent import diary, wording
from deepsearch.agent.state import AgentState
from deepsearch.llm.base import Usage
from deepsearch.llm.tracker import BudgetStop, TokenTracker

SOURCE = Path(__file__).resolve().parents[2] / "deepsearch"


def _spend(tracker: TokenTracker, tokens: int) -> None:
    with tracker.measure_step():
        tracker.record("agent", Usage(prompt_tokens=tokens, completion_tokens=0))


def test_the_budget_stops_before_a_step_that_would_cross_85_percent() -> None:
    tracker = TokenTracker(1000)  # the line: 850
    _spend(tracker, 400)
    tracker.check_room_for_step()  # 400 + a step like the last (400) = 800: fits
    _spend(tracker, 300)
    assert tracker.last_step_cost == 300
    with pytest.raises(BudgetStop, match="85% of the 1k-token budget used"):
        tracker.check_room_for_step()  # 700 + 300 > 850, though 700 is under the line


def test_alternating_step_costs_are_predicted_by_the_costliest_recent_step() -> None:
    """A search step then a longer visit step: the cheap last step alone would let
    the next (long) one cross the line (seen under load in CI: 51289 > 51000)."""
    tracker = TokenTracker(10_000)  # the line: 8500
    for cost in (1900, 1500, 1900, 1500):  # 6800 spent, the last step the cheap one
        tracker.check_room_for_step()
        _spend(tracker, cost)
    assert tracker.last_step_cost == 1500
    with pytest.raises(BudgetStop):  # 6800 + 1500 fits, 6800 + 1900 does not
        tracker.check_room_for_step()


def test_the_budget_stops_at_the_line_even_after_a_free_step() -> None:
    tracker = TokenTracker(1000)
    tracker.record("agent", Usage(prompt_tokens=850, completion_tokens=0))
    _spend(tracker, 0)
    with pytest.raises(BudgetStop):
        tracker.check_room_for_step()


def test_a_step_that_raises_is_still_measured() -> None:
    tracker = TokenTracker(1000)
    with pytest.raises(RuntimeError), tracker.measure_step():
        tracker.record("agent", Usage(prompt_tokens=123, completion_tokens=7))
        raise RuntimeError("the step failed after spending")
    assert tracker.last_step_cost == 130


def test_beast_mode_keeps_half_of_what_is_left_for_its_answer() -> None:
    tracker = TokenTracker(10_000)
    tracker.record("agent", Usage(prompt_tokens=6000, completion_tokens=0))
    assert tracker.beast_room(800) == 4000 // 2 - 800


def _dummy(template: str) -> dict[str, object]:
    return {name: f"<{name}>" for name in wording.variables(template)}


@pytest.mark.parametrize("kind", sorted(wording.templates()["lines"]))
def test_every_diary_line_renders_with_its_variables(kind: str) -> None:
    template = wording.templates()["lines"][kind]
    assert template.startswith("Step {step}: "), "every line says which step it was"
    st = AgentState.start("Q?")
    st.step = 7
    values = {k: v for k, v in _dummy(template).items() if k != "step"}
    st.note(kind, **values)
    assert st.diary[-1].startswith("Step 7: ")
    assert all(str(v) in st.diary[-1] for v in values.values())
    assert "{" not in st.diary[-1]


@pytest.mark.parametrize("kind", sorted(wording.templates()["parts"]))
def test_every_diary_part_renders_with_its_variables(kind: str) -> None:
    template = wording.templates()["parts"][kind]
    values = _dummy(template)
    text = diary.part(kind, **values)
    assert all(str(v) in text for v in values.values()) and "{" not in text


@pytest.mark.parametrize("kind", sorted(wording.templates()["questions"]))
def test_every_knowledge_question_renders_with_its_variables(kind: str) -> None:
    template = wording.templates()["questions"][kind]
    values = _dummy(template)
    text = wording.knowledge_question(kind, **values)
    assert text.endswith("?") or "Answer: " in text, "a knowledge item's Q: is a question"
    assert all(str(v) in text for v in values.values()) and "{" not in text
    with pytest.raises(KeyError):
        wording.knowledge_question(kind, **values, extra="x")


def test_a_knowledge_question_cuts_a_long_answer_where_its_template_says() -> None:
    text = wording.knowledge_question("rejected_answer", question="Q?", answer="x" * 2000)
    assert text.endswith("Answer: " + "x" * 500)


@pytest.mark.parametrize("table", ["lines", "parts", "questions"])
def test_every_template_is_used_by_the_code(table: str) -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in SOURCE.rglob("*.py"))
    unused = [kind for kind in wording.templates()[table] if f'"{kind}"' not in code]
    assert not unused, f"diary {table} no code writes: {unused}"


def test_an_unknown_kind_or_a_wrong_variable_is_a_key_error() -> None:
    st = AgentState.start("Q?")
    with pytest.raises(KeyError, match="no diary line named 'surprise'"):
        st.note("surprise")
    with pytest.raises(KeyError, match=r"missing \['reason'\]"):
        st.note("coding_refused")
    with pytest.raises(KeyError, match=r"unknown \['extra'\]"):
        st.note("empty_answer", extra="x")
    with pytest.raises(KeyError):
        diary.part("surprise")
    assert st.diary == []  # nothing half-written


def test_long_values_are_cut_where_the_template_says() -> None:
    st = AgentState.start("Q?")
    st.step = 2
    st.note("unusable_reply", error="x" * 500)
    assert st.diary == [f"Step 2: my reply could not be understood ({'x' * 160})."]
