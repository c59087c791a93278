"""The run history through the real command line, over loopback only (docs/history.md):
a follow-up (`-c`) answers from what the earlier run read without fetching it again
(the loopback web counts every request; the page cache is off), made standalone by
one LLM call first; `history` and `show` give back exactly what was printed; a
history file that cannot be written costs one warning line, never the run."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    VISIT,
    cli_args,
    cli_env,
    page_html,
    router,
    run_in_process,
    schema_name,
    search,  # noqa: F401 - fixture
    web,  # noqa: F401 - fixture
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, _text

FOLLOW_UP = "and who wrote it?"
STANDALONE = "Who wrote the 1986 film shot in Leland, North Carolina?"
SEARCH_AGAIN = {
    "think": "check the writer",
    "action": {"search": {"queries": ["Maximum Overdrive 1986 writer"]}},
}
WRITER = (
    "Maximum Overdrive is a 1986 American science fiction horror comedy film written "
    "and directed by Stephen King. So Stephen King wrote it."
)
ANSWER_WRITER = {"think": "known from the pages read", "action": {"answer": {"answer": WRITER}}}


NEW_PAGE = "/wiki/stephen-king"
KING = "Stephen King is an American author of horror, supernatural fiction and fantasy novels."


def _results(run: dict[str, Any]) -> list[dict[str, str]]:
    return [{"title": u.rsplit("/", 1)[-1], "url": u, "content": "seen"} for u in run["read_urls"]]


def with_follow_up(route: Any, rewritten: str = STANDALONE) -> Any:
    """`route`, plus the follow-up rewrite's reply."""

    def handler(body: dict[str, Any]) -> Any:
        if schema_name(body) == "FollowUpReply":
            return {"think": "it = the film", "question": rewritten}
        return route(body)

    return handler


def page_fetches(site: LoopbackServer) -> list[str]:
    return [path for path, _ in site.requests if path.startswith("/wiki/")]


def cli(*args: str) -> Outcome:
    """`history` and `show`: no provider, no key, no network."""
    return run_cli_in_process(*args)


def test_a_follow_up_starts_from_the_earlier_run_and_fetches_nothing_again(
    web: LoopbackServer,  # noqa: F811
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        first = run_in_process(llm, search, "--quiet", tmp=tmp_path)
    assert first.returncode == 0, first.stderr
    one = json.loads(first.stdout)
    read_first = page_fetches(web)
    assert len(read_first) == 4 and one["run_id"] and one["continued_from"] is None

    # The follow-up's search finds the same four pages again, and one new page.
    web.routes[NEW_PAGE] = _text(page_html("Stephen King", KING), "text/html; charset=utf-8")
    new = {"title": "Stephen King", "url": web.url(NEW_PAGE), "content": KING}
    search.always("searxng", 200, {"results": [new, *_results(one)]})
    script = [SEARCH_AGAIN, {"think": "read it", "action": {"visit": {"url_indices": [1]}}},
              ANSWER_WRITER]  # fmt: skip
    with FakeOpenAIServer(with_follow_up(router(script))) as llm:
        second = run_in_process_question(llm, search, FOLLOW_UP, "-c", "--quiet", tmp=tmp_path)
        rewrite = [r.body for r in llm.chat_requests if schema_name(r.body) == "FollowUpReply"]
        steps = [r.body for r in llm.chat_requests if schema_name(r.body) == "AgentStep"]
    assert second.returncode == 0, second.stdout
    two = json.loads(second.stdout)
    # Only the new page was fetched: nothing the first run read (the cache is off).
    assert page_fetches(web) == [*read_first, NEW_PAGE]
    assert two["continued_from"] == one["run_id"] and two["run_id"] != one["run_id"]
    assert two["question"] == STANDALONE
    assert "follow_up" in two["usage"]["by_tool"]  # the rewrite is paid from the budget
    (asked,) = rewrite
    prompt = json.dumps(asked["messages"])
    assert QUESTION in prompt and FOLLOW_UP in prompt and "Stephen King" in prompt
    # The first step's prompt already holds the pages the first run read.
    assert "written and directed by Stephen King" in json.dumps(steps[0]["messages"])
    cited = {r["url"] for r in two["references"]}
    assert cited & set(one["read_urls"]), "a page read by the first run is cited"

    listed = json.loads(cli("history", "--json").stdout)
    assert [r["run_id"] for r in listed] == [two["run_id"], one["run_id"]]
    assert listed[0]["question"] == STANDALONE and listed[0]["asked"] == FOLLOW_UP
    assert {"run_id", "question", "status", "started_at"} <= set(listed[1])
    shown = cli("show", one["run_id"], "--json")
    assert shown.returncode == 0 and shown.stdout == first.stdout
    text = cli("history").stdout.splitlines()
    assert [line.split()[0] for line in text] == [two["run_id"], one["run_id"]]
    assert len(json.loads(cli("history", "--json", "-n", "1").stdout)) == 1
    grep = json.loads(cli("history", "--json", "--grep", "wrote").stdout)
    assert [r["run_id"] for r in grep] == [two["run_id"]]


def run_in_process_question(
    llm: FakeOpenAIServer, engines: FakeSearchServers, question: str, *extra: str, tmp: Path
) -> Outcome:
    return run_cli_in_process(question, *cli_args(engines), *extra, env=cli_env(llm, tmp))


def test_show_prints_the_answer_as_it_was_printed(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        args = [a for a in cli_args(search) if a != "--json"]
        plain = run_cli_in_process(QUESTION, *args, "--quiet", env=cli_env(llm, tmp_path))
        (run_id,) = [r["run_id"] for r in json.loads(cli("history", "--json").stdout)]
        shown = cli("show", run_id[:15])  # a unique prefix will do
    assert plain.returncode == shown.returncode == 0
    assert shown.stdout == plain.stdout and "Stephen King" in shown.stdout
    assert shown.stderr.startswith("answered in 3 steps")


def test_continue_without_an_earlier_run_is_a_usage_error(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test-placeholder-0000"}
    for args in (["-c", "and then?"], ["--continue", "20261204-224530-3fa9c1", "and then?"]):
        done = run_cli_in_process(*args, env=env)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: no ")


def test_history_and_show_are_commands_never_questions(tmp_path: Path) -> None:
    empty = run_cli_in_process("history", env={"HOME": str(tmp_path)})
    assert empty.returncode == 0 and empty.stdout == "" and "no runs kept yet" in empty.stderr
    assert run_cli_in_process("history", "--json").stdout == "[]\n"
    missing = run_cli_in_process("show", "nosuchrun")
    assert missing.returncode == 2 and "no run 'nosuchrun'" in missing.stderr
    words = run_cli_in_process("history", "of", "Rome")
    assert words.returncode == 2 and 'deepsearch "history of Rome?"' in words.stderr


@pytest.mark.parametrize("damage", ["corrupt", "read-only"])
def test_a_history_that_cannot_be_written_costs_one_warning_not_the_run(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    db = data / "history.db"
    if damage == "corrupt":
        db.write_bytes(b"this is no database, only bytes\n" * 64)
        cause = "file is not a database"
    else:
        sqlite3.connect(db).close()  # an empty, valid file
        _read_only(monkeypatch)
        cause = "readonly database"
    monkeypatch.setenv("DEEPSEARCH_DATA_DIR", str(data))
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = run_in_process(llm, search, "--quiet", tmp=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "answered"
    (warning,) = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert str(db) in warning and cause in warning


def _read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file as a read-only one opens (tests run as root too, where chmod does not
    stop a write): SQLite's read-only mode, which fails every write the same way."""
    from deepsearch.history import store

    real = sqlite3.connect

    def read_only(path: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(f"file:{path}?mode=ro", uri=True, **kwargs)

    monkeypatch.setattr(store.sqlite3, "connect", read_only)


def test_no_history_keeps_nothing(
    search: FakeSearchServers,  # noqa: F811
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        done = run_in_process(llm, search, "--quiet", "--no-history", tmp=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["run_id"]
    assert cli("history", "--json").stdout == "[]\n"
    assert not (Path(os.environ["DEEPSEARCH_DATA_DIR"]) / "history.db").exists()


def test_every_command_word_is_routed_as_a_command_and_registered() -> None:
    """A command word (history, show, and any command added later) never reaches the
    research run: routing, the root help and registration all come from one list."""
    import typer

    from deepsearch.cli import make_app, route
    from deepsearch.commands.common import COMMAND_HELP, SUBCOMMANDS

    assert {"history", "show"} <= SUBCOMMANDS == set(COMMAND_HELP)
    registered = typer.main.get_command(make_app(full=True)).commands  # type: ignore[attr-defined]
    assert set(registered) == SUBCOMMANDS
    for word in SUBCOMMANDS:
        assert route([word], stdin_is_tty=True)[0] == word
        assert route(["--config", "f.json", word], stdin_is_tty=True)[0] == word


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-c", "and", "then?"], ["--continue=last", "and", "then?"]),
        (["and", "then?", "--continue"], ["and", "then?", "--continue=last"]),
        (["-c", "20261204-224530-3fa9c1", "why?"], ["--continue=20261204-224530-3fa9c1", "why?"]),
        (["--continue=2026", "why?"], ["--continue=2026", "why?"]),
        (["why?", "--", "-c"], ["why?", "--", "-c"]),
    ],
)
def test_continue_takes_a_run_id_only_when_one_follows(
    args: list[str], expected: list[str]
) -> None:
    from deepsearch.commands.continuation import expand_continue

    assert expand_continue(args) == expected


def test_history_and_show_on_a_corrupt_file_are_one_line_and_exit_1() -> None:
    db = Path(os.environ["DEEPSEARCH_DATA_DIR"]) / "history.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"no database here\n" * 64)
    for args in (["history"], ["show", "20261204"], ["history", "--json"]):
        done = cli(*args)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == f"error: cannot read the history: {db}: file is not a database\n"
