"""Loading checkpoints and recipes: the embedded default, local directories, hub ids.

``None`` as a model path means the embedded warm-started tiny checkpoint
(``psgrpo/tiny/checkpoint``); no ``--config`` means the embedded demo recipe
(``psgrpo/recipes/demo.yaml``). Every command loads through here, so a bad path fails the same
way everywhere: with the path and what was expected, before anything else is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
DEFAULT_RECIPE = RECIPES_DIR / "demo.yaml"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def with_default_recipe(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--config <demo recipe>`` in front when it names no config file."""
    argv = list(argv)
    return argv if "--config" in argv else ["--config", str(DEFAULT_RECIPE), *argv]


def looks_like_local_path(name: str) -> bool:
    """Whether ``name`` can only be a filesystem path, not a hub id (``name`` or ``namespace/name``)."""
    return (
        name.startswith(("/", "./", "../", "~", "."))
        or name.count("/") > 1
        or os.sep != "/"
        and os.sep in name
        or Path(name).exists()
    )


def checkpoint_path(model_name_or_path: str | None) -> str:
    """The checkpoint to load: the given path or hub id, the embedded checkpoint for ``None``, or a
    committed one for ``embedded:NAME`` (:func:`psgrpo.tiny.resolve_checkpoint`).

    Raises:
        FileNotFoundError: when ``model_name_or_path`` is a filesystem path that does not exist.
        ValueError: an unknown ``embedded:`` name.
    """
    from psgrpo.tiny import EMBEDDED_PREFIX, resolve_checkpoint

    if model_name_or_path is None or model_name_or_path.startswith(EMBEDDED_PREFIX):
        return resolve_checkpoint(model_name_or_path)
    if looks_like_local_path(model_name_or_path) and not Path(model_name_or_path).expanduser().exists():
        raise FileNotFoundError(
            f"model path {model_name_or_path} does not exist: give a checkpoint directory (config.json + weights "
            "+ tokenizer) or a hub id such as Qwen/Qwen2.5-0.5B-Instruct"
        )
    return (
        str(Path(model_name_or_path).expanduser())
        if looks_like_local_path(model_name_or_path)
        else model_name_or_path
    )


def load_tokenizer(model_name_or_path: str | None):
    """Load a checkpoint's tokenizer (pad token = EOS when it has none); ``None`` means the embedded one.

    Raises:
        ValueError with the path when a local checkpoint has no tokenizer files.
    """
    from transformers import AutoTokenizer

    path = checkpoint_path(model_name_or_path)
    local = Path(path)
    if local.is_dir() and not any((local / name).exists() for name in TOKENIZER_FILES):
        raise ValueError(
            f"checkpoint {path} has no tokenizer (no {' / '.join(TOKENIZER_FILES)}): save it with "
            "tokenizer.save_pretrained(path) next to the model"
        )
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model_and_tokenizer(model_name_or_path: str | None, dtype: str | None = None, **kwargs: Any):
    """Load a causal LM and its tokenizer; ``None`` means the embedded checkpoint.

    Raises:
        FileNotFoundError for a local path that does not exist; ValueError with the path when the
        checkpoint lacks a tokenizer.
    """
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(model_name_or_path)
    path = checkpoint_path(model_name_or_path)
    torch_dtype = getattr(torch, dtype) if dtype not in (None, "auto") else dtype
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs)
    return model, tokenizer


def load_policy(model_args: Any, trust_remote_code: bool = False):
    """:func:`load_model_and_tokenizer` with the options of TRL's ``ModelConfig`` (``train``, ``inspect``)."""
    return load_model_and_tokenizer(
        model_args.model_name_or_path,
        dtype=model_args.dtype,
        attn_implementation=model_args.attn_implementation,
        revision=model_args.model_revision,
        trust_remote_code=trust_remote_code,
    )
