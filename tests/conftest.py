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
