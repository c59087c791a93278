"""The eval's pure parts: ids and shards, exact grading, the summary's figures, the
results file's resume rule, answer-key matching, the progress line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.errors import ConfigError
from deepsearch.evaluation.answer_keys import AnswerKeyReader, AnswerKeySearch, blocked
from deepsearch.evaluation.dataset import derived_id, load_items, parse_shard, shard
from deepsearch.evaluation.grading import exact_grade, llm_grade, normalize
from deepsearch.evaluation.progress import EvalProgress
from deepsearch.evaluation.results import ResultLine, ResultsFile, read_results, repair_tail
from deepsearch.evaluation.runner import cassette_dir
from deepsearch.evaluation.summary import percentile, summarize
from deepsearch.web.types import SearchQuery, SearchResult
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import scripted_client

SITES = ["huggingface.co", "github.com/openai/simple-evals"]


def test_csv_ids_are_derived_from_the_question_stably(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("metadata,problem,answer\nx,Who?,A\ny,  Who?  ,B\nz,Where?,C\n", "utf-8")
    with pytest.raises(ConfigError, match="duplicate id"):
        load_items(path)  # the same question twice, modulo spaces: the same id
    path.write_text("metadata,problem,answer\nx,Who?,A\nz,Where?,C\n", "utf-8")
    items = load_items(path)
    assert [i.id for i in items] == [derived_id("Who?"), derived_id("Where?")]
    assert items[0].id == derived_id(" Who? ") != items[1].id


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "question": "q?"}\n', "line 1: answer"),
        ('{"id": "a", "question": "q?", "answer": "x"}\nnot json\n', "line 2: invalid JSON"),
        ("", "no questions"),
    ],
)
def test_bad_question_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(text, "utf-8")
    with pytest.raises(ConfigError, match=message):
        load_items(path)


def test_a_csv_without_simpleqa_columns_is_refused(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("question,gold\nq,a\n", "utf-8")
    with pytest.raises(ConfigError, match="problem,answer"):
        load_items(tmp_path / "t.csv")


def test_shards_partition_by_id_whatever_the_file_order(tmp_path: Path) -> None:
    rows = [{"id": f"k{i}", "question": f"q{i}?", "answer": "a"} for i in range(7)]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    first = [[i.id for i in shard(load_items(path), k, 3)] for k in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)), "utf-8")
    second = [[i.id for i in shard(load_items(path), k, 3)] for k in range(3)]
    assert first == second == [["k0", "k3", "k6"], ["k1", "k4"], ["k2", "k5"]]
    assert parse_shard("1/3") == (1, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ConfigError):
            parse_shard(bad)


@pytest.mark.parametrize(
    ("answer", "status", "grade"),
    [
        ("The tower was finished in **1,889**.", "answered", "correct"),
        ("It is the Eiffel Tower.", "forced", "correct"),  # "the" dropped, case ignored
        ("Completed in 1890.", "answered", "incorrect"),
        ("Completed in 18890.", "answered", "incorrect"),  # whole words only
        ("1889", "not_found", "not_attempted"),
        ("", "answered", "not_attempted"),
        ('Maybe.\n\n[^1]: "built in 1889" — [a](http://x)', "answered", "incorrect"),
    ],
)
def test_exact_grade(answer: str, status: str, grade: str) -> None:
    golds = ("1889", "eiffel tower") if "Eiffel" in answer else ("1889",)
    assert exact_grade(answer, status, golds[-1], aliases=golds[:-1]) == grade


def test_normalize_strips_accents_articles_and_punctuation() -> None:
    assert normalize("The Café, an Übung!") == ["cafe", "ubung"]


async def test_the_llm_grader_asks_the_grader_tool_but_never_for_not_found() -> None:
    client, provider = scripted_client(lambda r: {"think": "", "grade": "incorrect"})
    grade = await llm_grade(client, "Q?", "It is B.", "answered", "A", ["Alpha"])
    assert grade == "incorrect"
    assert [c.tool for c in provider.calls] == ["grader"]
    assert "also accepted: Alpha" in provider.calls[0].messages[-1].content
    assert await llm_grade(client, "Q?", "not found", "not_found", "A", []) == "not_attempted"
    assert len(provider.calls) == 1


def _line(i: int, grade: str, tokens: int = 100, wall: float = 1.0) -> ResultLine:
    return ResultLine(id=f"x{i}", question="q", gold="g", grade=grade, tokens=tokens,  # type: ignore[arg-type]
                      llm_calls=i, elapsed_s=wall)  # fmt: skip


def test_summary_figures() -> None:
    grades = ["correct"] * 6 + ["incorrect"] * 2 + ["not_attempted"] * 2
    lines = [_line(i, g, tokens=(i + 1) * 10, wall=float(i + 1)) for i, g in enumerate(grades)]
    s = summarize(lines)
    assert (s.n, s.correct, s.incorrect, s.not_attempted) == (10, 6, 2, 2)
    assert s.accuracy == 0.6 and s.accuracy_given_attempted == 0.75
    assert s.f_score == round(2 * 0.6 * 0.75 / 1.35, 4)
    assert (s.tokens_median, s.tokens_p95, s.tokens_total) == (55, 100, 550)
    assert (s.wall_s_p50, s.wall_s_p95, s.llm_calls_median) == (5.0, 10.0, 4.5)
    assert summarize([]).f_score == 0.0 and percentile([], 0.5) == 0.0


def test_a_half_written_line_is_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    whole = json.dumps(_line(1, "correct").model_dump()) + "\n"
    path.write_text(whole + whole.replace("x1", "x2")[:30], "utf-8")
    results = ResultsFile(tmp_path)  # opening repairs the tail
    assert [line.id for line in results.done()] == ["x1"]
    results.append(_line(3, "incorrect"))
    assert [line.id for line in read_results(path)] == ["x1", "x3"]
    assert repair_tail(path) == 0


def test_answer_key_matching() -> None:
    assert blocked("https://huggingface.co/datasets/basicv8vc/SimpleQA", SITES)
    assert blocked("https://cdn.huggingface.co/x", SITES)
    assert blocked("https://github.com/openai/simple-evals/blob/main/simpleqa_eval.py", SITES)
    assert not blocked("https://github.com/openai/simple-evals-fork", SITES)
    assert not blocked("https://github.com/python/cpython", SITES)
    assert not blocked("https://nothuggingface.co/", SITES)


async def test_answer_key_search_and_reader_never_let_a_key_through() -> None:
    hits = [SearchResult(title="k", url="https://huggingface.co/d", snippet="A", provider="f"),
            SearchResult(title="w", url="https://en.wikipedia.org/w", snippet="B", provider="f")]  # fmt: skip
    search = AnswerKeySearch(FakeSearch(lambda q: hits), SITES)
    assert [r.url for r in await search.search(SearchQuery(q="q"))] == [
        "https://en.wikipedia.org/w"
    ]
    inner = FakeReader({"https://huggingface.co/d": "the answer"})
    page = await AnswerKeyReader(inner, SITES).read("https://huggingface.co/d")
    assert getattr(page, "kind", None) == "blocked"


def test_cassette_folders_are_safe_names(tmp_path: Path) -> None:
    assert cassette_dir(tmp_path, "c01") == tmp_path / "cassettes" / "c01"
    odd = cassette_dir(tmp_path, "../x/y")
    assert odd.parent == tmp_path / "cassettes" and "/" not in odd.name and ".." != odd.name
    assert cassette_dir(tmp_path, "a/b") != cassette_dir(tmp_path, "a_b")


def test_progress_shows_the_running_accuracy() -> None:
    progress = EvalProgress(total=4, quiet=True)
    progress.start([_line(1, "correct")])
    progress.advance(_line(2, "incorrect"))
    assert progress.describe() == "eval  accuracy 50% (1/2)"
