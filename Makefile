# Two commands on a fresh machine: `make run` and `make test` (README, Quick start).
PYTHON ?= python3

# Python writes the bytecode of what it imports (a fresh .venv has none: pip installs with
# --no-compile). With PYTHONDONTWRITEBYTECODE set, as on this project's machines, every Python
# process the tests start would compile PySpark, pyarrow, Hypothesis and z3's Python from source
# again: 11 s instead of 2 s an import.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast findings-check hunt bench soak bench-portfolio bench-spark bench-explore-spark java jdk chromium matrix bugs report clean lower-bounds constraints

# Create the virtual environment if missing and install everything at the versions of
# constraints.txt (pyproject.toml has the ranges a user's `pip install rmqcheck` accepts). No
# byte-compiling at install: Python compiles what it imports (15 of the install's 36 s went to
# compiling all of PySpark).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[test]'
	touch $(STAMP)

# The lower bounds of pyproject.toml's ranges, tested: a second environment with exactly those
# versions (constraints-lower.txt) runs the whole suite.
LOWER := .venv-lower
lower-bounds: java jdk chromium
	test -x $(LOWER)/bin/python || $(PYTHON) -m venv $(LOWER)
	$(LOWER)/bin/python -m pip install --quiet --upgrade pip
	$(LOWER)/bin/python -m pip install --quiet -c constraints-lower.txt -e '.[test]'
	$(LOWER)/bin/python -m pip check
	$(LOWER)/bin/python -m pytest

# Re-pin constraints.txt to what the environment has now (after changing a range).
constraints: $(STAMP)
	{ sed -n '1,2p' constraints.txt; $(BIN)/python -m pip freeze --all --exclude-editable | grep -viE '^(pip|rmqcheck)=='; } > constraints.tmp
	mv constraints.tmp constraints.txt

# PySpark 4.3 runs on Java 17 or 21.
java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ]; then echo "error: Java not found; PySpark needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)" >&2; exit 1; fi; \
	if [ "$$v" != 17 ] && [ "$$v" != 21 ]; then echo "error: PySpark needs Java 17 or 21, found Java $$v" >&2; exit 1; fi

# Conformance (rmqcheck conform) compiles RocketMQ's own classes: a JDK and Debian's jars
# (checkers/java/build.py lists which jar each package gives).
# The broker's HA service (the store's classes) needs the next five packages (Mockito stands in
# for the running store); `conform --coverage` and check's coverage figure need JaCoCo.
JDK_PACKAGES := openjdk-17-jdk-headless libcommons-lang3-java libguava-java libnetty-java \
                libcommons-validator-java libhessian-java libcommons-collections3-java \
                libjna-java liblz4-java libzstd-jni-java libconversant-disruptor-java libmockito-java \
                libjacoco-java junit4 libhamcrest-java libassertj-core-java libcommons-io-java \
                junit5 libopentest4j-java libapiguardian-java
JARS := commons-lang3 guava netty-common netty-transport netty-buffer netty-codec netty-handler \
        netty-resolver commons-validator hessian commons-collections3 \
        jna lz4-java zstd-jni conversant-disruptor jsr305 netty-handler-proxy mockito-core byte-buddy \
        byte-buddy-agent objenesis org.jacoco.agent.rt org.jacoco.core asm asm-commons asm-tree \
        junit4 hamcrest assertj-core commons-io junit-jupiter-api opentest4j apiguardian-api
jdk:
	@missing=""; command -v javac >/dev/null 2>&1 || missing="javac"; \
	for j in $(JARS); do [ -e /usr/share/java/$$j.jar ] || missing="$$missing $$j.jar"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's JDK and Java libraries for conformance (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(JDK_PACKAGES) >/dev/null; \
	  else echo "error: conformance needs$$missing: apt-get install $(JDK_PACKAGES) (as root)" >&2; exit 1; fi; fi

# The report test renders the page in Debian's headless Chromium.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium (the report test renders the HTML report in it)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "error: the report test needs Chromium: apt-get install chromium (as root)" >&2; exit 1; fi; }

# The default check job.
run: $(STAMP) java
	@$(MAKE) --no-print-directory jdk || echo "(the check job skips conformance without them)"
	$(BIN)/rmqcheck check

# The whole test suite (long hunts and benchmarks are behind `make hunt` / `make bench`), on
# both cores: pytest-xdist, a test module a worker at a time (so a module's JVM or Spark
# session starts once). docs/performance.md has the figures.
TEST_WORKERS ?= 2
test: $(STAMP) java jdk chromium
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The edit-run loop: unit tests and scenarios, no JVM, no Spark, nothing slow (under 2 minutes).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not slow and not bench and not heavy"

# Each finding's patch tested three ways: the model's intended form (conform), the running code
# (the finding's scenario and seeded cluster runs), RocketMQ's own JUnit tests without the slow
# classes (docs/findings/README.md; about 35-40 minutes on 2 cores). `.ci/run` runs it after
# `make test` where a RocketMQ tree is present.
findings-check: $(STAMP) java jdk
	$(BIN)/rmqcheck findings --check --tests quick --junit build/findings-junit.xml

# Every bug toggle hunted with the budget of the acceptance check, plus a long hunt of the
# intended baseline. On both cores: the acceptance hunts count work, not seconds.
# Without RocketMQ's tree beside the checkout (../shared/rocketmq/) the slow tier's cluster,
# findings and stepper tests skip: said first, not left to the skip summary.
hunt: $(STAMP) java jdk chromium
	@$(BIN)/python -c "import sys; from rmqcheck.checkers.java import build; sys.exit(build.shared_tree() is None)" \
	  || echo "warning: no ../shared/rocketmq/ beside the checkout: the slow tier's cluster tests will skip" >&2
	$(BIN)/python -m pytest -m slow -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

bench: $(STAMP) java jdk
	$(BIN)/python bench/stateful.py
	$(BIN)/python bench/prove.py
	$(BIN)/python bench/explore.py
	$(BIN)/python bench/conform.py
	$(BIN)/python bench/cluster.py
	$(BIN)/python bench/schedule_reach.py
	$(BIN)/python bench/follow_scaling.py

# A 30-minute soak of the cluster (`rmqcheck cluster --soak 1800`), then its record validated by
# both engines: the figures docs/cluster.md gives (41 minutes on 2 cores; a 10-minute
# soak, `bench/soak.py --seconds 600`, took 13).
soak: $(STAMP) java jdk
	$(BIN)/python bench/soak.py

# The portfolio's methods in turns against side by side, then its guided turns all plain against
# every second one stratified, on every controller-mode toggle (about 40 and 45 minutes on 2
# cores; docs/bugs.md, docs/exploration.md).
bench-portfolio: $(STAMP)
	$(BIN)/python bench/portfolio_split.py
	$(BIN)/python bench/portfolio_split.py --compare stratified

# Trace validation at scale: 10^7 recorded events (cached under build/), local engine vs Spark.
bench-spark: $(STAMP) java
	$(BIN)/python bench/spark.py

# Exhaustive exploration on Spark (issue 28): per-core rate and scaling on local-cluster masters,
# the depth std3 reaches in 30 minutes (BENCH_SPARK_SECONDS), a projection to depth 20.
bench-explore-spark: $(STAMP) java
	$(BIN)/python bench/explore_spark.py

# The guarantee matrix (about 95 minutes on 2 cores; its work is counted, so its cells are the
# same on any machine) and the bug-rediscovery table (300 s a run, the acceptance budget: a few
# hours on 2 cores; `rmqcheck bugs --measure --budget 60` and
# `--update` for less), each written into its page's generated block (docs/matrix.md,
# docs/bugs.md) and, as JSON, into
# results/ (tracked, so `--update` and the report work from a fresh checkout); then the HTML report.
matrix: $(STAMP)
	$(BIN)/rmqcheck matrix --json results/matrix.json --readme docs/matrix.md

bugs: $(STAMP)
	$(BIN)/rmqcheck bugs --measure --json results/bugs.json --readme docs/bugs.md

report: $(STAMP)
	$(BIN)/rmqcheck report --out build/report.html --matrix results/matrix.json --bugs results/bugs.json

clean:
	rm -rf $(VENV) $(LOWER) build counterexamples .pytest_cache .hypothesis
