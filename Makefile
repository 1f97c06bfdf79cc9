# Two commands on a fresh machine: `make deck` and `make test` (see README.md).
# Set-up is idempotent: each step re-runs only when the file it depends on changed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# A GPU user can pass a CUDA build, e.g. make test TORCH="torch==2.13.0 --index-url <cuda index>"
TORCH ?= torch==2.13.0
PY_STAMP := $(VENV)/.installed

.PHONY: setup test bench deck preview clean clean-venv

$(PY_STAMP): pyproject.toml
	@echo "==> setting up Python environment in $(VENV)/"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $@

setup: $(PY_STAMP)

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/bench_speed.py

clean:
	rm -rf _output .pytest_cache .hypothesis

clean-venv:
	rm -rf $(VENV)
