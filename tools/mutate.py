"""`make mutate`: mutation testing with mutmut 3 over the modules a change touched.

    python tools/mutate.py                       # modules changed against main (git)
    python tools/mutate.py --base origin/main    # ... against another ref
    python tools/mutate.py deepsearch/mcp_server deepsearch/session.py
    python tools/mutate.py -j 2 --tests tests/llm deepsearch/llm/streaming.py

mutmut reads its settings from `pyproject.toml` in the directory it runs in, and runs
every test selection in a copy (`mutants/`). So this script runs it in a scratch
directory, `.mutate/<key>/` (one per selection of modules and tests): the repository's
pyproject.toml with a `[tool.mutmut]` table naming only the modules asked for and only
the tests that exercise them (mutmut then picks, per function, the tests that called
it; tests/conftest.py empties the package's lru_caches before each test under mutmut,
so a memoized function's callers are all seen), each mutant in a process that ran no
test before (`forkserver`). The test paths are those of
`mutation.toml`'s `[tests]` table for the module (longest prefix wins), else the
mirror folder (`deepsearch/llm/x.py` -> `tests/llm`), else `tests/test_<name>.py`.

A survivor is a change to the code no test noticed. Some are equivalent: the mutant
behaves exactly like the code (`x or ""` where `x` is never an empty string but
`None`...). Those are listed, each with why, under `[[equivalent]]` in
`mutation.toml`: an entry names the function and the changed line (before and
after), not mutmut's number, which moves when the function changes. This script
prints the survivors that are not listed (each with its diff), the listed ones that no
longer survive (stale: remove them), and killed/total per module. Exit 1 when an
unlisted survivor remains. docs/development.md says how to read the output.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH_ROOT = ROOT / ".mutate"
CONFIG = ROOT / "mutation.toml"
# What the tests read besides the package and the tests (copied next to them).
ALSO_COPY = ["tests", "prompts", "config.json", "README.md", "docs", "tools", "bench"]
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
# Exit codes as mutmut 3 records them (mutmut.stats.status_by_exit_code).
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped"}
STATUS |= {36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout"}
STATUS |= {37: "caught by type check", -11: "segfault", -9: "segfault", 2: "interrupted"}


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's, e.g. deepsearch.llm.streaming.xǁStreamedReplyǁadd__mutmut_5
    module: str  # deepsearch/llm/streaming.py
    status: str
    removed: tuple[str, ...]  # the original lines it changed, stripped
    added: tuple[str, ...]  # what it put there
    diff: str

    @property
    def function(self) -> str:
        return self.name.rsplit("__mutmut_", 1)[0]


def changed_modules(base: str) -> list[str]:
    """The package's Python files that differ from `base` (committed or not)."""
    merge_base = _git("merge-base", base, "HEAD").strip()
    names = _git("diff", "--name-only", merge_base, "--", "deepsearch").split()
    names += _git("ls-files", "--others", "--exclude-standard", "deepsearch").split()
    return sorted({n for n in names if n.endswith(".py") and (ROOT / n).is_file()})


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mutate: git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def expand(targets: list[str]) -> list[str]:
    """Files and folders (under deepsearch/) -> the Python files to mutate."""
    files: set[str] = set()
    for target in targets:
        path = ROOT / target.replace(".", "/") if not (ROOT / target).exists() else ROOT / target
        if path.is_dir():
            files |= {str(p.relative_to(ROOT)) for p in path.rglob("*.py")}
        elif path.with_suffix(".py").is_file():
            files.add(str(path.with_suffix(".py").relative_to(ROOT)))
        else:
            sys.exit(f"mutate: no module or folder {target!r}")
    return sorted(f for f in files if f.startswith("deepsearch/") and "__pycache__" not in f)


def tests_for(module: str, table: dict[str, list[str]]) -> list[str]:
    """The test paths that exercise `module` (see the module docstring)."""
    prefixes = [p for p in table if module.startswith(p)]
    if prefixes:
        return table[max(prefixes, key=len)]
    parts = Path(module).parts  # ("deepsearch", "llm", "x.py") or ("deepsearch", "x.py")
    if len(parts) > 2 and (ROOT / "tests" / parts[1]).is_dir():
        return [f"tests/{parts[1]}"]
    own = f"tests/test_{Path(module).stem}.py"
    return [own] if (ROOT / own).is_file() else ["tests"]


def scratch_for(modules: list[str], tests: list[str]) -> Path:
    """`.mutate/<key>/`: one folder per selection, so that runs of different modules
    (at once, or one after the other) keep their own mutants and results."""
    key = hashlib.sha1(json.dumps([modules, tests]).encode()).hexdigest()[:10]
    return SCRATCH_ROOT / key


def prepare(scratch: Path, modules: list[str], tests: list[str]) -> None:
    """The scratch directory: links to the sources, a pyproject.toml for this run, and
    no `mutants/` left from an earlier run (its copies of the other modules go stale)."""
    scratch.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(scratch / "mutants", ignore_errors=True)
    for name in ["deepsearch", *ALSO_COPY]:
        link = scratch / name
        if not link.is_symlink() and (ROOT / name).exists():
            link.symlink_to(ROOT / name)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    settings = {
        "source_paths": ["deepsearch"],
        "only_mutate": modules,
        "also_copy": ALSO_COPY,
        "pytest_add_cli_args_test_selection": tests,
        # One process per mutant (no -n): mutmut forks a worker for each.
        "pytest_add_cli_args": ["-q", "-p", "no:cacheprovider"],
        "use_git_change_detection": False,
        # Each mutant in a process forked from one that has run no test: a worker forked
        # from mutmut's own (which ran them all) inherits its memoized results (an
        # lru_cache of converted schemas), and a mutant behind the cache is never run.
        "process_isolation": "forkserver",
    }
    table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items())
    (scratch / "pyproject.toml").write_text(f"{pyproject}\n[tool.mutmut]\n{table}\n", "utf-8")


def read_mutants(scratch: Path, modules: list[str]) -> list[Mutant]:
    """Every mutant of `modules` with its verdict and its diff, from mutmut's files."""
    found: list[Mutant] = []
    for module in modules:
        mutated = scratch / "mutants" / module
        meta = mutated.with_name(mutated.name + ".meta")
        if not meta.is_file():
            continue
        codes = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
        functions = _functions(mutated.read_text("utf-8"))
        for name, code in codes.items():
            status = "not checked" if code is None else STATUS.get(code, "suspicious")
            local = name.rsplit(".", 1)[1]
            original = functions.get(local.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", [])
            changed = functions.get(local, [])
            removed, added, diff = _difference(original, changed)
            found.append(Mutant(name, module, status, removed, added, diff))
    return found


def _functions(source: str) -> dict[str, list[str]]:
    """Each mutant and original function's lines (its `def` named as in the module, so
    that a changed default shows), by its name in mutmut's file."""
    lines = source.splitlines()
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            own = lines[node.lineno - 1 : node.end_lineno]
            own[0] = own[0].replace(node.name, _name_in_module(node.name))
            found[node.name] = own
    return found


def _name_in_module(mutmut_name: str) -> str:
    """`x__insn__mutmut_1` -> `_insn`, `xǁRungMemoryǁ_write__mutmut_3` -> `_write`."""
    local = mutmut_name.rsplit("__mutmut_", 1)[0]
    if local.startswith("xǁ"):
        return local.rsplit("ǁ", 1)[-1]
    return local[2:] if local.startswith("x_") else local


def _difference(
    original: list[str], mutant: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    diff = list(difflib.unified_diff(original, mutant, lineterm="", n=1))[2:]
    removed = tuple(line[1:].strip() for line in diff if line.startswith("-"))
    added = tuple(line[1:].strip() for line in diff if line.startswith("+"))
    return removed, added, "\n".join(diff)


def load_config() -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    data = tomllib.loads(CONFIG.read_text("utf-8")) if CONFIG.is_file() else {}
    return data.get("tests", {}), data.get("equivalent", [])


def function_label(mutant: Mutant) -> str:
    """`StreamedReply.add` or `collect`: the name a reader finds in the module."""
    local = mutant.function.rsplit(".", 1)[1]
    if local.startswith("xǁ"):
        return ".".join(part for part in local[2:].split("ǁ") if part)
    return local[2:] if local.startswith("x_") else local


def report(mutants: list[Mutant], equivalents: list[dict[str, str]]) -> int:
    """Print per-module figures, then unlisted survivors and stale entries; the exit code."""
    unlisted: list[Mutant] = []
    used: set[int] = set()
    print("\nmodule                                   killed / non-equivalent (equivalent)")
    for module in sorted({m.module for m in mutants}):
        own = [m for m in mutants if m.module == module]
        killed = sum(m.status in KILLED for m in own)
        equivalent = 0
        for mutant in own:
            if mutant.status in KILLED:
                continue
            match = [i for i, e in enumerate(equivalents) if _listed(mutant, e)]
            if match:
                used.update(match)
                equivalent += 1
            else:
                unlisted.append(mutant)
        total = len(own) - equivalent
        share = f"{100 * killed / total:.1f}%" if total else "-"
        print(f"{module:<40} {killed:>4} / {total:<4} {share:>6}  ({equivalent})")
    for mutant in unlisted:
        print(f"\n{mutant.status}: {function_label(mutant)} in {mutant.module} ({mutant.name})")
        print(mutant.diff)
    modules = {m.module for m in mutants}
    for i, entry in enumerate(equivalents):
        if i not in used and entry.get("module") in modules:
            print(f"\nstale [[equivalent]] (no such survivor now): {entry}")
    print(f"\n{len(unlisted)} survivor(s) not listed as equivalent in mutation.toml")
    return 1 if unlisted else 0


def _listed(mutant: Mutant, entry: dict[str, str]) -> bool:
    return (
        entry.get("module") == mutant.module
        and entry.get("function") == function_label(mutant)
        and entry.get("before", "").strip() in mutant.removed
        and entry.get("after", "").strip() in mutant.added
        and entry.get("near", "") in mutant.diff  # a line next to it, when `before` repeats
    )


def run_quietly(command: list[str], env: dict[str, str], scratch: Path) -> int:
    """Run mutmut, passing its output on without the spinner's frames."""
    with subprocess.Popen(
        command, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            kept = [p for p in line.rstrip("\n").split("\r") if p.strip() and p[0] not in SPINNER]
            if kept:
                print(kept[-1], flush=True)
    return child.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="modules or folders (default: changed)")
    parser.add_argument("--base", default="main", help="the ref a change is measured against")
    parser.add_argument("--tests", nargs="*", help="test paths (default: mutation.toml, mirror)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--report-only", action="store_true", help="re-read the last run")
    args = parser.parse_args(argv)
    modules = expand(args.targets) if args.targets else changed_modules(args.base)
    if not modules:
        print(f"mutate: no module under deepsearch/ differs from {args.base}")
        return 0
    table, equivalents = load_config()
    tests = args.tests or sorted({t for m in modules for t in tests_for(m, table)})
    scratch = scratch_for(modules, tests)
    print("mutating:", " ".join(modules), "\ntests:", " ".join(tests), flush=True)
    if not args.report_only:
        prepare(scratch, modules, tests)
        mutmut = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.jobs)]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
        if run_quietly(mutmut, env, scratch) != 0:
            print("mutate: mutmut failed (see above)", file=sys.stderr)
            return 2
    return report(read_mutants(scratch, modules), equivalents)


if __name__ == "__main__":
    sys.exit(main())
