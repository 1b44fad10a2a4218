# Two entry points: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Apache Iceberg's Spark runtime, fetched once from Maven Central by the
# coordinates almanac.spark.runtime names; it looks for the jar here.
RUNTIME_STAMP := $(VENV)/jars/.fetched
RUNTIME = $$($(PY) -c 'from almanac.spark.runtime import RUNTIME; print(RUNTIME)')

.PHONY: setup spark-runtime browser demo demo-cluster test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,spark]'
	touch $(STAMP)

$(RUNTIME_STAMP): $(STAMP)
	rm -rf $(VENV)/jars
	mkdir -p $(VENV)/jars
	@if command -v mvn >/dev/null; then \
	  mvn -q -B dependency:copy -Dartifact="$(RUNTIME)" \
	    -DoutputDirectory=$(VENV)/jars && touch $(RUNTIME_STAMP); \
	else \
	  echo "*** No mvn: Spark fetches $(RUNTIME) itself at its first session" >&2; \
	fi

spark-runtime: $(RUNTIME_STAMP)

setup: $(STAMP) $(RUNTIME_STAMP)

# The console's browser tests drive Debian's chromium through its chromedriver.
# Installed as root, or with sudo; when neither works the tests fail, saying so.
CHROMEDRIVER := /usr/bin/chromedriver
browser:
	@if [ ! -x $(CHROMEDRIVER) ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  { $$SUDO apt-get update && \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	      chromium chromium-driver; } || \
	  echo "*** Could not install chromium and chromium-driver: tests/console will fail" >&2; \
	fi

# Each demo starts afresh in its own folder of demo-data/ and keeps it to be
# looked at (.venv/bin/almanac --store demo-data/demo history); `make clean`
# removes demo-data/ with the rest.
demo: setup
	rm -rf demo-data/demo
	$(PY) -m almanac.dev.demo demo-data/demo

# The same catalog on a real 3-member etcd cluster, with nodes and a failure.
demo-cluster: setup
	rm -rf demo-data/cluster
	$(PY) -m almanac.dev.demo_cluster demo-data/cluster

lint: setup
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: setup
	$(PY) -m mypy

unit: setup browser
	$(PY) -m pytest -q -n 2

test: lint typecheck unit

bench: setup
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis demo-data
