"""The tiny Qwen2 model of the embedded default.

It is the same ``Qwen2ForCausalLM`` class as Qwen2.5, only small, so every code path the
trainer takes on it is the one it takes on the real model.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedTokenizerBase, Qwen2Config, Qwen2ForCausalLM


def tiny_qwen2_config(
    vocab_size: int,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 384,
    max_position_embeddings: int = 512,
    pad_token_id: int | None = None,
    eos_token_id: int | None = None,
    tie_word_embeddings: bool = True,
    **extra: Any,
) -> Qwen2Config:
    """A small ``Qwen2Config`` (defaults: 4 layers × 128 wide, grouped-query attention, ~0.8M params).

    ``extra`` goes to ``Qwen2Config`` as it is (``num_labels`` for a PRM head, ``initializer_range``,
    ``attn_implementation`` …): the one place tests and benchmarks build tiny configs from.
    """
    return Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=tie_word_embeddings,
        use_sliding_window=False,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        bos_token_id=None,
        **extra,
    )


def build_tiny_model(
    tokenizer: PreTrainedTokenizerBase, seed: int = 0, vocab_size: int | None = None, **config_kwargs
) -> Qwen2ForCausalLM:
    """A randomly initialised tiny Qwen2 sized for ``tokenizer`` (fp32, eval mode off).

    ``vocab_size``: embedding rows, default ``len(tokenizer)``; more rows than ids, as Qwen2.5's
    151,936 for its 151,665 ids, are allowed (never sampled by a trained model, only computed).

    Raises:
        ValueError: when ``vocab_size`` is smaller than the tokenizer.
    """
    if vocab_size is not None and vocab_size < len(tokenizer):
        raise ValueError(f"vocab_size={vocab_size} is smaller than the tokenizer's {len(tokenizer)} ids")
    torch.manual_seed(seed)
    config = tiny_qwen2_config(
        vocab_size=vocab_size or len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **config_kwargs,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
    return model
