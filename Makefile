# One command sets up and runs the main job; one runs the tests. See README.md.
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= cpu
# Offline here: point at a local copy. With hub access, leave it empty to load b-mc2/sql-create-context.
LORABENCH_DATA ?= $(wildcard ../shared/data/sql-create-context/random-sample.jsonl)
export LORABENCH_DATA

.PHONY: setup bench test lint

# `make setup PYTHON=python3.12`: the Python the venv is made from; one the stack has no hashes for (its
# `pythons` in lockfiles/stacks.toml) is refused before the venv or pip, in one line naming the fix.
PYTHON ?= python3

$(VENV)/.installed-$(STACK): lockfiles/$(STACK).txt lockfiles/stacks.toml scripts/install.sh pyproject.toml
	PYTHON=$(PYTHON) bash scripts/install.sh --check-python $(STACK)
	$(PYTHON) -m venv $(VENV)
	. $(VENV)/bin/activate && PYTHON=python3 bash scripts/install.sh $(STACK)
	touch $@

setup: $(VENV)/.installed-$(STACK)

# `make bench PYTEST_ARGS="--lorabench-seeds=42 -x"`: more pytest arguments (see `pytest benchmarks --help`,
# group lorabench). Your records go to results/ and scorecards to reports-local/ (both untracked); the
# committed records in reports/results/ stand in where their fingerprint matches and are never replaced
# (`lorabench publish` copies records there on purpose). Interrupted (Ctrl-C), the run in progress is
# recorded as killed with its last checkpoint kept; `make bench` again resumes that seed from it.
# `make bench SETUPS=my-setups`: your own setup files instead of the built-in ones (README: Add your own benchmark).
RESULTS ?= results
REPORTS ?= reports-local
PYTEST_ARGS ?=
SETUPS ?=

bench: setup  ## the suite's CPU cases (Exp A: SmolLM2, 3 seeds), then the scorecard
	$(VENV)/bin/lorabench bench --results $(RESULTS) --reports $(REPORTS) $(if $(SETUPS),--setups $(SETUPS) )-- -m cpu_ok $(PYTEST_ARGS)

test: setup
	$(PY) -m pytest tests -q -n 2 --dist loadfile --durations=15

lint: setup
	$(VENV)/bin/ruff check --preview harness tests benchmarks dev
