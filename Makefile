# The two set-up commands: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_HOME ?= $(CURDIR)/demo-home

DEV ?= dev
# what lint, typecheck and docs need first; `make test` installs once and runs them with DEV=

.PHONY: demo study test dev lint typecheck docs collect system-deps sandbox-system-deps venv bench clean

$(BIN)/python:
	$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || bash scripts/install-system-deps.sh sandbox
	$(PYTHON) -m venv $(VENV)

venv: $(BIN)/python
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[onnxruntime,torch,tensorflow,transformers,catalog]'

# What a run needs from the system (bubblewrap, the sandbox every evaluator runs in), installed
# first as root; any other user is stopped here, before anything runs, with the one command to
# run (DESIGN.md invariant 19). `.ci/run` removes bubblewrap before `make demo` to hold it.
sandbox-system-deps:
	bash scripts/install-system-deps.sh sandbox

demo: sandbox-system-deps venv
	PINBENCH_HOME=$(DEMO_HOME) $(BIN)/pinbench demo

# The seed study (docs/study.md): the catalog built and published into study-work/STUDY once,
# then every cell run (resumed where it stopped), shown and reported. STUDY=seed-quick: the
# quick subset.
study: sandbox-system-deps venv
	if [ "$(STUDY)" = engines ]; then bash scripts/install-system-deps.sh compiler && \
		$(BIN)/python -m pinbench.environments.source_install; fi
	BIN=$(BIN) bash scripts/study.sh

system-deps:
	bash scripts/install-system-deps.sh

# the project's own source is compiled too (an editable install is not): where .pyc files may
# not be written (PYTHONDONTWRITEBYTECODE), each `pinbench` process the tests start compiled
# what it imported again, 0.5 s of CPU for a server's imports (decision 243)
dev: $(BIN)/python
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[dev]'
	$(BIN)/python -m pinbench.environments.source_install
	$(BIN)/python -m compileall -q -j 0 pinbench tests bench
	$(BIN)/python -m tests.package_models

lint: $(DEV)
	$(BIN)/ruff check pinbench tests bench
	$(BIN)/ruff format --check pinbench tests bench

# mypy's cache lives outside the clone (like the tests' cached root filesystem), so that a
# fresh clone on the same machine checks only what changed: 135 s cold, 48 s from the cache
# of another clone (docs/benchmarks.md). PINBENCH_TEST_CACHE moves it.
TEST_CACHE ?= $(or $(PINBENCH_TEST_CACHE),$(HOME)/.cache/pinbench-tests)
typecheck: $(DEV)
	$(BIN)/mypy --cache-dir $(TEST_CACHE)/mypy

docs: $(DEV)
	$(BIN)/mkdocs build --strict --site-dir site

# pytest's rewritten test modules (its assertion rewriting), written to tests/__pycache__ once.
# Where PYTHONDONTWRITEBYTECODE is set pytest writes none, so every worker rewrote all 200
# modules again: collecting took 30 s of CPU per worker instead of 17 (docs/benchmarks.md).
collect: $(DEV)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest --collect-only -q -p no:cacheprovider > /dev/null

# One worker more than the cores (decision 267): a worker often waits (a container builds in
# the engine's processes, a server answers, a test waits for a lease), and a third worker on
# this two-core machine filled that idle time: pytest 24:37 -> 22:08 on a fresh clone
# (docs/benchmarks.md 15f). TEST_WORKERS=N overrides it.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')
# A worker that crashes ends the run (--max-worker-restart=0): xdist 3.8 replaced one under
# --dist loadgroup and then waited forever, both workers idle (a fresh clone's run at 99 %,
# docs/benchmarks.md 15d), where CI would have waited 90 minutes for a red run.
# The checks run side by side (mypy is one process; ruff, mkdocs and the collection fit beside
# it on a second core), each one's output printed together when it ends; then the suite.
test: system-deps dev
	$(MAKE) --no-print-directory -j4 --output-sync=target lint typecheck docs collect DEV=
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --max-worker-restart=0 --durations=30 --junitxml=test-artifacts/junit.xml

bench: dev
	VENV=$(VENV) bash scripts/install-venv.sh -e '.[dev,bench]'
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(DEMO_HOME) site .mypy_cache .ruff_cache .pytest_cache
