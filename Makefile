# Serving Playbook. `make run` starts the app; `make test` runs every check.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs: the app's runtime (requirements.txt, torch included: the Measure page runs its
# kernels) for `make run`; the test tools on top (requirements-dev.txt) for everything else.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: run install test test-all lint typecheck unit browser bench gpu-check clean

$(RUN_STAMP): requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	touch $(RUN_STAMP)

# requirements-dev.txt starts with -r requirements.txt: the test install is the runtime's plus
# the test tools, whichever of the two came first
$(DEV_STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $(DEV_STAMP)

install: $(RUN_STAMP)

# Ctrl+C stops the app.
run: $(RUN_STAMP)
	$(BIN)/streamlit run app.py --server.headless true --server.port $(PORT)

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	$(BIN)/mypy engine
	$(BIN)/mypy app.py app_pages ui tools

unit: $(DEV_STAMP)
	$(BIN)/pytest -q -n 2 -m "not browser"

browser: $(DEV_STAMP)
	bash tools/install_browser.sh
	$(BIN)/pytest -q -m "browser and not full" -n 3  # they mostly wait for pages: three at once

# `make test` runs a quarter of each slow property test's examples and the browser checks minus
# the exhaustive matrices (tests/budget.py); `make test-all` runs all of them.
test: lint typecheck unit browser

test-all: lint typecheck $(DEV_STAMP)
	bash tools/install_browser.sh
	PLAYBOOK_FULL_TESTS=1 $(BIN)/pytest -q -n 2 -m "not browser"
	PLAYBOOK_FULL_TESTS=1 $(BIN)/pytest -q -m browser -n 3

bench: $(DEV_STAMP)
	bash tools/install_browser.sh
	$(BIN)/python -m tools.bench

gpu-check: $(DEV_STAMP)
	$(BIN)/python -m tools.gpu_check

clean:
	rm -rf $(VENV) artifacts .pytest_cache .mypy_cache .ruff_cache
