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

test:
	$(BIN)/python -m pytest -q

lint:
	$(BIN)/ruff check deepsearch tests bench
	$(BIN)/ruff format --check deepsearch tests bench

format:
	$(BIN)/ruff format deepsearch tests bench
	$(BIN)/ruff check --fix deepsearch tests bench

bench:
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist build
