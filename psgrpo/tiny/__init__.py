"""The embedded default: a character-level tokenizer, a tiny Qwen2 model and its warm start.

``psgrpo.tiny.checkpoint`` (committed, a few MB) is what ``psgrpo train`` starts from when no
model is given; ``psgrpo warmstart`` reproduces it.
"""

from __future__ import annotations

from pathlib import Path

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoint"
"""Where the committed warm-start checkpoint lives (model + tokenizer, HF format)."""
