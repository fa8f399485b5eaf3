# The two set-up commands: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_HOME ?= $(CURDIR)/demo-home

.PHONY: demo test dev lint typecheck docs system-deps venv bench clean

$(BIN)/python:
	$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || bash scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[onnxruntime,torch,tensorflow,transformers,catalog]'

demo: venv
	PINBENCH_HOME=$(DEMO_HOME) $(BIN)/pinbench demo

system-deps:
	bash scripts/install-system-deps.sh

dev: $(BIN)/python
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[dev]'
	$(BIN)/python -m tests.package_models

lint: dev
	$(BIN)/ruff check pinbench tests bench
	$(BIN)/ruff format --check pinbench tests bench

# mypy's cache lives outside the clone (like the tests' cached root filesystem), so that a
# fresh clone on the same machine checks only what changed: 135 s cold, 48 s from the cache
# of another clone (docs/benchmarks.md). PINBENCH_TEST_CACHE moves it.
TEST_CACHE ?= $(or $(PINBENCH_TEST_CACHE),$(HOME)/.cache/pinbench-tests)
typecheck: dev
	$(BIN)/mypy --cache-dir $(TEST_CACHE)/mypy

docs: dev
	$(BIN)/mkdocs build --strict --site-dir site

test: system-deps dev lint typecheck docs
	$(BIN)/pytest -n auto --dist loadgroup --durations=30 --junitxml=test-artifacts/junit.xml

bench: dev
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[dev,bench]'
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(DEMO_HOME) site .mypy_cache .ruff_cache .pytest_cache
