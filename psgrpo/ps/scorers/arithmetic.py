"""Rule-based step verifier: check the arithmetic written in each reasoning step.

A step such as ``Step 2: 16 - 3 - 4 = 9`` or GSM8K's ``48/2 = <<48/2=24>>24`` states equations.
The verifier finds them, evaluates both sides exactly (``Fraction``, a tiny recursive-descent
parser, never ``eval``) and scores the step (DeepSeekMath-style process reward, the reference
``0.6·correct + 0.4·necessary``)::

    verifier = ArithmeticVerifier()
    verifier(["Mia has 7 pens ..."], [["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"]])
    # [[1.0, 1.0, 0.5]]

* **correct**: the fraction of the step's equations that hold; a step without equations gets the
  neutral score instead. Numbers with the operators missing before ``=`` (``9 2 1 = 8``) are a
  garbled equation, which never holds, not prose
  (:func:`~psgrpo.ps.scorers.equations.garbled_equations`).
* **necessary**: the step's result lies on the dependency path to the final answer, and the step
  is not a no-op (``12 + 0 = 12``, ``12 * 1 = 12`` padding a computed 12; ``3 customers × 1 DVD
  each = 3 DVDs`` that the solution then uses is work): :mod:`psgrpo.ps.scorers.dependencies`. Without
  a final answer no step is necessary. On GSM8K's test gold solutions 94.5 % of the steps with
  equations are necessary (docs/robustness.md).

Which equations a step states and how they are judged: :mod:`psgrpo.ps.scorers.equations`
(annotations ``<<expr=result>>``, chains ``a = b = c``, rounding, percentages); the tokens, the
parser and the exact evaluator: :mod:`psgrpo.ps.scorers.expressions`.

**Bounded work, never an exception.** Any string is either equations the verifier judges or not an
equation. An expression, a nesting depth, a number or a value beyond the limits of
:mod:`psgrpo.ps.scorers.expressions` (``MAX_EXPRESSION_TOKENS``, ``MAX_NESTING``,
``MAX_LITERAL_DIGITS``, ``MAX_VALUE_BITS``), or a step that spends its work budget
(``WORK_PER_CHAR`` parser token visits per character), is *not checkable*: the run of arithmetic
holding it is skipped and counted in ``StepScore.unparsed`` (the trainer logs the batch total as
``ps/unparsed_equations``). So a 3,000-fold division or 2,000 nested parentheses cost milliseconds
instead of a ``RecursionError``, and verification time is linear in the text's length
(``benchmarks/bench_verifier.py --scaling``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from psgrpo.ps.scorers.dependencies import answer_value, dependency_path, links, noop_steps
from psgrpo.ps.scorers.equations import Equation, StepEquations, extract_equations, extract_step
from psgrpo.ps.scorers.expressions import evaluate_text, written_numbers
from psgrpo.rewards.functions import extract_answer

__all__ = [  # the verifier, and the helpers its users read from this one import path
    "ArithmeticVerifier",
    "Equation",
    "StepEquations",
    "StepScore",
    "VerifierCounts",
    "check_step_lists",
    "evaluate_text",
    "extract_equations",
    "extract_step",
    "score_steps",
    "written_numbers",
]


@dataclass(frozen=True)
class StepScore:
    """The verdict on one step: ``correct`` is ``None`` when the step states no equation.

    ``noop``: the step states equations and every one is a no-op. ``unparsed``: runs of arithmetic
    in the step the verifier gave up on (beyond its budget), see the module docstring.
    ``depends_on``: the earlier steps (indices) whose results this step uses
    (:class:`~psgrpo.ps.scorers.dependencies.Links`).
    """

    correct: float | None
    necessary: bool
    equations: list[Equation] = field(default_factory=list)
    noop: bool = False
    unparsed: int = 0
    depends_on: tuple[int, ...] = ()

    def score(
        self, correct_weight: float = 0.6, necessary_weight: float = 0.4, neutral_score: float = 0.5
    ) -> float:
        """``correct_weight·correct + necessary_weight·necessary``, or ``neutral_score`` without equations."""
        if self.correct is None:
            return neutral_score
        return correct_weight * self.correct + necessary_weight * float(self.necessary)


def score_steps(steps: Sequence[str], final_answer: str | None, rel_tol: float = 1e-6) -> list[StepScore]:
    """Verify the equations of each step of one completion and decide which steps are necessary.

    A step is necessary when it states equations, lies on the :func:`dependency_path` to
    ``final_answer`` and is not a no-op (:func:`noop_steps`).
    """
    found = [extract_step(step, rel_tol) for step in steps]
    path = dependency_path(found, answer_value(final_answer))
    found_links = links(found)
    scores: list[StepScore] = []
    for j, (step, noop) in enumerate(zip(found, noop_steps(found), strict=True)):
        if not step.equations:
            scores.append(StepScore(None, False, [], unparsed=step.unparsed))
            continue
        correct = sum(eq.holds for eq in step.equations) / len(step.equations)
        necessary = j in path and not noop
        depends_on = tuple(sorted(found_links.depends_on[j]))
        scores.append(StepScore(correct, necessary, step.equations, noop, step.unparsed, depends_on))
    return scores


@dataclass
class VerifierCounts:
    """What the verifier saw in the steps it scored: steps, and among them those with no equation,
    no-ops, those with equations but off the dependency path (no-ops included), those with a
    garbled equation (``9 2 1 = 8``: numbers with the operators missing, scored as false), and runs
    of arithmetic it gave up on (``unparsed_equations``)."""

    steps: int = 0
    no_equation: int = 0
    noop: int = 0
    unnecessary: int = 0
    garbled: int = 0
    unparsed_equations: int = 0

    def add(self, verdicts: Sequence[StepScore]) -> None:
        """Count the verdicts on one completion's steps."""
        self.steps += len(verdicts)
        self.no_equation += sum(v.correct is None for v in verdicts)
        self.noop += sum(v.noop for v in verdicts)
        self.unnecessary += sum(v.correct is not None and not v.necessary for v in verdicts)
        self.garbled += sum(any(eq.garbled for eq in v.equations) for v in verdicts)
        self.unparsed_equations += sum(v.unparsed for v in verdicts)

    @classmethod
    def metrics(cls, totals: dict[str, int]) -> dict[str, float]:
        """The logged metrics (``ps/<name>``) of counts summed over processes: shares of the steps
        scored (``frac_steps_no_equation|noop|unnecessary|garbled``, NaN without steps) and the runs of
        arithmetic given up on (``unparsed_equations``)."""
        steps = totals["steps"]
        shares = {f"frac_steps_{key}": totals[key] / steps if steps else math.nan for key in cls.STEP_KINDS}
        return shares | {"unparsed_equations": float(totals["unparsed_equations"])}

    STEP_KINDS = ("no_equation", "noop", "unnecessary", "garbled")
    """Counts of steps, logged as shares of the steps scored."""


def check_step_lists(steps: Sequence[Any]) -> None:
    """Each completion's steps are a list of strings: one string would be scored character by character."""
    for i, sample in enumerate(steps):
        if isinstance(sample, str) or not all(isinstance(step, str) for step in sample):
            raise ValueError(
                f"steps[{i}] must be the completion's list of step strings, got {type(sample).__name__} "
                f"{sample!r:.60}; pass [[step, ...], ...], one list per completion"
            )


class ArithmeticVerifier:
    """Step scorer ``(prompts, steps, **columns) -> list[list[float]]`` checking each step's arithmetic.

    Its scores are exact and local, so ``ps_advantage_mode='auto'`` uses ``step`` with it
    (``default_process_mode``; docs/robustness.md).

    It never raises on model text (see the module docstring) and counts what it saw in
    :class:`VerifierCounts`; :meth:`pop_counts` hands the counts since the last call to the trainer.

    Args:
        correct_weight: weight of the fraction of a step's equations that hold (>= 0; one of the two weights
            above 0: all zero would score a right and a wrong equation alike).
        necessary_weight: weight of the step being necessary (on the dependency path to the answer; >= 0).
        neutral_score: score of a step with no equation (default 0.5, for prose steps). 0 where every step
            should be an equation (arith): an unreadable step then earns no more than a wrong one, and a
            policy has no reason to drift into such steps (docs/results.md, arith-hard at 240 steps).
        rel_tol: relative tolerance of ``lhs = rhs`` (besides rounding to the decimals written; >= 0).
    """

    default_process_mode = "step"

    def __init__(
        self,
        correct_weight: float = 0.6,
        necessary_weight: float = 0.4,
        neutral_score: float = 0.5,
        rel_tol: float = 1e-6,
    ) -> None:
        self.correct_weight = correct_weight
        self.necessary_weight = necessary_weight
        self.neutral_score = neutral_score
        self.rel_tol = rel_tol
        self.counts = VerifierCounts()
        weights = self.weights()
        if not all(w >= 0 for w in weights.values()) or not any(w > 0 for w in weights.values()):  # NaN too
            # all 0: every step with equations scores 0, right or wrong; negative: wrong steps score higher
            raise ValueError(f"the weights {weights} must be >= 0, with one above 0")
        if rel_tol < 0:
            raise ValueError(f"rel_tol must be >= 0, got {rel_tol}")

    def weights(self) -> dict[str, float]:
        """The weights a step's score is made of (both must be >= 0, one above 0)."""
        return {"correct_weight": self.correct_weight, "necessary_weight": self.necessary_weight}

    def score_steps(self, steps: Sequence[str], final_answer: str | None) -> list[StepScore]:
        """The verdict on each step of one completion (see the module-level :func:`score_steps`)."""
        return score_steps(steps, final_answer, self.rel_tol)

    def score_completion(self, steps: Sequence[str]) -> list[float]:
        """Scores of one completion's steps; the final answer is extracted from the joined steps."""
        final_answer = extract_answer("\n".join(steps))
        verdicts = self.score_steps(steps, final_answer)
        self.counts.add(verdicts)
        return [v.score(self.correct_weight, self.necessary_weight, self.neutral_score) for v in verdicts]

    def __call__(
        self, prompts: Sequence[Any], steps: Sequence[Sequence[str]], **columns: Any
    ) -> list[list[float]]:
        """One score per step per completion for the whole batch; ``prompts`` and ``columns`` are unused."""
        if len(prompts) != len(steps):
            raise ValueError(f"got {len(prompts)} prompts but steps for {len(steps)} completions")
        check_step_lists(steps)
        return [self.score_completion(sample) for sample in steps]

    def pop_counts(self) -> dict[str, int]:
        """The :class:`VerifierCounts` of every step scored since the last call, as a dict; resets them."""
        counts, self.counts = self.counts, type(self.counts)()
        return asdict(counts)

    def count_metrics(self, totals: dict[str, int]) -> dict[str, float]:
        """Metrics of :meth:`pop_counts` dicts summed over processes (the scorer protocol, psgrpo.ps.scorers.base)."""
        return type(self.counts).metrics(totals)

    def __repr__(self) -> str:
        return (
            f"ArithmeticVerifier(correct_weight={self.correct_weight}, necessary_weight={self.necessary_weight}, "
            f"neutral_score={self.neutral_score}, rel_tol={self.rel_tol})"
        )
