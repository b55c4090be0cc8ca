# Two entry points for a fresh machine with only Python 3.11+ and pip:
#   make demo   the local multi-cloud federation on SQLite (DEMO_ARGS=--once to stop after it);
#               installs only the runtime dependencies (no test, lint or documentation tools)
#   make test   lint, the documentation site (strict) and the whole test suite (installs the
#               dev extras on first use; tests/test_deployment.py checks the Dockerfile and the
#               compose file with hadolint and the Compose CLI, no Docker engine needed)
#   make check  the unit tests of the pure packages alone: a quick check while working
#   make docs   the documentation site alone, built strictly into site/
#   make client after changing a route: docs/openapi.json and the Python client's generated parts
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev

.PHONY: demo test check lint docs client bench clean

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
	$(VENV)/bin/hadolint Dockerfile

# --strict: a broken link or anchor, a page left out of the nav, a docstring the Python API cannot
# render fails the build. Material for MkDocs prints a banner about its successor at each build.
docs: $(DEV)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet --site-dir site

# The published OpenAPI document, then the client's models and async stub generated from it
client: $(DEV)
	$(PY) scripts/export_openapi.py
	$(PY) scripts/generate_client.py

test: lint docs
	$(PY) -m pytest -q

# A quick check while working: the unit tests of the pure packages (measures, rules, detector,
# anonymization, differential privacy, the engines' contract), about 1,200 tests in a minute or
# two, no servers, no PostgreSQL. A new pure package's tests belong in this list.
CHECK := tests/metrics tests/anonymize tests/fsla tests/identifiers tests/privacy \
	tests/engines/test_contract.py tests/negotiations tests/reports tests/test_roles.py \
	tests/test_names.py tests/test_precision.py tests/test_environment.py
check: $(DEV)
	$(PY) -m pytest -q -m "not postgres" $(CHECK)

bench: $(DEV)
	$(PY) benchmarks/analyze.py
	$(PY) benchmarks/anonymize.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis site
