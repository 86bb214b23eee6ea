# One command sets up and runs the main job; one runs the tests. See README.md.
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= cpu
# Offline here: point at a local copy. With hub access, leave it empty to load b-mc2/sql-create-context.
LORABENCH_DATA ?= $(wildcard ../shared/data/sql-create-context/random-sample.jsonl)
export LORABENCH_DATA

.PHONY: setup bench test lint

$(VENV)/.installed-$(STACK): lockfiles/$(STACK).txt scripts/install.sh pyproject.toml
	python3 -m venv $(VENV)
	. $(VENV)/bin/activate && bash scripts/install.sh $(STACK)
	touch $@

setup: $(VENV)/.installed-$(STACK)

# `make bench PYTEST_ARGS="--lorabench-seeds=42 -x"`: more pytest arguments (see `pytest benchmarks --help`,
# group lorabench). Interrupted (Ctrl-C), the run in progress is recorded as killed; `make bench` again
# resumes: ok records are reused, killed and failed seeds run again.
RESULTS ?= reports/results
REPORTS ?= reports
PYTEST_ARGS ?=

bench: setup  ## the suite's CPU cases (Exp A: SmolLM2, 3 seeds), then the scorecard
	$(VENV)/bin/lorabench bench --results $(RESULTS) --reports $(REPORTS) -- -m cpu_ok $(PYTEST_ARGS)

test: setup
	$(PY) -m pytest tests -q -n 2 --dist loadfile

lint: setup
	$(VENV)/bin/ruff check --preview harness tests benchmarks
