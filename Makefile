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
# and Debian's Chromium (PDF, browser tests), poppler (pdfinfo) and an emoji font.
NPM_STAMP := node_modules/.installed
APT_PACKAGES := chromium poppler-utils fonts-noto-color-emoji
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup deck-setup system-packages test bench deck preview clean clean-venv exercises

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

# HTML and PDF of every document listed in _quarto.yml, under _output/ (see README), and
# beside each PDF a handout (<name>-handout.pdf): every slide with its speaker notes under it.
deck: deck-setup
	$(PY) -m deckbuild render --handout

# Serve the deck on http://127.0.0.1:4848 and rebuild it when a source file changes.
preview: deck-setup
	$(PY) -m deckbuild preview --no-browser

# The browser tests of the renderer are part of the suite, so tests need the deck set-up;
# DECK_TOOLCHAIN=required makes a missing piece fail the deck tests instead of skipping them.
test: setup deck-setup
	DECK_TOOLCHAIN=required $(PY) -m pytest

bench: setup
	$(PY) benchmarks/bench_speed.py

clean:
	rm -rf _output .pytest_cache .hypothesis .cache/deckbuild .cache/transformer_lab

clean-venv:
	rm -rf $(VENV)

# The learner's exercises (exercises/, README "Exercises"): every one, or one with N=1;
# SHOW=solution names the package's answer too. Needs only pip install -e ".[test]": the
# project's .venv when there is one, else the python3 on PATH (a learner's own environment).
EXERCISES_PY = $(if $(wildcard $(PY)),$(PY),$(PYTHON))
exercises:
	$(EXERCISES_PY) -m pytest exercises/grader -q --tb=no -rN $(if $(N),--exercise $(N)) $(if $(filter solution,$(SHOW)),--solution)
