"""How well predicted first wrong steps match labelled ones: ProcessBench's metrics (arXiv 2412.06559).

Each solution has a ``label``, the 0-based index of its first wrong step or -1 when every step is
right, and a ``prediction`` of the same kind (``psgrpo score-steps``: the first step the scorer
flags). ProcessBench scores a critic by

- ``error_acc``: on solutions with an error (label ≥ 0), the share whose prediction is exactly the label;
- ``correct_acc``: on correct solutions (label -1), the share predicted -1 (no step flagged);
- ``f1``: their harmonic mean, 2·a·b / (a + b) (0 when both are 0),

as in ProcessBench's evaluation code (``code/run_eval_prm_trl.py``: accuracy on ``label != -1`` and
on ``label == -1``, then ``2 * acc1 * acc2 / (acc1 + acc2)``). On the wrong solutions this module
also counts where the prediction falls: ``exact``, ``early`` (a step before the label),
``late`` (after it) and ``never`` (-1), and ``flagged_any``, the share with any prediction ≥ 0.
A metric over no solution is ``None`` (JSON ``null``): a file of correct solutions only has no
``error_acc`` and no ``f1``.

:func:`f1_interval` says how far ``f1`` could move on another draw of as many solutions: with 156
wrong solutions and 976 correct ones at F1 0.80, one exact prediction more or less moves it by
about 0.004, and its 95 % interval is about ±0.05 wide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def harmonic_mean(a: float | None, b: float | None) -> float | None:
    """2·a·b / (a + b); 0.0 when both are 0, ``None`` when either is ``None``."""
    if a is None or b is None:
        return None
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def first_error_metrics(labels: Sequence[int], predictions: Sequence[int]) -> dict[str, Any]:
    """ProcessBench's metrics and where the predictions on wrong solutions fall (module docstring).

    Args:
        labels: per solution, the first wrong step (0-based) or -1.
        predictions: per solution, the predicted first wrong step or -1.

    Returns:
        ``error_acc``, ``correct_acc``, ``f1``, ``flagged_any`` (shares in [0, 1] or ``None``) and the
        counts ``rows``, ``wrong_rows``, ``correct_rows``, ``exact``, ``early``, ``late``, ``never``,
        ``false_blame`` (correct solutions with a step flagged).
    """
    if len(labels) != len(predictions):
        raise ValueError(f"got {len(labels)} labels but {len(predictions)} predictions")
    for name, values in (("label", labels), ("prediction", predictions)):
        bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, int) or v < -1), None)
        if bad is not None:
            raise ValueError(f"a {name} must be an integer ≥ -1 (a step index, or -1 for none), got {bad!r}")
    wrong = [(y, p) for y, p in zip(labels, predictions, strict=True) if y >= 0]
    correct = [p for y, p in zip(labels, predictions, strict=True) if y < 0]
    counts = {
        "rows": len(labels),
        "wrong_rows": len(wrong),
        "correct_rows": len(correct),
        "exact": sum(p == y for y, p in wrong),
        "early": sum(0 <= p < y for y, p in wrong),
        "late": sum(p > y for y, p in wrong),
        "never": sum(p < 0 for _, p in wrong),
        "false_blame": sum(p >= 0 for p in correct),
    }
    error_acc = counts["exact"] / len(wrong) if wrong else None
    correct_acc = (len(correct) - counts["false_blame"]) / len(correct) if correct else None
    return {
        "error_acc": error_acc,
        "correct_acc": correct_acc,
        "f1": harmonic_mean(error_acc, correct_acc),
        "flagged_any": (len(wrong) - counts["never"]) / len(wrong) if wrong else None,
        **counts,
    }


def f1_interval(
    metrics: dict[str, Any], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of ProcessBench's ``f1``, stratified by class.

    Each resample redraws, with replacement, as many wrong solutions and as many correct ones as
    ``metrics`` counts, so a resample's exact predictions are Binomial(wrong_rows, error_acc) and its
    unflagged correct solutions Binomial(correct_rows, correct_acc); its F1 is their harmonic mean.
    Seeded: the same counts give the same interval.

    Args:
        metrics: what :func:`first_error_metrics` returns.
        confidence: the interval's coverage, in (0, 1).
        resamples: bootstrap draws.
        seed: the random generator's seed.

    Returns:
        ``(low, high)``, shares in [0, 1]; ``None`` when ``f1`` is undefined (no wrong or no correct solution).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if metrics["f1"] is None:
        return None
    rng = np.random.default_rng(seed)
    n_wrong, n_correct = metrics["wrong_rows"], metrics["correct_rows"]
    a = rng.binomial(n_wrong, metrics["error_acc"], resamples) / n_wrong  # (resamples,)
    b = rng.binomial(n_correct, metrics["correct_acc"], resamples) / n_correct  # (resamples,)
    total = a + b
    f1 = np.divide(2 * a * b, total, out=np.zeros_like(total), where=total > 0)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(f1, [tail, 100 - tail])
    return float(low), float(high)
