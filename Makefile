# Two commands on a fresh machine: `make run` and `make test` (README, Quick start).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test hunt bench bench-spark java clean

# Create the virtual environment if missing and install everything pinned in pyproject.toml.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# PySpark 4.3 runs on Java 17 or 21.
java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ]; then echo "error: Java not found; PySpark needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)" >&2; exit 1; fi; \
	if [ "$$v" != 17 ] && [ "$$v" != 21 ]; then echo "error: PySpark needs Java 17 or 21, found Java $$v" >&2; exit 1; fi

# The default check job.
run: $(STAMP) java
	$(BIN)/rmqcheck check

# The whole test suite (long hunts and benchmarks are behind `make hunt` / `make bench`).
test: $(STAMP) java
	$(BIN)/python -m pytest

# Every bug toggle hunted with the budget of the acceptance check, plus a long hunt of the
# intended baseline.
hunt: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

bench: $(STAMP)
	$(BIN)/python bench/stateful.py
	$(BIN)/python bench/prove.py
	$(BIN)/python bench/explore.py

# Trace validation at scale: 10^7 recorded events (cached under build/), local engine vs Spark.
bench-spark: $(STAMP) java
	$(BIN)/python bench/spark.py

clean:
	rm -rf $(VENV) build counterexamples .pytest_cache .hypothesis
