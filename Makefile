# The two commands the README promises on a fresh machine with Python 3.11+:
#   make demo   load the bundled sample data and show what the toolkit reads from it
#   make test   run the test suite (starts its own throwaway PostgreSQL)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint venv bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet .
	$(BIN)/forensics demo

test: venv
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

# Each ADK ingest against its source's floor, in one run (a throwaway PostgreSQL filled
# with 200,000 generated events; BENCH_ARGS=--million for 1,000,000). Not part of CI.
bench: venv
	$(BIN)/python tests/benchmarks/bench_floors.py $(BENCH_ARGS)
