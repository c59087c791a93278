# Developer interface: the same targets run locally and in CI (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install test lint format bench clean mutate

install: $(BIN)/deepsearch

$(BIN)/deepsearch: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# pip compiles what it installs, but not an editable project's own files; pytest keeps
	@# its own bytecode of the test modules (assertion rewriting); Hypothesis builds its
	@# Unicode tables on first use. Without these three the first `make test` of a fresh
	@# checkout does all of it in each worker (measured: 21.4-22.7 s, then 18.4 s; warm 18 s).
	$(BIN)/python -m compileall -q -j 0 deepsearch tests bench tools
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest --collect-only -q -p no:cacheprovider >/dev/null
	$(BIN)/python tools/warm_hypothesis.py
	@touch $@

# Three workers (pytest-xdist) on our two cores. Each worker collects the whole suite
# (~3.5 s of CPU; no SDK is imported at collection, tests/conftest.py fails it if one
# is). --dist loadgroup sends the tests of each SDK (openai, MCP, google-genai) to one
# worker (tests/conftest.py writes the group suffix pytest 9.2 ignores, xdist#1386), so
# only that worker imports it. Measured in pairs, two workers then three: 41.0 / 32.0 s
# at load ~1.5 and 68.3 / 49.6 s at load 5-8, CPU about equal. Bytecode is written even if
# the caller's shell turns it off (PYTHONDONTWRITEBYTECODE): otherwise every run
# recompiles every module and the interpreters the tests spawn recompile again: a warm
# suite is one with its .pyc.
test:
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 3 --dist loadgroup

# The layers are checks: import-linter's contracts ([tool.importlinter] in
# pyproject.toml) and no import cycle between modules (tools/import_cycles.py).
lint:
	$(BIN)/ruff check deepsearch tests bench tools
	$(BIN)/ruff format --check deepsearch tests bench tools
	$(BIN)/mypy
	$(BIN)/python tools/size_guard.py
	$(BIN)/lint-imports --no-logo
	$(BIN)/python tools/import_cycles.py

format:
	$(BIN)/ruff format deepsearch tests bench tools
	$(BIN)/ruff check --fix deepsearch tests bench tools

# Mutation testing with mutmut (not part of `make test`; docs/development.md): the
# modules changed against BASE (default main), or M=deepsearch/mcp_server (files or
# folders); prints killed/total per module and each survivor not listed in mutation.toml.
mutate:
	$(BIN)/python tools/mutate.py $(if $(BASE),--base $(BASE)) $(if $(J),-j $(J)) $(M)

bench:
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mutate .pytest_cache .ruff_cache .import_linter_cache dist build
