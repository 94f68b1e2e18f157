"""The embedded default: a character-level tokenizer, a tiny Qwen2 model and its warm start.

``psgrpo.tiny.checkpoint`` (committed, a few MB) is what ``psgrpo train`` starts from when no
model is given; ``psgrpo warmstart`` reproduces it. Further committed checkpoints (the
``arith-hard`` testbed's, in ``psgrpo/tiny/checkpoints/``) are named ``embedded:NAME`` wherever a
model path is accepted (:func:`resolve_checkpoint`).
"""

from __future__ import annotations

from pathlib import Path

TINY_DIR = Path(__file__).resolve().parent
CHECKPOINT_DIR = TINY_DIR / "checkpoint"
"""Where the committed warm-start checkpoint lives (model + tokenizer, HF format)."""

EMBEDDED_PREFIX = "embedded:"
EMBEDDED_CHECKPOINTS: dict[str, Path] = {
    "arith": CHECKPOINT_DIR,
    "arith-hard": TINY_DIR / "checkpoints" / "arith-hard",
}
"""Committed checkpoints by name: ``--model_name_or_path embedded:arith-hard``. ``arith-hard`` is the
credit-assignment testbed's warm start (held-out greedy accuracy 0.23 on arith-hard; docs/learning.md
has the two ``psgrpo warmstart`` commands that reproduce it)."""


def resolve_checkpoint(model_name_or_path: str | None) -> str:
    """The checkpoint to load: ``None`` → the embedded default, ``embedded:NAME`` → that committed
    checkpoint, anything else (a path or hub id) unchanged.

    Raises:
        ValueError: an unknown ``embedded:`` name (the message lists the known ones).
    """
    if model_name_or_path is None:
        return str(CHECKPOINT_DIR)
    if not model_name_or_path.startswith(EMBEDDED_PREFIX):
        return model_name_or_path
    name = model_name_or_path.removeprefix(EMBEDDED_PREFIX)
    if name not in EMBEDDED_CHECKPOINTS:
        raise ValueError(
            f"unknown embedded checkpoint {model_name_or_path!r}; expected one of "
            f"{[EMBEDDED_PREFIX + known for known in EMBEDDED_CHECKPOINTS]}"
        )
    return str(EMBEDDED_CHECKPOINTS[name])
