"""Step scorers: callables ``(prompts, steps, **columns) -> list[list[float]]``, one score per step.

Built-ins, by name (``step_scorer`` in :class:`~psgrpo.config.ProcessGRPOConfig`):

- ``arithmetic``: :class:`~psgrpo.scorers.arithmetic.ArithmeticVerifier`, rule-based, no model;
- ``prm``: :class:`~psgrpo.scorers.prm.PRMScorer`, a Hugging Face process reward model
  (``step_scorer_kwargs={"model": "path/or/hub-id", "style": "token_classification" | "causal_lm"}``).

Any other callable with the same signature is wrapped in
:class:`~psgrpo.scorers.base.CallableScorer`, which validates what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

STEP_SCORERS = ("arithmetic", "prm")


def step_scorer_class(name: str) -> type:
    """The class that the built-in step scorer ``name`` builds (imports it; loads no model)."""
    if name == "arithmetic":
        from psgrpo.scorers.arithmetic import ArithmeticVerifier

        return ArithmeticVerifier
    if name == "prm":
        from psgrpo.scorers.prm import PRMScorer

        return PRMScorer
    raise ValueError(f"unknown step scorer {name!r}; built-ins: {list(STEP_SCORERS)}, or pass a callable")


def build_step_scorer(spec: str | Callable[..., Any], **kwargs: Any) -> Callable[..., list[list[float]]]:
    """A step scorer from a built-in name (with its keyword arguments) or a user callable."""
    if callable(spec):
        from psgrpo.scorers.base import CallableScorer

        return CallableScorer(spec)
    scorer_class = step_scorer_class(spec)
    if spec == "prm":
        if "model" not in kwargs:
            raise ValueError('step_scorer="prm" needs step_scorer_kwargs={"model": "<path or hub id>", ...}')
        return scorer_class(kwargs.pop("model"), **kwargs)
    return scorer_class(**kwargs)
