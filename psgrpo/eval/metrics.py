"""Evaluation metrics, as pure functions of completion texts: pass@k, error types, step completeness.

What ``psgrpo eval`` reports (docs/evaluation.md has the full definitions and examples):

* :func:`pass_at_k`: the unbiased pass@k estimator of Chen et al. (2021) from ``n`` samples of
  which ``c`` are correct, ``1 - C(n-c, k) / C(n, k)``, computed as a stable product.
* :func:`check_steps`: the completion is cut into steps by a segmenter of
  :mod:`psgrpo.ps.segmentation` and each step's arithmetic is checked by the PS-GRPO verifier
  (:func:`psgrpo.ps.scorers.arithmetic.score_steps`). A step is *verified* when every equation it
  states holds, *failed* when one does not, and *unchecked* when it states none (prose, tags, a
  final answer): unchecked steps neither verify nor fail.
* A completion is **step-complete** when it has at least one checked step and every checked
  step verifies (so a completion without any written arithmetic is never step-complete).
* :func:`classify_error`, first match wins:

  ==============  ==============================================================================
  ``correct``     the extracted answer equals the gold answer exactly (``grade_answer`` with
                  ``rel_tol=0``; ``1,000`` equals ``1000``, ``99.5`` does not equal ``100``)
  ``format``      no parsable answer (:func:`psgrpo.rewards.functions.extract_answer` gives ``None``)
  ``calculation`` the answer is wrong and at least one checked step fails
  ``logic``       the answer is wrong and no checked step fails (including completions whose
                  steps are all unchecked: there is no arithmetic to blame)
  ==============  ==============================================================================

* :func:`summarize` aggregates graded samples (``P`` prompts × ``n`` samples) into the flat
  ``dict[str, float]`` that :func:`psgrpo.eval.generation.evaluate_model` returns.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.ps.segmentation import TextSegmenter, get_segmenter
from psgrpo.rewards.functions import FORMAT_TAGS, TAG_REWARD, extract_answer, format_score, grade_answer

ErrorType = Literal["correct", "format", "calculation", "logic"]
ERROR_TYPES: tuple[ErrorType, ...] = ("correct", "format", "calculation", "logic")
"""Every error type, in the order :func:`classify_error` tests them."""

FULL_FORMAT_SCORE = TAG_REWARD * len(FORMAT_TAGS)
"""The format reward of a completion using all four tags properly (0.8): "format compliant"."""

VERIFIER_REL_TOL = 1e-6
"""Relative tolerance of ``lhs = rhs`` in step checks: the PS-GRPO verifier's default."""

# -----------------------------------------------------------------------------
# pass@k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct (Chen et al., 2021, eq. 1).

    The probability that ``k`` samples drawn without replacement from the ``n`` include a correct
    one: ``1 - C(n-c, k) / C(n, k)``, computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)`` so that large
    ``n`` never builds huge binomials. ``pass_at_k(n, c, 1) == c / n``.

    Raises:
        ValueError: unless ``1 <= k <= n`` and ``0 <= c <= n`` (all integers).
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"pass_at_k needs integers; {name}={value!r}")
    if n < 1:
        raise ValueError(f"pass_at_k needs at least one sample, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: the number correct c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n, but there are n={n} samples per prompt")
    if n - c < k:  # every draw of k samples contains a correct one
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def check_pass_k(pass_k: Sequence[int], num_samples: int) -> None:
    """Every ``k`` must be an integer in ``[1, num_samples]`` (pass@k estimates from ``num_samples`` draws).

    Raises:
        ValueError: naming the bad ``k`` and how to fix it.
    """
    bad = [k for k in pass_k if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad:
        raise ValueError(f"pass_k values must be positive integers, got {bad}")
    too_large = [k for k in pass_k if k > num_samples]
    if too_large:
        raise ValueError(
            f"pass@k for k={too_large} needs at least {max(too_large)} samples per prompt, but num_samples="
            f"{num_samples}: raise num_samples (CLI: --num_samples {max(too_large)} --do_sample true) "
            f"or drop those k"
        )


# -----------------------------------------------------------------------------
# steps and error types


@dataclass(frozen=True)
class StepCheck:
    """The arithmetic verdict on each step of one completion.

    Attributes:
        verdicts: one entry per step: ``True`` (every equation holds), ``False`` (one fails) or
            ``None`` (the step states no checkable equation).
    """

    verdicts: tuple[bool | None, ...]

    @property
    def n_steps(self) -> int:
        """Number of steps the segmenter found."""
        return len(self.verdicts)

    @property
    def n_checked(self) -> int:
        """Steps stating at least one equation."""
        return sum(v is not None for v in self.verdicts)

    @property
    def n_verified(self) -> int:
        """Checked steps whose equations all hold."""
        return sum(v is True for v in self.verdicts)

    @property
    def has_failed_step(self) -> bool:
        """Whether some checked step states an equation that does not hold."""
        return any(v is False for v in self.verdicts)

    @property
    def complete(self) -> bool:
        """Step-complete: at least one checked step, and every checked step verifies."""
        return self.n_checked > 0 and not self.has_failed_step


def check_steps(
    text: str, segmenter: TextSegmenter | None = None, rel_tol: float = VERIFIER_REL_TOL
) -> StepCheck:
    """Cut ``text`` into steps (default: the ``markers`` segmenter, ``Step N:``) and check each one.

    A step verifies when the arithmetic verifier's ``correct`` fraction is 1 (all its equations
    hold); ``None`` marks a step without equations.
    """
    segmenter = segmenter or get_segmenter("markers")
    steps = [text[start:end] for start, end in segmenter(text)]
    verdicts = score_steps(steps, extract_answer(text), rel_tol)
    return StepCheck(tuple(None if v.correct is None else v.correct == 1.0 for v in verdicts))


def classify_error(answer: str | None, correct: bool, steps: StepCheck) -> ErrorType:
    """The error type of one completion from its extracted answer, correctness and step check.

    See the module docstring for the rules; ``correct`` wins over everything, then a missing answer.
    """
    if correct:
        return "correct"
    if answer is None:
        return "format"
    return "calculation" if steps.has_failed_step else "logic"


@dataclass(frozen=True)
class CompletionGrade:
    """Everything :func:`summarize` needs about one completion.

    Attributes:
        answer: the extracted final answer, ``None`` when there is none.
        correct: the answer equals the gold answer exactly.
        format_ok: the completion earns the full format reward (all four tags used properly).
        steps: the per-step arithmetic verdicts.
        error_type: see :func:`classify_error`.
    """

    answer: str | None
    correct: bool
    format_ok: bool
    steps: StepCheck
    error_type: ErrorType


def grade_completion(
    text: str, gold: str, segmenter: TextSegmenter | None = None, rel_tol: float = VERIFIER_REL_TOL
) -> CompletionGrade:
    """Grade one completion against its gold answer (exact match, format, steps, error type)."""
    answer = extract_answer(text)
    correct = grade_answer(answer, gold, rel_tol=0.0) == "exact"
    steps = check_steps(text, segmenter, rel_tol)
    return CompletionGrade(
        answer=answer,
        correct=correct,
        format_ok=format_score(text) >= FULL_FORMAT_SCORE - 1e-9,
        steps=steps,
        error_type=classify_error(answer, correct, steps),
    )


# -----------------------------------------------------------------------------
# aggregation


def pass_k_key(k: int) -> str:
    """The summary key of pass@k: ``pass@4``."""
    return f"pass@{k}"


def error_type_key(error_type: ErrorType) -> str:
    """The summary key of an error type's share: ``error_type/logic``."""
    return f"error_type/{error_type}"


def summarize(
    grades: Sequence[Sequence[CompletionGrade]],
    tokens: Sequence[Sequence[int]],
    pass_k: Sequence[int] = (),
) -> dict[str, float]:
    """Aggregate graded samples: ``grades[p][s]`` is sample ``s`` of prompt ``p``, ``tokens`` alike.

    Returns (all floats):
        ``accuracy``: mean over prompts of sample 0's correctness (the greedy completion when
        decoding is greedy); ``pass@k`` for each ``k`` in ``pass_k``: mean over prompts of
        :func:`pass_at_k`; over all completions: ``format_rate`` (full format reward),
        ``answer_rate`` (a parsable answer), ``mean_tokens``, ``median_tokens``,
        ``step_complete_rate``, ``step_checked_rate`` (at least one checked step),
        ``error_type/<type>`` (share of each type; they sum to 1); and the counts ``n``
        (prompts), ``num_samples`` (per prompt, the smallest if they differ), ``n_completions``.

    Raises:
        ValueError: no prompts, a prompt without samples, ``tokens`` not shaped like ``grades``,
            or a ``k`` larger than the number of samples of some prompt.
    """
    if not grades:
        raise ValueError("no completions to score: the evaluation split is empty")
    if len(tokens) != len(grades) or any(len(t) != len(g) for t, g in zip(tokens, grades, strict=True)):
        raise ValueError("tokens must hold one count per graded sample, prompt by prompt")
    num_samples = min(len(samples) for samples in grades)
    if num_samples == 0:
        empty = next(p for p, samples in enumerate(grades) if not samples)
        raise ValueError(f"prompt {empty} has no samples to score")
    check_pass_k(pass_k, num_samples)
    flat = [grade for samples in grades for grade in samples]
    lengths = [n for counts in tokens for n in counts]
    total = len(flat)
    summary = {
        "accuracy": statistics.fmean(float(samples[0].correct) for samples in grades),
        **{
            pass_k_key(k): statistics.fmean(
                pass_at_k(len(samples), sum(g.correct for g in samples), k) for samples in grades
            )
            for k in pass_k
        },
        "format_rate": sum(g.format_ok for g in flat) / total,
        "answer_rate": sum(g.answer is not None for g in flat) / total,
        "mean_tokens": statistics.fmean(lengths),
        "median_tokens": float(statistics.median(lengths)),
        "step_complete_rate": sum(g.steps.complete for g in flat) / total,
        "step_checked_rate": sum(g.steps.n_checked > 0 for g in flat) / total,
        **{error_type_key(t): sum(g.error_type == t for g in flat) / total for t in ERROR_TYPES},
        "n": float(len(grades)),
        "num_samples": float(num_samples),
        "n_completions": float(total),
    }
    return summary
