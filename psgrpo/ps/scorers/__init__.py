"""Step scorers: callables ``(prompts, steps, **columns) -> list[list[float]]``, one score per step.

Built-ins, by name (``step_scorer`` in :class:`~psgrpo.config.ProcessGRPOConfig`), in the
:data:`STEP_SCORERS` registry:

- ``arithmetic``: :class:`~psgrpo.ps.scorers.arithmetic.ArithmeticVerifier`, rule-based, no model;
- ``prm``: :class:`~psgrpo.ps.scorers.prm.PRMScorer`, a Hugging Face process reward model
  (``step_scorer_kwargs={"model": "path/or/hub-id", "style": "token_classification" | "causal_lm"}``).

Any other callable with the same signature can be passed to the trainer as ``step_scorer=``;
:func:`psgrpo.ps.signal.score_steps` checks what every scorer returns (once per batch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.prm import PRMScorer
from psgrpo.registry import Registry

STEP_SCORERS: Registry[type] = Registry("step scorer")
STEP_SCORERS.register("arithmetic")(ArithmeticVerifier)
STEP_SCORERS.register("prm")(PRMScorer)


def build_step_scorer(spec: str | Callable[..., Any], **kwargs: Any) -> Callable[..., list[list[float]]]:
    """A step scorer from a registered name (built with ``kwargs``) or a user callable (as it is)."""
    if callable(spec):
        return spec
    return STEP_SCORERS.get(spec)(**kwargs)
