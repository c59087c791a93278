"""The pocket benchmark: 20 questions replayed from their committed cassettes through
the real CLI, with the network off. Re-record with `python -m tests.pocket.record`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pocket.pocket import CASSETTES, RESEARCH_FLAGS, Question, mentions_gold, questions

QUESTIONS = questions()
RERECORD = "(if the change is meant, re-record: .venv/bin/python -m tests.pocket.record)"
DEEPSEARCH = Path(sys.executable).parent / "deepsearch"
GUARD = """import socket
def _refuse(*args, **kwargs):
    raise OSError("network is off (pocket replay guard)")
socket.socket.connect = socket.socket.connect_ex = _refuse
socket.getaddrinfo = socket.create_connection = _refuse
try:  # the guard tries itself once, in the very process it guards (stderr shows it)
    socket.create_connection(("127.0.0.1", 9))
except OSError as refused:
    import sys
    print(f"guard on: {refused}", file=sys.stderr)
"""


def recorded(question: Question) -> dict:
    return json.loads((CASSETTES / question.id / "result.json").read_text("utf-8"))


def as_recorded(value: object, recorded_value: object) -> object:
    """`value` with only the keys the recording has, at every depth: keys added to the
    result since (usage.cost_usd, ...: additions keep schema_version) are not compared."""
    if isinstance(value, dict) and isinstance(recorded_value, dict):
        return {
            k: as_recorded(v, recorded_value[k]) for k, v in value.items() if k in recorded_value
        }
    return value


def test_the_pocket_set_is_twenty_questions_with_small_cassettes() -> None:
    assert len(QUESTIONS) == 20 and len({q.id for q in QUESTIONS}) == 20
    assert sorted(p.name for p in CASSETTES.iterdir()) == sorted(q.id for q in QUESTIONS)
    size = sum(p.stat().st_size for p in CASSETTES.rglob("*") if p.is_file())
    assert size < 1_000_000, f"cassettes take {size} bytes"
    text = "".join(p.read_text("utf-8") for p in CASSETTES.rglob("*.json*"))
    assert "sk-pocket-fake-key" not in text and "/tmp/" not in text


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize("question", QUESTIONS, ids=[q.id for q in QUESTIONS])
def test_each_question_replays_its_recorded_answer(
    question: Question, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepsearch.cli import run

    capsys.readouterr()
    code = run([question.question, *RESEARCH_FLAGS, "--replay", str(CASSETTES / question.id)])
    out = json.loads(capsys.readouterr().out)
    want = recorded(question)
    # A miss after a deliberate prompt/schema change: `python -m tests.pocket.record`.
    assert (code, out["status"]) == (0, want["status"]), f"{out.get('error')} {RERECORD}"
    assert out["answer"] == want["answer"]
    assert out["references"] == want["references"]
    assert as_recorded(out["usage"], want["usage"]) == want["usage"]
    assert mentions_gold(out["answer"], question), (question.answer, out["answer"])


def test_golden_path_in_a_subprocess_with_sockets_blocked(tmp_path: Path) -> None:
    """The installed command, a fresh interpreter whose every socket connect and name
    lookup raises (a sitecustomize guard), no key at all: the same JSON."""
    (tmp_path / "sitecustomize.py").write_text(GUARD, "utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and "BASE_URL" not in k
    }
    env.update(PYTHONPATH=str(tmp_path), HOME=str(tmp_path), NO_COLOR="1")
    question = QUESTIONS[0]
    done = subprocess.run(
        [
            str(DEEPSEARCH),
            question.question,
            *RESEARCH_FLAGS,
            "--replay",
            str(CASSETTES / question.id),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "guard on: network is off" in done.stderr, "the guard is not active in the command"
    out, want = json.loads(done.stdout), recorded(question)
    out = as_recorded(out, want)  # type: ignore[assignment]
    assert {k: v for k, v in out.items() if k != "elapsed_s"} == {
        k: v for k, v in want.items() if k != "elapsed_s"
    }
