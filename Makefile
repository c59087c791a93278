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

# Three workers (pytest-xdist) on our two cores: the third overlaps the tests that
# wait (a wall-clock limit, a Retry-After, a subprocess starting) and takes a larger
# share of a machine other jobs load; measured 57 s against 63 s for two (load 3), at
# the price of one more collection (~4 s CPU: 85 s user+sys against 77). Bytecode is
# written even if the caller's shell turns it off
# (PYTHONDONTWRITEBYTECODE): otherwise every run recompiles every module and the
# interpreters the tests spawn recompile again: a warm suite is one with its .pyc.
test:
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n 3

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
