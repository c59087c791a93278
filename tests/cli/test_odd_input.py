"""Odd input (issue 36, item 5): a corpus file whose name is not UTF-8 is skipped and
counted, and the corpus answers; a question that is no UTF-8 text (an argument in
Latin-1, which Python hands over as surrogate escapes) or binary stdin is one
`error:` line, exit 2, before any call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deepsearch.web.search.local import LocalCorpus
from deepsearch.web.types import SearchQuery
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import ANSWER_STEP, FIXTURE, VISIT, cli_env, router, slug
from tests.fakes.openai_server import FakeOpenAIServer

LATIN1_NAME = b"caf\xe9.md"  # "café.md" in Latin-1: no UTF-8 file name


def _bad_named_file(folder: Path, text: bytes) -> None:
    with open(os.path.join(os.fsencode(folder), LATIN1_NAME), "wb") as handle:
        handle.write(text)


def test_a_corpus_file_with_a_non_utf8_name_is_skipped_and_counted(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "magma.md").write_text("# Magma\n\nMagma cools into basalt.", "utf-8")
    _bad_named_file(notes, b"# Lava\n\nLava is molten rock.")
    corpus = LocalCorpus(notes, index_root=tmp_path / "index")
    assert corpus.document_count() == 1
    assert corpus.bad_names == 1
    assert corpus.last_build is not None
    assert "1 name not in UTF-8 skipped" in corpus.last_build.summary()
    assert [r.title for r in corpus.search(SearchQuery(q="basalt magma"))] == ["Magma"]


def test_a_corpus_with_a_non_utf8_name_answers(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for title, text in FIXTURE["paragraphs"].items():
        (corpus / f"{slug(title)}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    _bad_named_file(corpus, b"# Stray\n\nA note saved by an old editor.")
    steps = [
        {"think": "", "action": {"search": {"queries": ["Leland North Carolina films"]}}},
        VISIT,
        ANSWER_STEP,
    ]
    with FakeOpenAIServer(router(steps)) as llm:
        flags = ["--json", "--llm-provider", "openai", "--corpus", str(corpus), "--no-cache"]
        done = run_cli_in_process("Who directed it?", *flags, env=cli_env(llm, tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "answered"


@pytest.mark.parametrize(
    ("argv", "stdin", "said"),
    [
        (["Qui a \udce9crit ce livre ?"], "", "the question is not UTF-8 text"),
        (["-"], "binary\x00\x01\x02data", "the question on stdin is binary data"),
    ],
    ids=["latin1-argument", "binary-stdin"],
)
def test_a_question_that_is_no_text_is_one_line_exit_2_before_any_call(
    argv: list[str], stdin: str, said: str, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([])) as llm:
        done = run_cli_in_process(
            *argv, "--llm-provider", "openai", stdin=stdin, env=cli_env(llm, tmp_path)
        )
        assert not llm.requests, "nothing was asked"
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and not done.stdout
