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
about 0.004, and its 95 % interval reaches about 0.05 either side. It is sampling noise only: a
scorer tuned on the same files is also optimistic by an amount no interval over them can show.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


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
    metrics: dict[str, Any], confidence: float = 0.95, draws: int = 10_000, seed: int = 0
) -> tuple[float, float] | None:
    """An interval for ProcessBench's ``f1``: each class's accuracy uncertain on its own, the two
    propagated through the harmonic mean.

    ``error_acc`` is ``exact`` hits in ``wrong_rows`` solutions and ``correct_acc`` unflagged ones in
    ``correct_rows``; each is drawn from its Jeffreys distribution, Beta(k + ½, n − k + ½), and the
    interval is the central ``confidence`` share of the ``draws`` F1 values. For classes of hundreds
    of solutions this is the stratified bootstrap's interval (within 0.003 on the dev files' counts);
    unlike the bootstrap, an accuracy of 0 or 1 on a few solutions still gives a wide interval (1
    wrong solution found of 1: error_acc between about 0.15 and 1). Seeded: the same counts give the
    same interval. It always holds ``f1`` itself (at 0 or 1 the draws never reach it).

    Args:
        metrics: what :func:`first_error_metrics` returns.
        confidence: the interval's coverage, in (0, 1).
        draws: simulated (error_acc, correct_acc) pairs, ≥ 1.
        seed: the random generator's seed.

    Returns:
        ``(low, high)``, shares in [0, 1]; ``None`` when ``f1`` is undefined (no wrong or no correct solution).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws!r}")
    if metrics["f1"] is None:
        return None
    rng = random.Random(seed)
    found, wrong = metrics["exact"], metrics["wrong_rows"]
    unflagged, correct = metrics["correct_rows"] - metrics["false_blame"], metrics["correct_rows"]
    f1 = sorted(
        harmonic_mean(
            rng.betavariate(found + 0.5, wrong - found + 0.5),
            rng.betavariate(unflagged + 0.5, correct - unflagged + 0.5),
        )
        for _ in range(draws)
    )
    tail = (1 - confidence) / 2
    low, high = f1[int(tail * (draws - 1))], f1[round((1 - tail) * (draws - 1))]
    # Jeffreys' boundary rule (Brown, Cai & DasGupta 2001): an accuracy of 1 reaches 1, of 0 reaches 0, so the
    # interval holds the F1 it is printed beside (5 of 5 found and 5 of 5 unflagged: F1 1.0, not "42.8–99.5 %")
    return min(low, metrics["f1"]), max(high, metrics["f1"])
