"""`deepsearch eval FILE --out DIR`: a benchmark run; `deepsearch eval --merge DIR...`.

Research options (`--budget`, `--effort`, providers, ...) are parsed by the research
command's own parser (commands/flags.py): one flag table for every command.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from deepsearch.commands.common import PlainSwitchesCommand
from deepsearch.errors import CommandFailed, UsageError

if TYPE_CHECKING:
    from deepsearch.config import Settings
    from deepsearch.evaluation.dataset import EvalItem
    from deepsearch.evaluation.grading import GraderName
    from deepsearch.evaluation.manifest import Manifest
    from deepsearch.evaluation.results import ResultLine
    from deepsearch.evaluation.runner import EvalPlan

HELP = """Run a benchmark file of questions, grade the answers, print a summary.

FILE: JSON Lines {"id", "question", "answer", "aliases"?} or a CSV with SimpleQA's problem,answer columns. Results go to DIR/results.jsonl (run the same command again to resume), DIR/summary.json and DIR/cassettes/<id>/.

Any research option applies (--budget, --effort, --llm-provider, --search-provider, ...). `deepsearch eval --merge DIR... [--out DIR]` combines shards' results."""


class EvalCommand(PlainSwitchesCommand):
    """The usage line as users type it (FILE and the research flags are parsed later)."""

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage("deepsearch eval", "FILE --out DIR [OPTIONS] [RESEARCH OPTIONS]")


GRADERS: dict[str, GraderName] = {"llm": "llm", "exact": "exact"}
# Research flags that make no sense for a batch of runs.
REFUSED = {"trace": "--trace", "record": "--record", "replay": "--replay",
           "replay_lenient": "--replay-lenient"}  # fmt: skip


def eval_command(
    ctx: typer.Context,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Where results go.")
    ] = None,
    grader: Annotated[
        str,
        typer.Option("--grader", metavar="NAME", help="llm (SimpleQA's rubric) | exact."),
    ] = "llm",
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", metavar="N", min=1, max=64, help="Questions at once (4)."),
    ] = None,
    replay_from: Annotated[
        Path | None,
        typer.Option(
            "--replay-from", metavar="DIR", help="Replay each run from that eval's cassettes."
        ),
    ] = None,
    shard_spec: Annotated[
        str | None,
        typer.Option("--shard", metavar="I/N", help="Only every N-th question from I (0-based)."),
    ] = None,
    merge: Annotated[
        bool, typer.Option("--merge", metavar="", help="Combine the results of the DIRs given.")
    ] = False,
    allow_answer_key_hosts: Annotated[
        bool,
        typer.Option(
            "--allow-answer-key-hosts",
            metavar="",
            help="Do not block the sites publishing answer keys (eval.answer_key_hosts).",
        ),
    ] = False,
) -> None:
    from deepsearch.commands.flags import parse_research_args

    params = parse_research_args(ctx.args, "eval")
    paths = [Path(p) for p in params.get("question") or []]
    if merge:
        raise typer.Exit(_merge(paths, out, as_json=params["as_json"]))
    for name, flag in REFUSED.items():
        if params.get(name):
            raise UsageError(f"{flag} does not apply to deepsearch eval")
    if len(paths) != 1 or out is None:
        raise UsageError("usage: deepsearch eval FILE --out DIR [options]")
    if grader not in GRADERS:
        raise UsageError(f"--grader {grader!r}: expected llm or exact")
    settings = _settings(params, allow_answer_key_hosts)
    plan = _plan(settings, out, GRADERS[grader], concurrency, replay_from, allow_answer_key_hosts)
    items = _items(paths[0], shard_spec)
    _check_replay(plan, items)
    from deepsearch.evaluation.lock import out_folder_lock
    from deepsearch.evaluation.manifest import write_manifest

    with out_folder_lock(out):  # a second eval on the same folder is refused
        write_manifest(out, _manifest(paths[0], shard_spec, items))
        code = _run(plan, items, quiet=params["quiet"], as_json=params["as_json"])
    raise typer.Exit(code)


def _verdict(lines: list[ResultLine]) -> int:
    """Exit 1 when every question failed before any answer (a dead endpoint: the
    accuracy would say 0% of nothing); a partial failure is said on stderr and counted
    in the summary (`failed`). Either way the same command runs the failed ones again."""
    failed = [line for line in lines if line.failed]
    if not failed:
        return 0
    first = f"{failed[0].id}: {failed[0].error}"
    again = "run the same command again to re-run the failed questions"
    if len(failed) == len(lines):
        raise CommandFailed(
            f"every question failed ({len(lines)} of {len(lines)}; {first}); {again}"
        )
    typer.echo(f"eval: {len(failed)} of {len(lines)} questions failed ({first}); {again}", err=True)
    return 0


def _settings(params: dict[str, Any], allow_answer_keys: bool) -> Settings:
    from deepsearch.commands.flags import overrides_of
    from deepsearch.config import load_config
    from deepsearch.evaluation.answer_keys import host_only
    from deepsearch.frontend.options import FLAG_OF

    settings = load_config(
        config_file=params.get("config"), overrides=overrides_of(params), override_labels=FLAG_OF
    ).settings
    if allow_answer_keys:
        return settings
    bad = list(
        dict.fromkeys([*settings.agent.bad_hostnames, *host_only(settings.eval.answer_key_hosts)])
    )
    agent = settings.agent.model_copy(update={"bad_hostnames": bad})
    return settings.model_copy(update={"agent": agent})


def _plan(
    settings: Settings,
    out: Path,
    grader: GraderName,
    concurrency: int | None,
    replay_from: Path | None,
    allow_answer_keys: bool,
) -> EvalPlan:
    from deepsearch.evaluation.runner import CASSETTES, EvalPlan

    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: --out needs a folder")
    if replay_from is not None and not (replay_from / CASSETTES).is_dir():
        raise UsageError(f"{replay_from}: --replay-from needs an eval folder (no cassettes/ there)")
    if replay_from is not None and replay_from.resolve() == out.resolve():
        raise UsageError("--replay-from and --out must be different folders")
    return EvalPlan(
        settings=settings,
        out=out,
        grader=grader,
        concurrency=concurrency or settings.eval.concurrency,
        replay_from=replay_from,
        blocked_sites=[] if allow_answer_keys else list(settings.eval.answer_key_hosts),
    )


def _check_replay(plan: EvalPlan, items: list[EvalItem]) -> None:
    from deepsearch.evaluation.runner import CASSETTES, EvalRunner

    missing = EvalRunner.missing_cassettes_in(plan.replay_from, items)
    if items and len(missing) == len(items):
        where = plan.replay_from / CASSETTES if plan.replay_from else ""
        raise UsageError(
            f"{where}: no cassette for any of these {len(items)} questions (such as "
            f"{items[0].id!r}); --replay-from needs the eval folder that ran them"
        )


def _items(path: Path, shard_spec: str | None) -> list[EvalItem]:
    from deepsearch.evaluation.dataset import load_items, parse_shard, shard

    items = load_items(path)
    return items if shard_spec is None else shard(items, *parse_shard(shard_spec))


def _manifest(path: Path, shard_spec: str | None, items: list[EvalItem]) -> Manifest:
    from deepsearch.evaluation.dataset import load_items, parse_shard
    from deepsearch.evaluation.manifest import Manifest

    if shard_spec is None:
        return Manifest(questions=len(items), ids=[item.id for item in items])
    total = len(load_items(path))
    return Manifest(shard=parse_shard(shard_spec), questions=total, ids=[i.id for i in items])


def _run(plan: EvalPlan, items: list[EvalItem], *, quiet: bool, as_json: bool) -> int:
    from deepsearch.commands.signals import signals_interrupt
    from deepsearch.evaluation.progress import EvalProgress
    from deepsearch.evaluation.runner import EvalRunner

    progress = EvalProgress(total=len(items), quiet=quiet)
    runner = EvalRunner(plan, on_done=progress.advance)
    wanted = {item.id for item in items}
    done_before = [line for line in runner.results.done() if line.id in wanted and not line.failed]
    todo = runner.pending(items)
    progress.start(done_before)
    # SIGTERM / SIGHUP (a CI cancel, `timeout`, `docker stop`) unwind as Ctrl-C does:
    # the questions in flight are cancelled, no line is written for them, every line
    # already written stays whole; the exit code is the signal's (143 / 129).
    with signals_interrupt() as caught:
        try:
            asyncio.run(runner.run(todo))
        except KeyboardInterrupt:
            raise CommandFailed(
                f"interrupted; run the same command again to resume ({plan.out})",
                caught.exit_code(),
            ) from None
        finally:
            progress.stop()  # before any line: the progress bar owns stderr until then
    lines = [line for line in runner.results.done() if line.id in wanted]
    _report(lines, plan.out, as_json=as_json)
    return _verdict(lines)


def _merge(dirs: list[Path], out: Path | None, *, as_json: bool) -> int:
    from deepsearch.evaluation.manifest import merge_gaps, read_manifest
    from deepsearch.evaluation.results import RESULTS_FILE, ResultsFile, read_results

    if not dirs:
        raise UsageError("usage: deepsearch eval --merge DIR... [--out DIR]")
    by_id: dict[str, ResultLine] = {}
    for directory in dirs:
        if not (directory / RESULTS_FILE).is_file():
            raise UsageError(f"{directory}: no {RESULTS_FILE} there")
        by_id.update({line.id: line for line in read_results(directory / RESULTS_FILE)})
    lines = sorted(by_id.values(), key=lambda line: line.id)
    if out is not None:
        from deepsearch.files import write_atomic

        merged = ResultsFile(out)
        rows = [json.dumps(line.model_dump(mode="json"), ensure_ascii=False) for line in lines]
        write_atomic(merged.path, "".join(f"{row}\n" for row in rows))
    _report(lines, out, as_json=as_json)
    for gap in merge_gaps([read_manifest(directory) for directory in dirs], lines):
        typer.echo(f"eval --merge: {gap}", err=True)
    return 0


def _report(lines: list[ResultLine], out: Path | None, *, as_json: bool) -> None:
    from rich.console import Console

    from deepsearch.commands.stdout import guarded_stdout
    from deepsearch.evaluation.summary import SUMMARY_FILE, summarize, summary_table

    summary = summarize(lines)
    data = summary.model_dump(mode="json")
    if out is not None:
        from deepsearch.files import write_atomic

        write_atomic(out / SUMMARY_FILE, json.dumps(data, indent=2) + "\n")
    with guarded_stdout():
        if as_json:
            typer.echo(json.dumps(data))
        else:
            Console(highlight=False).print(summary_table(summary))
