"""The step-scorer interface and its output check.

Every step scorer is a callable ``(prompts, steps, **columns) -> list[list[float]]``: for the
whole rollout batch at once, one finite float per step per completion. ``prompts[i]`` is a plain
string or a chat message list (``[{"role": "user", "content": ...}]``), ``steps[i]`` the step texts
of completion ``i``, and ``columns`` the dataset's other columns (one value per completion).

``validate_step_scores`` checks that contract and is shared by all scorers, so a bad score is
reported where it is made, with the scorer's name and the sample index, instead of surfacing later
as a shape error or a NaN loss. :func:`psgrpo.ps.signal.score_steps` applies it to every scorer's
output, a user's function included::

    def length_penalty(prompts, steps, **columns):
        return [[-len(step) / 100 for step in sample] for sample in steps]

    ProcessGRPOTrainer(..., step_scorer=length_penalty)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Prompt = str | list[dict[str, Any]]
"""A plain-text prompt or a chat message list."""

StepScoreFn = Callable[..., Sequence[Sequence[float]]]
"""``(prompts, steps, **columns) -> list[list[float]]``."""


class StepScoreError(ValueError):
    """A step scorer failed or returned scores that break the contract (shape, type, finiteness)."""


def question_text(prompt: Prompt) -> str:
    """The question a prompt asks: the string itself, or the content of the last user message.

    Message content may be a string or a list of parts (``{"type": "text", "text": ...}``), whose
    text parts are concatenated.
    """
    if isinstance(prompt, str):
        return prompt
    user_messages = [m for m in prompt if m.get("role") == "user"]
    if not user_messages:
        raise ValueError(f"chat prompt has no user message: roles {[m.get('role') for m in prompt]}")
    content = user_messages[-1].get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


def _as_score(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` if it is not a finite number (strings are not numbers)."""
    if isinstance(value, (str, bytes)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def validate_step_scores(scores: Any, steps: Sequence[Sequence[str]], scorer_name: str) -> list[list[float]]:
    """Check a scorer's output against ``steps`` and return it as plain ``list[list[float]]``.

    Raises ``StepScoreError`` naming ``scorer_name``, the sample index and expected vs got when the
    outer length is not ``len(steps)``, sample ``i`` does not have ``len(steps[i])`` scores, or a
    score is not a finite number (NaN, ±inf, a string, ``None`` …).
    """
    prefix = f"step scorer {scorer_name!r}"
    if isinstance(scores, (str, bytes)) or not hasattr(scores, "__len__"):
        raise StepScoreError(
            f"{prefix}: expected a list of {len(steps)} score lists, got {type(scores).__name__}"
        )
    if len(scores) != len(steps):
        raise StepScoreError(f"{prefix}: expected scores for {len(steps)} samples, got {len(scores)}")
    checked: list[list[float]] = []
    for i, (sample_scores, sample_steps) in enumerate(zip(scores, steps, strict=True)):
        if isinstance(sample_scores, (str, bytes)) or not hasattr(sample_scores, "__len__"):
            raise StepScoreError(
                f"{prefix}: sample {i}: expected a list of {len(sample_steps)} scores, "
                f"got {type(sample_scores).__name__}"
            )
        if len(sample_scores) != len(sample_steps):
            raise StepScoreError(
                f"{prefix}: sample {i}: expected {len(sample_steps)} scores (one per step), got {len(sample_scores)}"
            )
        row = []
        for j, value in enumerate(sample_scores):
            number = _as_score(value)
            if number is None:
                raise StepScoreError(
                    f"{prefix}: sample {i}, step {j}: expected a finite number, got {value!r}"
                )
            row.append(number)
        checked.append(row)
    return checked
