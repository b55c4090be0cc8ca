# Two entry points for a fresh machine with only Python 3.11+ and pip:
#   make demo   the local multi-cloud federation on SQLite (DEMO_ARGS=--once to stop after it)
#   make test   lint and the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m demo $(DEMO_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/analyze.py
	$(PY) benchmarks/anonymize.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
