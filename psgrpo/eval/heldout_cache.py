"""A content-addressed cache of greedy held-out evaluations, for the step-0 point of many runs.

``psgrpo compare`` trains every (arm, seed) from the same checkpoint and evaluates each at step 0
on the same held-out rows, greedily: the same computation every time (about 8 % of a 60-step
arith-hard run on 2 CPU cores). The cache keys an evaluation by everything its result depends on,
and reuses it only when all of that is byte-for-byte the same:

- the weights: every tensor of the model's ``state_dict`` (name, dtype, shape, bytes), so a LoRA
  adapter initialised with another seed, or another checkpoint, is another key;
- the tokenizer: its class, vocabulary, special tokens, padding side and chat template;
- the model's generation config, the evaluation settings (``max_new_tokens``, ``batch_size``:
  padding changes the numerics) and the precision (``bf16``/``fp16`` autocast, device type);
- every held-out row (all columns, JSON-serialised), the versions of torch and transformers, and
  psgrpo's own source (every ``.py`` file of the package, so an edited metric is a new key even
  while the version number stands still).

A hit costs a hash of the weights and rows (0.16 s for the arith-hard checkpoint and 1,000 rows on one AVX2 core). Files are
``<sha256>.json`` in the cache folder, written atomically (temporary file, then rename), so two
processes sharing the folder never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

KEY_VERSION = "1"  # bump when what the evaluation computes changes without any input changing


def source_digest() -> str:
    """sha256 of every ``.py`` file of the installed psgrpo package (relative path and bytes), in path order."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _update_json(digest: Any, value: Any) -> None:
    digest.update(json.dumps(value, sort_keys=True, default=str).encode())
    digest.update(b"\0")


def evaluation_key(
    model: Any,
    tokenizer: Any,
    rows: Any,
    settings: Mapping[str, Any],
) -> str:
    """The sha256 hex digest of everything a greedy evaluation of ``model`` on ``rows`` depends on.

    Args:
        model: the (unwrapped) ``PreTrainedModel`` as it will generate.
        tokenizer: its tokenizer.
        rows: the held-out rows (a ``datasets.Dataset`` or any iterable of dicts).
        settings: the evaluation's other inputs (generation length, batch size, precision, device).
    """
    import torch
    import transformers

    import psgrpo

    digest = hashlib.sha256()
    _update_json(
        digest,
        {
            "key_version": KEY_VERSION,
            "versions": [torch.__version__, transformers.__version__, psgrpo.__version__, source_digest()],
            "settings": dict(settings),
            "model_class": type(model).__name__,
            "generation_config": getattr(getattr(model, "generation_config", None), "to_dict", dict)(),
        },
    )
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().to("cpu").contiguous()
        _update_json(digest, [name, str(data.dtype), list(data.shape)])
        digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    _update_json(
        digest,
        {
            "class": type(tokenizer).__name__,
            "vocab": sorted(tokenizer.get_vocab().items()),
            "special": getattr(tokenizer, "all_special_tokens", []),
            "padding_side": getattr(tokenizer, "padding_side", None),
            "pad_token_id": getattr(tokenizer, "pad_token_id", None),
            "eos_token_id": getattr(tokenizer, "eos_token_id", None),
            "chat_template": getattr(tokenizer, "chat_template", None),
        },
    )
    for row in rows:
        _update_json(digest, row)
    return digest.hexdigest()


def load(cache_dir: str | Path, key: str) -> dict[str, Any] | None:
    """The cached record ``{"metrics": {...}, "eval_seconds": s}`` of ``key``, or None (also for an unreadable file)."""
    path = Path(cache_dir) / f"{key}.json"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # a damaged entry is recomputed (and overwritten), never trusted
        logger.warning("%s: unreadable held-out cache entry, evaluating again (%s)", path, err)
        return None
    if record.get("key") != key or not isinstance(record.get("metrics"), dict):
        logger.warning("%s: held-out cache entry does not match its name, evaluating again", path)
        return None
    return record


def store(cache_dir: str | Path, key: str, metrics: Mapping[str, float], eval_seconds: float) -> None:
    """Write ``metrics`` under ``key`` atomically (a reader sees the old file, the new one, or none)."""
    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"key": key, "metrics": dict(metrics), "eval_seconds": eval_seconds}
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(tmp, folder / f"{key}.json")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
