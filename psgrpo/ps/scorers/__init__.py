"""Step scorers: callables ``(prompts, steps, **columns) -> list[list[float]]``, one score per step.

Built-ins, by name (``step_scorer`` in :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`), in the
:data:`STEP_SCORERS` registry:

- ``arithmetic``: :class:`~psgrpo.ps.scorers.arithmetic.ArithmeticVerifier`, rule-based, no model;
- ``reference``: :class:`~psgrpo.ps.scorers.reference.ReferenceVerifier`, the verifier plus the gold
  solution's intermediate values (catches logic errors too; needs the ``solution`` column);
- ``prm``: :class:`~psgrpo.ps.scorers.prm.PRMScorer`, a Hugging Face process reward model
  (``step_scorer_kwargs={"model": "path/or/hub-id", "style": "token_classification" | "causal_lm"}``).

The pure text scorers import no torch: ``import psgrpo.ps.scorers.arithmetic`` works without it, and
``prm`` is imported the first time it is asked for. Any other callable with the same signature can be
passed to the trainer as ``step_scorer=``;
:func:`psgrpo.ps.signal.score_steps` checks what every scorer returns (once per batch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.registry import Registry

STEP_SCORERS: Registry[type] = Registry("step scorer")
STEP_SCORERS.register("arithmetic")(ArithmeticVerifier)
STEP_SCORERS.register("reference")(ReferenceVerifier)
STEP_SCORERS.register_lazy(
    "prm", "psgrpo.ps.scorers.prm:PRMScorer"
)  # torch and transformers: only when asked


def __getattr__(name: str) -> Any:  # `from psgrpo.ps.scorers import PRMScorer` imports torch then, not before
    if name == "PRMScorer":
        return STEP_SCORERS.get("prm")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_step_scorer(spec: str | Callable[..., Any], **kwargs: Any) -> Callable[..., list[list[float]]]:
    """A step scorer from a registered name (built with ``kwargs``) or a user callable (as it is)."""
    if callable(spec):
        return spec
    return STEP_SCORERS.get(spec)(**kwargs)


def check_scorer_columns(scorer: Any, dataset: Any, which: str = "training") -> None:
    """Fail before training when ``dataset`` lacks a column the scorer reads (its ``required_columns``).

    ``which`` names the dataset in the message (``training``, ``evaluation``, ``evaluation 'hard'``). A dataset
    that does not list its columns (a streamed one) is not checked here; the scorer then raises on the first
    batch.
    """
    required = getattr(scorer, "required_columns", ())
    columns = getattr(dataset, "column_names", None)
    if not required or columns is None:
        return
    missing = [name for name in required if name not in columns]
    if missing:
        raise ValueError(
            f"step scorer {type(scorer).__name__} reads the dataset columns {list(required)}, but the {which} "
            f"dataset lacks {missing} (it has {list(columns)}); use a dataset with gold worked solutions (arith, "
            "GSM8K) or step_scorer 'arithmetic'"
        )
