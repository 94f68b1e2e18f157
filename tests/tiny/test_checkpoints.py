"""psgrpo.tiny.resolve_checkpoint: embedded checkpoints by name, everything else unchanged."""

from __future__ import annotations

import pytest

from psgrpo.loading import checkpoint_path
from psgrpo.tiny import CHECKPOINT_DIR, EMBEDDED_CHECKPOINTS, resolve_checkpoint


def test_names_and_paths_resolve():
    assert resolve_checkpoint(None) == str(CHECKPOINT_DIR) == resolve_checkpoint("embedded:arith")
    assert resolve_checkpoint("outputs/demo") == "outputs/demo"
    assert resolve_checkpoint("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    for name, folder in EMBEDDED_CHECKPOINTS.items():
        assert checkpoint_path(f"embedded:{name}") == resolve_checkpoint(f"embedded:{name}") == str(folder)


def test_unknown_embedded_name_lists_the_known_ones():
    with pytest.raises(
        ValueError, match=r"unknown embedded checkpoint 'embedded:gsm8k'; expected one of \['embedded:arith'"
    ):
        resolve_checkpoint("embedded:gsm8k")


@pytest.mark.parametrize("name", sorted(EMBEDDED_CHECKPOINTS))
def test_every_named_checkpoint_is_committed(name):
    folder = EMBEDDED_CHECKPOINTS[name]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}


def test_load_model_and_tokenizer_takes_embedded_names(monkeypatch):
    from psgrpo.loading import load_model_and_tokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, tokenizer = load_model_and_tokenizer("embedded:arith-hard")
    assert model.name_or_path == str(EMBEDDED_CHECKPOINTS["arith-hard"])
    assert tokenizer.decode(tokenizer("Step 1: 8 * 2 = 16")["input_ids"]) == "Step 1: 8 * 2 = 16"
