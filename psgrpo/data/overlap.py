"""Held-out rows that are also training rows: counted, and a warning when there are any.

The same GSM8K-style JSONL file given as ``--dataset`` is read as both the training and the
held-out split, so every "held-out" accuracy would be measured on training data. More generally
two files can share problems. Rows are matched on their ``question`` (whitespace-normalised), or
on their ``prompt`` where there is no question column.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


def row_key(row: Mapping[str, Any]) -> str:
    """What identifies a problem: its question, else its prompt (chat messages as JSON), whitespace-normalised."""
    value = row.get("question")
    if value is None:
        value = row.get("prompt")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return " ".join(text.split())


def count_shared_rows(train_rows: Iterable[Mapping[str, Any]], eval_rows: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``eval_rows`` ask a problem that is also in ``train_rows`` (each eval row counted once)."""
    seen = {row_key(row) for row in train_rows}
    return sum(row_key(row) in seen for row in eval_rows)


def overlap_warning(
    train_rows: Iterable[Mapping[str, Any]],
    eval_rows: Iterable[Mapping[str, Any]],
    dataset: str,
    eval_split: str,
) -> str | None:
    """The warning to log when held-out rows are also training rows, or ``None`` when none are."""
    eval_rows = list(eval_rows)
    shared = count_shared_rows(train_rows, eval_rows)
    if not shared:
        return None
    return (
        f"{shared} of the {len(eval_rows)} held-out rows ({dataset}, split {eval_split!r}) are also training rows, "
        "so the held-out figures are partly measured on training data (a --dataset that is one JSONL file is "
        "read as both splits: give a directory holding train.jsonl and test.jsonl)"
        + (" (here every held-out row is a training row)" if shared == len(eval_rows) else "")
    )
