# Serving Playbook. `make run` starts the app; `make test` runs every check.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: run test lint typecheck unit browser bench gpu-check clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/streamlit run app.py --server.headless true --server.port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy engine
	$(BIN)/mypy app.py app_pages ui tools

unit: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not browser"

browser: $(STAMP)
	bash tools/install_browser.sh
	$(BIN)/pytest -q -m browser

test: lint typecheck unit browser

bench: $(STAMP)
	bash tools/install_browser.sh
	$(BIN)/python -m tools.bench

gpu-check: $(STAMP)
	$(BIN)/python -m tools.gpu_check

clean:
	rm -rf $(VENV) artifacts .pytest_cache .mypy_cache .ruff_cache
