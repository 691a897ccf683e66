PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared

.PHONY: serve test conformance bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/ksched serve

# The pytest suite includes every ../shared/conformance (and next/) case as its own test.
test: $(STAMP)
	KSCHED_CONFORMANCE_DIR=$(abspath $(SHARED))/conformance $(BIN)/python -m pytest -q -p no:cacheprovider

conformance: $(STAMP)
	$(BIN)/ksched conformance $(SHARED)/conformance $(SHARED)/conformance/next

# Every workload at BENCH_NODES nodes, one process each, as a table (README's Performance).
BENCH_NODES ?= 5000
bench: $(STAMP)
	$(BIN)/ksched bench all --nodes $(BENCH_NODES)

clean:
	rm -rf $(VENV) .ksched
