# The two commands the README promises on a fresh machine with Python 3.11+:
#   make demo   load the bundled sample data and show what the toolkit reads from it
#   make test   run the test suite (starts its own throwaway PostgreSQL)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint venv bench opensearch-node

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet .
	$(BIN)/forensics demo

# Two test processes, a test file to each (pytest-xdist), which keeps the suite within
# CI's 15 minutes on two cores. TEST_WORKERS=0 runs it in one process (a debugger, -x).
TEST_WORKERS ?= 2
test: venv opensearch-node
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The real single-node OpenSearch the live-source tests start (tests/opensearch_node.py):
# built once with Maven (its dependencies into build/m2), as .ci/run builds it; the 3.x
# node too where a Java 21+ sits at $(JAVA21). Without mvn and java those tests skip,
# and the test summary says so in one line.
OS_DIR := tests/opensearch_java
JAVA21 ?= /usr/lib/jvm/temurin-25-jdk-amd64
opensearch-node:
	@if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then \
	    echo "no mvn or java: the real-OpenSearch tests will skip"; \
	elif [ ! -f $(OS_DIR)/target/opensearch-node.jar ] || [ ! -f $(OS_DIR)/target/classpath.txt ]; then \
	    echo "building the test OpenSearch node (once; tests/opensearch_java)"; \
	    (cd $(OS_DIR) && mvn -q -B -T 1 "-Dmaven.repo.local=$(CURDIR)/build/m2" package </dev/null) \
	        || echo "the OpenSearch node did not build: its tests will skip"; \
	fi
	@if [ -x $(JAVA21)/bin/java ] && command -v mvn >/dev/null 2>&1 && [ ! -d $(OS_DIR)/target/os3 ]; then \
	    echo "building the test OpenSearch 3.x node (once)"; \
	    (cd $(OS_DIR) && JAVA_HOME=$(JAVA21) mvn -q -B -T 1 "-Dmaven.repo.local=$(CURDIR)/build/m2" -Pos3 package </dev/null) \
	        || echo "the OpenSearch 3.x node did not build: its tests will skip"; \
	fi

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

# Each ADK ingest against its source's floor, in one run (a throwaway PostgreSQL filled
# with 200,000 generated events; BENCH_ARGS=--million for 1,000,000). Not part of CI.
bench: venv
	$(BIN)/python tests/benchmarks/bench_floors.py $(BENCH_ARGS)
