# Two commands on a fresh machine: `make deck` and `make test` (see README.md).
# Set-up is idempotent: each step re-runs only when the file it depends on changed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A GPU user can pass a CUDA build, e.g. make test TORCH="torch==2.13.0 --index-url <cuda index>"
TORCH ?= torch==2.13.0
PY_STAMP := $(VENV)/.installed
# The deck renderer's pieces outside Python: npm packages from the committed lock file,
# and Debian's Chromium (PDF, browser tests), poppler (pdfinfo), an emoji font and Graphviz ({dot} cells).
NPM_STAMP := node_modules/.installed
# The CDN libraries Quarto's reference renders load (MathJax 2 and 3, KaTeX, mermaid), for the
# fidelity test's browser; measurement only, not needed to build a deck (benchmarks/fidelity_npm).
FIDELITY_NPM_STAMP := benchmarks/fidelity_npm/node_modules/.installed
APT_PACKAGES := chromium poppler-utils fonts-noto-color-emoji graphviz
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup deck-setup system-packages test bench deck preview clean clean-venv exercises claims-matrix

$(PY_STAMP): pyproject.toml
	@echo "==> setting up Python environment in $(VENV)/"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e ".[test,deck]"
	@touch $@

setup: $(PY_STAMP)

$(NPM_STAMP): package-lock.json package.json
	@echo "==> installing npm packages (reveal.js, katex, sass) from package-lock.json"
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# apt-get runs only when one of the packages is missing (a dpkg query costs milliseconds).
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "==> installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

deck-setup: setup $(NPM_STAMP) system-packages

$(FIDELITY_NPM_STAMP): benchmarks/fidelity_npm/package-lock.json benchmarks/fidelity_npm/package.json
	@echo "==> installing the fidelity test's CDN libraries (benchmarks/fidelity_npm, measurement only)"
	npm ci --prefix benchmarks/fidelity_npm --no-audit --no-fund --loglevel=error
	@touch $@

# HTML and PDF of every document listed in _quarto.yml, under _output/ (see README), and
# beside each PDF a handout (<name>-handout.pdf): every slide with its speaker notes under it.
deck: deck-setup
	$(PY) -m deckbuild render --handout

# Serve the deck on http://127.0.0.1:4848 and rebuild it when a source file changes.
preview: deck-setup
	$(PY) -m deckbuild preview --no-browser

# The browser tests of the renderer are part of the suite, so tests need the deck set-up;
# DECK_TOOLCHAIN=required makes a missing piece fail the deck tests instead of skipping them.
test: setup deck-setup $(FIDELITY_NPM_STAMP)
	DECK_TOOLCHAIN=required $(PY) -m pytest
	@echo "==> the deck's claims again under PyTorch's default CPU kernels (ATEN_CPU_CAPABILITY=default):"
	@echo "    other kernels train other models, and every sentence of the deck must hold on them too"
	ATEN_CPU_CAPABILITY=default DECK_TOOLCHAIN=required $(PY) -m pytest tests/test_claims.py -q

# Every claim of the deck on ten variant builds (seeds 0-4, native and default kernels):
# benchmarks/claims_matrix.py, about 15 minutes on 2 cores from an empty cache.
claims-matrix: setup
	$(PY) benchmarks/claims_matrix.py --json benchmarks/results/claims_matrix.json

bench: setup
	$(PY) benchmarks/bench_speed.py

clean:
	rm -rf _output .pytest_cache .hypothesis .cache/deckbuild .cache/transformer_lab

clean-venv:
	rm -rf $(VENV)

# The learner's exercises (exercises/, README "Exercises"): every one, or one with N=1;
# TESTS=1 runs the tests the learner wrote for exercise 1's part (exercises/tests01_*.py)
# against the package and every known mistake; SHOW=solution names the answer too. Needs
# only pip install -e ".[test]": the project's .venv when there is one, else the python3 on
# PATH (a learner's own environment).
EXERCISES_PY = $(if $(wildcard $(PY)),$(PY),$(PYTHON))
exercises:
	$(EXERCISES_PY) -m pytest exercises/grader -q --tb=no -rN -p no:cacheprovider $(if $(N),--exercise $(N)) $(if $(TESTS),--tests $(TESTS)) $(if $(filter solution,$(SHOW)),--solution)
