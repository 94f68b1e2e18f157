"""Reference-guided step verifier: a step is right when its arithmetic holds *and* it computes a
value the gold solution computes on its way to the answer.

The arithmetic verifier (:mod:`psgrpo.ps.scorers.arithmetic`) sees *calculation* errors only. A
*logic* error (the wrong quantity or operation, with every equation true) scores as a correct
step there, and on the arith-hard testbed such errors are three quarters of the wrong answers
(docs/learning.md), so its process term credits logically wrong but clean solutions. This scorer
also reads the dataset's gold worked solution (the ``solution`` column of arith and GSM8K, whose
equations or ``<<a*b=c>>`` annotations state the intermediate results) and asks of each step
whether it reaches one of the gold solution's intermediate values::

    verifier = ReferenceVerifier()
    verifier(["..."], [["Step 1: 7 + 5 = 12", "Step 2: 12 + 3 = 15"]],
             solution=["Step 1: 7 + 5 = 12\\nStep 2: 12 - 3 = 9"], answer=["9"])
    # [[1.0, 0.5]]   (step 2's arithmetic holds, but 15 is not a value of the gold solution)

* **reference values**: the results of the gold solution's steps on its dependency path to the
  gold answer (:func:`psgrpo.ps.scorers.dependencies.dependency_path`, one step per line), as a
  multiset: a distractor the gold solution computes but never uses is not one.
* **on reference** (:func:`on_reference`): the step states equations, is not a no-op, and one of
  its results is a reference value not already claimed by an earlier step (so repeating a right
  step earns nothing twice).
* **the reasoning ends at the gold answer** (``final_step_reaches_answer``, default on): the last
  step with equations is on reference only if one of its results is the gold answer. Without
  this rule a solution that *stops short* (leaves out the last operation, or the one after a
  distractor) has every step on reference: its process credit is all positive and outweighs its
  negative outcome advantage, so PS-GRPO learns to stop early (measured on arith-hard,
  docs/learning.md). With it the omission is blamed where it happens, at the step that ends the
  reasoning.
* **score** = ``correct_weight·correct + reference_weight·on_reference``; a step without
  equations gets ``neutral_score``. With the defaults (0.5, 0.5, 0.5): a right step 1.0, a logic
  error 0.5, a calculation error 0.0 (0.5 if its wrong equation still lands on a gold value).

This is a psgrpo extension, not a method of the papers psgrpo follows: it uses more of the gold
data than the outcome reward (which reads only the answer). Its limit: a *different but valid*
route to the answer (other intermediate values) scores as off reference; on GSM8K, where several
routes are common, prefer ``ps_lambda`` below 1 or a PRM. A row whose gold solution states no
equation on the path gives no reference values: its steps are then judged on arithmetic alone
(counted in ``rows_without_reference``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, StepScore, VerifierCounts
from psgrpo.ps.scorers.dependencies import answer_value, dependency_path
from psgrpo.ps.scorers.equations import extract_step
from psgrpo.rewards import extract_answer

REQUIRED_COLUMNS = ("solution", "answer")
"""Dataset columns the scorer reads: the gold worked solution and the gold answer."""


def reference_values(solution: str, answer: str | None, rel_tol: float = 1e-6) -> Counter[Fraction]:
    """The multiset of values the gold ``solution`` computes on its dependency path to ``answer``.

    Each line of ``solution`` is one step (arith's ``Step k:`` lines, GSM8K's annotated lines);
    the values are the distinct results of each step on the path. Empty when no line states an
    equation whose result reaches the answer.
    """
    found = [extract_step(line, rel_tol) for line in solution.splitlines()]
    path = dependency_path(found, answer_value(answer))
    values: Counter[Fraction] = Counter()
    for j in sorted(path):
        values.update(list(dict.fromkeys(value for _, value in found[j].results)))
    return values


def on_reference(
    verdicts: Sequence[StepScore], reference: Counter[Fraction], final: Fraction | None = None
) -> list[bool]:
    """Whether each step reaches a reference value not claimed by an earlier step.

    Args:
        verdicts: the arithmetic verifier's verdicts on one completion's steps, in order.
        reference: :func:`reference_values` of the row.
        final: the gold answer, or ``None``: when given (and ``reference`` is not empty), the last
            step with equations is on reference only if one of its results is ``final``, so a
            solution that stops short of the answer, or ends on another value, is off reference
            at its last step.

    Returns:
        One flag per step: False for a step without equations, a no-op, or whose results are all
        outside the (remaining) reference values. A matching step claims one value.
    """
    remaining = reference.copy()
    flags = []
    for verdict in verdicts:
        match = None
        if verdict.correct is not None and not verdict.noop:
            results = dict.fromkeys(eq.rhs_value for eq in verdict.equations if eq.rhs_value is not None)
            match = next((value for value in results if remaining[value] > 0), None)
        if match is not None:
            remaining[match] -= 1
        flags.append(match is not None)
    if final is not None and reference:
        stops_short(verdicts, flags, final)
    return flags


def stops_short(verdicts: Sequence[StepScore], flags: list[bool], final: Fraction) -> bool:
    """Apply the final-answer rule to ``flags`` in place: clear the last step with equations when
    it is on reference but none of its results is the gold answer ``final``.

    Returns:
        Whether it cleared a flag: the reasoning is on the gold path up to its last step and stops
        short of (or beside) the answer there.
    """
    last = next((i for i in reversed(range(len(verdicts))) if verdicts[i].correct is not None), None)
    if last is None or not flags[last] or any(eq.rhs_value == final for eq in verdicts[last].equations):
        return False
    flags[last] = False
    return True


@dataclass
class ReferenceCounts(VerifierCounts):
    """:class:`VerifierCounts` plus the steps with equations that reach no reference value, the
    last steps among them that end the reasoning short of (or beside) the gold answer, and the
    rows whose gold solution gave no reference value."""

    off_reference: int = 0
    stop_short: int = 0
    rows_without_reference: int = 0


class ReferenceVerifier(ArithmeticVerifier):
    """Step scorer ``(prompts, steps, solution=..., answer=..., **columns) -> list[list[float]]``.

    The arithmetic verifier's equation check plus the gold solution's intermediate values (see
    the module docstring). Needs the dataset columns in :data:`REQUIRED_COLUMNS`; the trainer
    checks them before training starts.

    Args:
        correct_weight: weight of the fraction of a step's equations that hold.
        reference_weight: weight of the step reaching a reference value.
        neutral_score: score of a step with no equation.
        rel_tol: relative tolerance of ``lhs = rhs``.
        final_step_reaches_answer: the last step with equations must reach the gold answer to be
            on reference (default True; see the module docstring). False judges every step on its
            own, so a solution that stops short scores like a right one in every step it wrote.
    """

    required_columns = REQUIRED_COLUMNS

    def __init__(
        self,
        correct_weight: float = 0.5,
        reference_weight: float = 0.5,
        neutral_score: float = 0.5,
        rel_tol: float = 1e-6,
        final_step_reaches_answer: bool = True,
    ) -> None:
        super().__init__(correct_weight, 0.0, neutral_score, rel_tol)
        self.reference_weight = reference_weight
        self.final_step_reaches_answer = final_step_reaches_answer
        self.counts = ReferenceCounts()
        self._reference_cache: dict[tuple[str, str | None], Counter[Fraction]] = {}

    def reference(self, solution: str, answer: str | None) -> Counter[Fraction]:
        """:func:`reference_values` of one row, cached (a group's completions share the row)."""
        key = (solution, answer)
        if key not in self._reference_cache:
            if len(self._reference_cache) > 4096:
                self._reference_cache.clear()
            self._reference_cache[key] = reference_values(solution, answer, self.rel_tol)
        return self._reference_cache[key]

    def score_against(
        self, steps: Sequence[str], reference: Counter[Fraction], final: Fraction | None = None
    ) -> list[float]:
        """Scores of one completion's steps against its row's reference values and gold answer."""
        verdicts = self.score_steps(steps, extract_answer("\n".join(steps)))
        self.counts.add(verdicts)
        flags = on_reference(verdicts, reference)
        if self.final_step_reaches_answer and final is not None and reference:
            self.counts.stop_short += stops_short(verdicts, flags, final)
        self.counts.off_reference += sum(
            v.correct is not None and not f for v, f in zip(verdicts, flags, strict=True)
        )
        self.counts.rows_without_reference += not reference
        return [
            self.neutral_score
            if v.correct is None
            else self.correct_weight * v.correct + self.reference_weight * float(flag)
            for v, flag in zip(verdicts, flags, strict=True)
        ]

    def __call__(
        self,
        prompts: Sequence[Any],
        steps: Sequence[Sequence[str]],
        solution: Sequence[str] | None = None,
        answer: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[list[float]]:
        """One score per step per completion; ``solution`` and ``answer`` hold one entry per completion."""
        if solution is None or answer is None:
            missing = [name for name, value in (("solution", solution), ("answer", answer)) if value is None]
            raise ValueError(
                f"the reference step scorer needs the dataset columns {missing} (the gold worked solution, "
                "whose equations state the intermediate results, and the gold answer); arith and GSM8K have "
                "them. Use step_scorer 'arithmetic' for a dataset without worked solutions."
            )
        if not len(prompts) == len(steps) == len(solution) == len(answer):
            raise ValueError(
                f"got {len(prompts)} prompts, steps for {len(steps)} completions, {len(solution)} solutions and "
                f"{len(answer)} answers; expected one of each per completion"
            )
        scores = []
        for sample, gold, gold_answer in zip(steps, solution, answer, strict=True):
            text = None if gold_answer is None else str(gold_answer)
            scores.append(self.score_against(sample, self.reference(str(gold), text), answer_value(text)))
        return scores

    def __repr__(self) -> str:
        return (
            f"ReferenceVerifier(correct_weight={self.correct_weight}, reference_weight={self.reference_weight}, "
            f"neutral_score={self.neutral_score}, rel_tol={self.rel_tol}, "
            f"final_step_reaches_answer={self.final_step_reaches_answer})"
        )
