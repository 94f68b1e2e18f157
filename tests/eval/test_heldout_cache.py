"""psgrpo.eval.heldout_cache: the step-0 evaluation is reused only when everything it depends on is the same."""

from __future__ import annotations

import json
import logging

import pytest
import torch

from psgrpo.data.arith import make_arith_dataset
from psgrpo.eval import heldout_cache
from psgrpo.tiny.model import build_tiny_model

SETTINGS = {"max_new_tokens": 8, "batch_size": 4, "bf16": False, "fp16": False, "device": "cpu"}


@pytest.fixture
def parts(char_tokenizer):
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    return model, char_tokenizer, make_arith_dataset("test", n=4)


def test_key_is_stable_and_sees_every_input(parts, char_tokenizer):
    model, tokenizer, rows = parts
    key = heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS)
    assert key == heldout_cache.evaluation_key(model, tokenizer, rows, dict(SETTINGS))
    assert len(key) == 64
    changed = [heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS | {"batch_size": 2})]
    changed.append(heldout_cache.evaluation_key(model, tokenizer, rows.select(range(3)), SETTINGS))
    other_rows = rows.map(lambda r, i: {"answer": str(i)} if i == 3 else {}, with_indices=True)
    changed.append(heldout_cache.evaluation_key(model, tokenizer, other_rows, SETTINGS))
    with torch.no_grad():  # one weight, by the smallest step its dtype has
        weight = next(model.parameters())
        weight.view(-1)[0] = torch.nextafter(weight.view(-1)[0], torch.tensor(float("inf")))
    changed.append(heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS))
    side = tokenizer.padding_side
    tokenizer.padding_side = "right" if side == "left" else "left"
    try:
        changed.append(heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS))
    finally:
        tokenizer.padding_side = side
    model.generation_config.repetition_penalty = 1.3
    changed.append(heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS))
    assert len({key, *changed}) == len(changed) + 1  # every change is a new key, and all differ


def test_key_follows_psgrpo_source(parts, monkeypatch):
    model, tokenizer, rows = parts
    key = heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS)
    assert len(heldout_cache.source_digest()) == 64
    monkeypatch.setattr(heldout_cache, "source_digest", lambda: "an edited metric")
    assert heldout_cache.evaluation_key(model, tokenizer, rows, SETTINGS) != key


def test_store_and_load(tmp_path, caplog):
    assert heldout_cache.load(tmp_path, "k" * 64) is None
    heldout_cache.store(tmp_path / "cache", "a" * 64, {"accuracy": 0.25}, 1.5)
    assert heldout_cache.load(tmp_path / "cache", "a" * 64) == {
        "key": "a" * 64,
        "metrics": {"accuracy": 0.25},
        "eval_seconds": 1.5,
    }
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["a" * 64 + ".json"]  # no temporary left
    (tmp_path / "cache" / ("b" * 64 + ".json")).write_text('{"key": "bb')  # cut short
    (tmp_path / "cache" / ("c" * 64 + ".json")).write_text(json.dumps({"key": "a" * 64, "metrics": {}}))
    with caplog.at_level(logging.WARNING, logger="psgrpo.eval.heldout_cache"):
        assert heldout_cache.load(tmp_path / "cache", "b" * 64) is None
        assert heldout_cache.load(tmp_path / "cache", "c" * 64) is None
    assert "unreadable" in caplog.text and "does not match its name" in caplog.text
