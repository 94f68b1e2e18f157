"""Tests for psgrpo.tiny.model: the tiny randomly initialised Qwen2 of the embedded default."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2ForCausalLM

from psgrpo.tiny.model import build_tiny_model, tiny_qwen2_config
from psgrpo.tiny.tokenizer import build_char_tokenizer

BATCH = ["Question: Mia has 7 pens.\n", "<reasoning>\nStep 1: 7 + 5 = 12\n</reasoning>\n<answer>12</answer>"]


@pytest.fixture(scope="module")
def tok():
    return build_char_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return build_tiny_model(tok).eval()


@pytest.fixture(scope="module")
def batch(tok):
    return tok(BATCH, padding=True, return_tensors="pt")


def logits_of(model, batch):
    with torch.no_grad():
        return model(**batch).logits


def test_is_a_qwen2_causal_lm(model):
    assert isinstance(model, Qwen2ForCausalLM)


def test_vocab_size_matches_tokenizer(model, tok):
    assert model.config.vocab_size == len(tok)
    assert model.get_input_embeddings().num_embeddings == len(tok)


def test_parameter_count_is_small(model):
    assert sum(p.numel() for p in model.parameters()) < 2_000_000


def test_default_architecture(model):
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers) == (128, 4)
    assert (config.num_attention_heads, config.num_key_value_heads) == (4, 2)
    assert config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def test_parameters_are_fp32(model):
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_config_kwargs_are_forwarded(tok):
    small = build_tiny_model(tok, hidden_size=64, num_layers=2, intermediate_size=128)
    config = small.config
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (64, 2, 128)


def test_vocab_size_may_pad_the_tokenizer_but_not_cut_it(tok):
    padded = build_tiny_model(
        tok, vocab_size=len(tok) + 30, hidden_size=16, num_layers=1, intermediate_size=32
    )
    assert padded.get_input_embeddings().num_embeddings == padded.config.vocab_size == len(tok) + 30
    with pytest.raises(ValueError, match=f"vocab_size=10 is smaller than the tokenizer's {len(tok)} ids"):
        build_tiny_model(tok, vocab_size=10)


def test_config_token_ids():
    config = tiny_qwen2_config(vocab_size=10, pad_token_id=0, eos_token_id=1)
    assert config.vocab_size == 10
    assert (config.pad_token_id, config.eos_token_id, config.bos_token_id) == (0, 1, None)


def test_batch_is_left_padded(batch, tok):
    assert batch["input_ids"][0, 0].item() == tok.pad_token_id
    assert batch["attention_mask"][0, 0].item() == 0
    assert batch["attention_mask"][1].all()


def test_forward_on_left_padded_batch(model, batch, tok):
    logits = logits_of(model, batch)
    assert logits.shape == (2, batch["input_ids"].shape[1], len(tok))
    assert not torch.isnan(logits).any()
    assert torch.isfinite(logits).all()


def test_same_seed_gives_identical_weights(tok):
    a, b = build_tiny_model(tok, seed=3), build_tiny_model(tok, seed=3)
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(pa, pb), name


def test_different_seeds_give_different_weights(tok):
    a, b = build_tiny_model(tok, seed=0), build_tiny_model(tok, seed=1)
    assert not torch.equal(a.get_input_embeddings().weight, b.get_input_embeddings().weight)


def test_generation_config_matches_tokenizer(model, tok):
    assert model.generation_config.pad_token_id == tok.pad_token_id == 0
    assert model.generation_config.eos_token_id == tok.eos_token_id == 1
    assert model.generation_config.bos_token_id is None
    assert (model.config.pad_token_id, model.config.eos_token_id) == (0, 1)


def test_save_and_load_gives_identical_logits(model, batch, tmp_path):
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(reloaded, Qwen2ForCausalLM)
    torch.testing.assert_close(logits_of(reloaded, batch), logits_of(model, batch), rtol=0, atol=0)


def test_save_and_load_keeps_generation_config(model, tok, tmp_path):
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert reloaded.generation_config.pad_token_id == tok.pad_token_id
    assert reloaded.generation_config.eos_token_id == tok.eos_token_id
