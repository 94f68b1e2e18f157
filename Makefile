# Two commands do everything on a fresh machine (each sets up .venv on first use):
#   make demo   train the embedded default (tiny model, arith task, CPU) and print held-out accuracy before/after
#   make test   run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint warmstart clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# torch first, pinned to the CPU build: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install torch==2.13.0
	$(BIN)/pip install -e ".[dev,plot]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/psgrpo train

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check psgrpo tests benchmarks

warmstart: $(STAMP)
	$(BIN)/psgrpo warmstart

clean:
	rm -rf $(VENV) outputs runs .pytest_cache
