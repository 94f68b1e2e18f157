"""Which steps a step scorer *flags* (calls wrong): the one definition ``psgrpo score-steps`` uses.

A scorer returns one number per step; to compare it with people's labels of the first wrong step
(ProcessBench's format) each step is also called flagged or not, and the predicted first wrong
step is the first flagged one (-1 when none is):

- **rule-based verifiers** (:class:`~psgrpo.ps.scorers.arithmetic.ArithmeticVerifier` and its
  subclasses: ``arithmetic``, ``reference``): a step is flagged when the scorer judged it and it
  scores below the scorer's full score, :func:`full_score` (``correct_weight + necessary_weight``,
  plus ``reference_weight`` for ``reference``). A step the scorer did not judge (no equation it
  reads) gets the neutral score and is never flagged, whatever that score is. Judged are the steps
  with equations and, for ``reference``, the few it blames in words (a claim after the last
  equation, a conclusion stating a wrong answer, an announced wrong operation: score 0).
  ``--flag_below`` is not used.
- **any other scorer** (a process reward model, a registered callable): a step is flagged when
  its score is below ``flag_below`` (default 0.5, a PRM's "more likely wrong than right").

Whether a rule-based step was neutral is read from the scorer itself, not re-derived: the scorer
is run once as a copy whose ``neutral_score`` is NaN, so exactly the steps it scores as "no
equation" come back NaN; they then get the real neutral score.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.base import Prompt, validate_step_scores

FLAG_RULE = (
    "A step is flagged (called wrong) as follows; the predicted first wrong step is the first flagged one, or -1. "
    "Rule-based scorers ('arithmetic', 'reference'): the scorer judged the step (it states an equation, or "
    "'reference' blames it in words) and it scores below the scorer's full score (correct_weight + "
    "necessary_weight, + reference_weight for 'reference'); a step the scorer did not judge (neutral score) "
    "is never flagged. Any other scorer ('prm', a registered callable): the step "
    "scores below --flag_below."
)
""":data:`FLAG_RULE` in one paragraph, for ``--help`` and the summary."""

FULL_SCORE_TOLERANCE = 1e-9
"""A rule-based step scoring within this of the full score is not flagged (float sums of weights)."""


@dataclass(frozen=True)
class FlaggedSteps:
    """The scores and flags of a batch of completions.

    Attributes:
        scores: (N, S_i) the scorer's step scores (finite floats).
        flags: (N, S_i) whether each step is flagged.
        neutral: (N, S_i) whether each step stated no equation (rule-based scorers); ``None`` for others.
    """

    scores: list[list[float]]
    flags: list[list[bool]]
    neutral: list[list[bool]] | None = None


def is_rule_based(scorer: Any) -> bool:
    """Whether ``scorer`` is a rule-based verifier, flagged by :func:`full_score` instead of a threshold."""
    return isinstance(scorer, ArithmeticVerifier)


def full_score(scorer: ArithmeticVerifier) -> float:
    """The score of a step that states equations and passes every check of the verifier."""
    return scorer.correct_weight + scorer.necessary_weight + getattr(scorer, "reference_weight", 0.0)


def first_flag(flags: Sequence[bool]) -> int:
    """The 0-based index of the first flagged step, or -1 when no step is flagged."""
    return next((j for j, flagged in enumerate(flags) if flagged), -1)


def _name(scorer: Any) -> str:
    return getattr(scorer, "name", None) or type(scorer).__name__


def score_and_flag(
    scorer: Any,
    prompts: Sequence[Prompt],
    steps: Sequence[Sequence[str]],
    columns: dict[str, Sequence[Any]] | None = None,
    flag_below: float = 0.5,
) -> FlaggedSteps:
    """Score ``steps`` with ``scorer`` (``columns`` passed as keyword arguments) and flag them (module docstring).

    The scores are checked with :func:`~psgrpo.ps.scorers.base.validate_step_scores` (one finite
    float per step), as in training.
    """
    columns = columns or {}
    if not is_rule_based(scorer):
        scores = validate_step_scores(scorer(prompts, steps, **columns), steps, _name(scorer))
        return FlaggedSteps(scores, [[s < flag_below for s in row] for row in scores])
    probe = copy.copy(scorer)  # shares the counts and caches; only its neutral score differs
    probe.neutral_score = math.nan
    raw = probe(prompts, steps, **columns)
    neutral = [[isinstance(s, float) and math.isnan(s) for s in row] for row in raw]
    filled = [
        [scorer.neutral_score if is_neutral else s for s, is_neutral in zip(row, marks, strict=True)]
        for row, marks in zip(raw, neutral, strict=True)
    ]
    scores = validate_step_scores(filled, steps, _name(scorer))
    threshold = full_score(scorer) - FULL_SCORE_TOLERANCE
    flags = [
        [not is_neutral and s < threshold for s, is_neutral in zip(row, marks, strict=True)]
        for row, marks in zip(scores, neutral, strict=True)
    ]
    return FlaggedSteps(scores, flags, neutral)
