# Developer interface: the same targets run locally and in CI (.ci/run).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install test lint format bench clean

install: $(BIN)/deepsearch

$(BIN)/deepsearch: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# Three workers (pytest-xdist) on our two cores. Each worker collects the whole suite
# and imports the SDKs it meets (~6 s of CPU to collect, a few more of first imports),
# so a third costs ~8 s of CPU; it still wins on wall time, overlapping what waits
# (subprocesses starting, loopback servers, sandboxed children) and taking a larger
# share of a machine other jobs load. Measured in pairs, two workers then three:
# 80 s / 74 s (load 1-3), 108 s / 70 s (load 3-5), 133 s / 138 s and 94 s / 110 s
# (load 5-6); CPU 117-122 s for two, 123-139 s for three. --dist loadgroup sends the
# tests that drive google-genai to one worker (tests/conftest.py groups them), so only
# that worker imports the SDK. Bytecode is written even if
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

bench:
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache dist build
