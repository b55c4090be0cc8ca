# Two entry points for a fresh machine with only Python 3.11+ and pip:
#   make demo   the local multi-cloud federation on SQLite (DEMO_ARGS=--once to stop after it);
#               installs only the runtime dependencies (no test, lint or out-of-core tools)
#   make test   lint and the whole test suite (installs the dev extras on first use)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(RUNTIME)

$(DEV): $(RUNTIME)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(DEV)

demo: $(RUNTIME)
	$(PY) -m demo $(DEMO_ARGS)

lint: $(DEV)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: lint
	$(PY) -m pytest -q

bench: $(DEV)
	$(PY) benchmarks/analyze.py
	$(PY) benchmarks/anonymize.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
