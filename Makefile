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

# Two workers (pytest-xdist), one a core. Each worker collects the whole suite and
# imports the SDKs it meets (~7 s of CPU to collect, ~5 s more of first imports), and
# the suite no longer waits in real time (limits run on the injected Clock), so it is
# CPU-bound: a third worker only adds CPU (measured at load 5-6: 117-122 s user+sys
# for two workers, 123-139 s for three, wall times within the noise), which a quiet
# 2-core machine pays in wall time. Bytecode is written even if the caller's shell turns it off
# (PYTHONDONTWRITEBYTECODE): otherwise every run recompiles every module and the
# interpreters the tests spawn recompile again: a warm suite is one with its .pyc.
test:
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 2

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
