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
* **on reference** (:func:`on_reference`): the step states equations and one of its results is a
  reference value not already claimed by an earlier step (so repeating a right step earns nothing
  twice); steps that compute claim first, steps that only pass a value through (``× 1``) then
  claim what is left. A value already claimed counts again for a step that reaches it by other
  work, not built on the claiming step, when a later step uses it (:func:`second_route`:
  ``200 - 20 = 180`` seats, then ``90 * 2 = 180`` people).
* **on the completion's own route** (:func:`carry_support`): a step whose equations hold and whose
  result the gold solution never states is on the path when the completion's own dependencies
  carry it into a later step on the path (``3 + 4 = 7 eggs used`` then ``16 - 7 = 9`` against the
  gold ``16 - 3 - 4 = 9``): from any such step for values the gold equations compute in part, as
  they compute them (:meth:`GoldParts.computed_by`), from the last step when it reaches the gold
  answer for any value. So blame falls where the chain leaves the gold path, or on a chain that
  ends off the answer.
* **the reasoning ends at the gold answer** (``final_step_reaches_answer``, default on): the last
  step with equations is on reference only if one of its results is the gold answer. Without
  this rule a solution that *stops short* (leaves out the last operation, or the one after a
  distractor) has every step on reference: its process credit is all positive and outweighs its
  negative outcome advantage, so PS-GRPO learns to stop early (measured on arith-hard,
  docs/learning.md). With it the omission is blamed where it happens: at the first step after
  the last equation that says more than the final answer (``each kid can have 14`` after a right
  ``35 - 18 - 3 = 14``: :func:`next_claim`, score 0), else at the last step with equations, also
  when a conclusion of its own then states the wrong answer (:func:`conclusion_value`;
  ``blame_stop`` chooses, :data:`BLAME_STOP`); a conclusion stating the gold answer lifts the
  rule (the reasoning got there in words). A solution whose stated answer is wrong while every
  step with equations is on the path (its error is in words or unread algebra) is blamed at its
  last step that says more than the answer.
* **a false equation is never on the path**, even when its stated result is a gold value by
  chance (``3 * (65 - 30) = 145``, 145 being the gold answer).
* **a wrong idea announced in words** (``blame_announcement``, default on): when the first step
  off the path has true equations, a step just before it without equations that announces its
  operation (``we need to add the quarts made in 2 hours and in 4 hours``) scores 0: the idea is
  written there first (:func:`announced_error`).
* **valid steps before a slip** (``credit_before_slip``, default on): a valid step that a later
  step uses, before the first false equation, is on the path (:func:`credit_before_slip`);
  ``credit_valid`` (off) also credits valid steps built from the question's numbers
  (:func:`credit_valid_steps`).
* **score** = ``correct_weight·correct + reference_weight·on_reference``; a step without
  equations gets ``neutral_score``. With the defaults (0.5, 0.5, 0.5): a right step 1.0, a logic
  error 0.5, a calculation error 0.0 (0.5 if its wrong equation still lands on a gold value).

This is a psgrpo extension, not a method of the papers psgrpo follows: it uses more of the gold
data than the outcome reward (which reads only the answer). Its limits: a *different but valid*
route that ends on a wrong answer, or a step nothing later uses, is off reference; equations it
cannot read are neutral. On real GSM8K solutions by other models (158 wrong with people's labels,
976 correct) it finds the first wrong step of 69 % of the wrong ones and leaves 96.8 % of the
correct ones unflagged (weights 0/1): F1 0.803, the same with their steps in LaTeX
(docs/scorers.md). A row whose gold solution states no equation on the path gives no reference
values (its worked solution is algebra): its steps are then judged on arithmetic alone, a step whose
equations hold being on reference (counted in ``rows_without_reference``, logged as the share
``ps/frac_rows_without_reference``), except that a solution whose own final answer is not the gold
answer is off the path at its last step with equations (unless that step reaches the gold answer).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from psgrpo.data.validation import short_repr
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, StepScore, VerifierCounts, check_step_lists
from psgrpo.ps.scorers.dependencies import answer_value, dependency_path
from psgrpo.ps.scorers.equations import Equation, extract_step, plain_step
from psgrpo.ps.scorers.expressions import (
    BudgetExceeded,
    PartialChain,
    _leaves,
    computes_part,
    number_value,
    partial_chains,
    tokenize,
    written_numbers,
)
from psgrpo.ps.scorers.latex import to_plain
from psgrpo.ps.scorers.units import result_quantities, result_quantity, unit_mismatch
from psgrpo.ps.scorers.words import number_words
from psgrpo.rewards.functions import extract_answer

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


@dataclass(frozen=True)
class GoldParts:
    """What the gold solution's equations on its dependency path compute in part, and use.

    Attributes:
        partials: their results and every sub-combination of their operands
            (:func:`~psgrpo.ps.scorers.expressions.partial_values`: ``3 + 4`` of ``16 - 3 - 4``):
            values a valid route may compute first.
        operands: the numbers they use (``16``, ``3``, ``4``): a step that only passes one of these
            through (``16 eggs × 1 = 16 eggs``) restates a gold quantity.
        chains: their ``+``/``-`` and ``*``/``/`` chains
            (:func:`~psgrpo.ps.scorers.expressions.partial_chains`): a step computes a partial only
            when it combines a chain's own items with that chain's operation
            (:func:`~psgrpo.ps.scorers.expressions.computes_part`).
        dimensions: per result the gold text writes with a unit or as money, the dimensions it
            gives it (:func:`~psgrpo.ps.scorers.units.result_quantities`: ``= 9 hours`` → time).
    """

    partials: frozenset[Fraction] = frozenset()
    operands: frozenset[Fraction] = frozenset()
    chains: tuple[PartialChain, ...] = ()
    dimensions: dict[Fraction, frozenset[str]] = field(default_factory=dict, hash=False)

    def other_dimension(self, step: str) -> bool:
        """Whether ``step``'s result is a value the gold solution writes only in other dimensions:
        ``$36 / 4 = $9 per hour`` against the gold ``36 / 4 = 9 hours`` (money, not time) reaches 9
        by coincidence. A result or gold value without a known unit is not judged."""
        result = result_quantity(step)
        return (
            result is not None
            and bool(self.dimensions.get(result[0]))
            and (result[1] not in self.dimensions[result[0]])
        )

    def computed_by(self, equation: Equation) -> bool:
        """Whether ``equation`` computes a partial: its result is one and it gets there as a gold
        chain does (``3 + 4 = 7`` of ``16 - 3 - 4``; not ``60 / 2 = 30`` of ``30 + 10 + 60 + 20``)."""
        return equation.rhs_value in self.partials and computes_part(
            equation.lhs_tree, equation.rhs_value, self.chains
        )


def reference_parts(solution: str, answer: str | None, rel_tol: float = 1e-6) -> GoldParts:
    """The :class:`GoldParts` of a gold ``solution`` (empty as :func:`reference_values`)."""
    found = [extract_step(line, rel_tol) for line in solution.splitlines()]
    partials: set[Fraction] = set()
    operands: set[Fraction] = set()
    chains: list[PartialChain] = []
    for j in dependency_path(found, answer_value(answer)):
        partials.update(value for _, value in found[j].results)
        operands.update(value for _, value in found[j].uses)
        for equation in found[j].equations:
            if equation.lhs_tree is not None:
                try:
                    found_chains = partial_chains(equation.lhs_tree)
                    partials.update(*(chain.values for chain in found_chains))
                    chains += found_chains
                except BudgetExceeded:
                    continue
    dimensions: dict[Fraction, set[str]] = {}
    for value, dimension in result_quantities(solution):
        dimensions.setdefault(value, set()).add(dimension)
    return GoldParts(
        frozenset(partials),
        frozenset(operands),
        tuple(chains),
        {value: frozenset(found) for value, found in dimensions.items()},
    )


def on_reference(
    verdicts: Sequence[StepScore],
    reference: Counter[Fraction],
    final: Fraction | None = None,
    parts: GoldParts | None = None,
) -> list[bool]:
    """Whether each step reaches a reference value not claimed by an earlier step.

    Args:
        verdicts: the arithmetic verifier's verdicts on one completion's steps, in order.
        reference: :func:`reference_values` of the row.
        final: the gold answer, or ``None``: when given (and ``reference`` is not empty), the last
            step with equations is on reference only if one of its results is ``final``, so a
            solution that stops short of the answer, or ends on another value, is off reference
            at its last step.
        parts: :func:`reference_parts` of the row: when given, then put on the path the steps
            the completion's own dependencies carry into a step on it (:func:`carry_support`).

    Returns:
        One flag per step: False for a step without equations, with a false equation (its stated
        result is not a value it computed), or whose results are all outside the (remaining)
        reference values (a percentage also as written: ``0.2 × 100% = 20%`` reaches the gold
        ``20``). A matching step claims one value; steps that compute
        claim first, in order, then steps that pass a value through (``× 1``, ``+ 0``) claim what
        is left (a value the gold solution itself states twice, as in a unit conversion ``× $1``);
        then a used step reaching a claimed value by another route is on it (:func:`second_route`).
    """
    remaining = reference.copy()
    flags = [False] * len(verdicts)
    # steps that compute claim values first, in order; a step passing a value through (a no-op, or
    # ``6 x 1 = 6`` restating a question quantity) then only a value left over (the gold solution
    # states it twice: ``36 cups * $1 = $36`` after ``3 * 12 = 36``)
    restating = _restating(verdicts)
    for weak in (False, True):
        for j, verdict in enumerate(verdicts):
            # a false equation claims nothing: ``3 * (65 - 30) = 145`` is not on the path because 145 is
            if verdict.correct is None or verdict.correct < 1 or restating[j] != weak:
                continue
            stated = [eq.rhs_value for eq in verdict.equations if eq.rhs_value is not None]
            results = dict.fromkeys([*stated, *sorted(_results(verdict))])  # as computed, then as written
            match = next((value for value in results if remaining[value] > 0), None)
            if match is not None:
                remaining[match] -= 1
                flags[j] = True
    second_route(verdicts, flags, reference)
    if final is not None and reference:
        stops_short(verdicts, flags, final)
    if parts is not None:
        carry_support(verdicts, flags, reference, parts)
    return flags


def second_route(verdicts: Sequence[StepScore], flags: list[bool], reference: Counter[Fraction]) -> int:
    """Put on the path, in place, a step that reaches a gold value an earlier step already claimed,
    by another computation that does not build on that step, when a later step uses it: ``200 - 20
    = 180 seats left`` claims 180, then ``90 * 2 = 180 people`` (the gold's 180) feeds ``180 - 180
    = 0``. Claiming each value once is meant for repeated steps; this is new work that lands on a
    gold value again. The step must build on earlier results, none of them derived from a step that
    already stated the value, and be used by a step that is not a no-op: a restatement from the
    question's numbers (``14 + 7 + 0 = 21``, ``20 + 1 = 21`` after ``14 + 7 = 21``), a repeated step
    (the same operands) and a detour back to a value (``21 + 8 = 29``, ``29 - 8 = 21``) stay off.

    Returns:
        The number of steps it put on the path.
    """
    claimants: dict[Fraction, list[int]] = {}
    producers: dict[Fraction, set[int]] = {}
    for j, verdict in enumerate(verdicts):
        for value in _results(verdict):
            producers.setdefault(value, set()).add(j)
            if flags[j]:
                claimants.setdefault(value, []).append(j)
    used = set().union(*(v.depends_on for v in verdicts if not v.noop))
    ancestors: list[set[int]] = []  # per step, every earlier step it builds on, transitively
    for verdict in verdicts:
        ancestors.append(set(verdict.depends_on).union(*(ancestors[k] for k in verdict.depends_on)))
    added = 0
    for j, verdict in enumerate(verdicts):
        if flags[j] or verdict.correct != 1 or verdict.noop or j not in used:
            continue
        claimed = [value for value in _results(verdict) if reference[value] > 0 and value in claimants]
        if (
            claimed
            and ancestors[j]
            and all(
                ancestors[j].isdisjoint(producers[value])
                and all(_operands(verdicts[k]) != _operands(verdict) for k in claimants[value])
                for value in claimed
            )
        ):
            flags[j] = True
            added += 1
    return added


def _operands(verdict: StepScore) -> Counter[Fraction]:
    """The numbers a step's equations compute from (their left-hand sides' leaves), as a multiset."""
    return Counter(
        leaf for eq in verdict.equations if eq.lhs_tree is not None for leaf in _leaves(eq.lhs_tree)
    )


def _restating(verdicts: Sequence[StepScore]) -> list[bool]:
    """Whether each step only passes a value through: a no-op, or an equation like ``6 x 1 = 6`` whose
    other numbers no earlier step computed (``1 * 1 = 1`` on a running total of 1 is work)."""
    known: set[Fraction] = set()
    flags = []
    for verdict in verdicts:
        flags.append(
            verdict.noop
            or any(
                eq.passes_through is not None and known.isdisjoint(eq.passes_through)
                for eq in verdict.equations
            )
        )
        known |= _results(verdict)
    return flags


def _results(verdict: StepScore) -> set[Fraction]:
    """The results a step states; a percentage both as a fraction and as written (``.24 * 100% = 24%``)."""
    values = {eq.rhs_value for eq in verdict.equations if eq.rhs_value is not None}
    return values | {eq.rhs_value * 100 for eq in verdict.equations if eq.rhs_value and "%" in eq.rhs_text}


def _carried(equation: Equation, reference: Counter[Fraction], parts: GoldParts, gated: bool = True) -> bool:
    """Whether support may flow into a step through this equation (see :func:`carry_support`)."""
    value = equation.rhs_value
    restates = equation.passes_through is not None and value in parts.operands
    if value is None or (reference[value] > 0 and not restates):
        return False
    return not gated or restates or parts.computed_by(equation)


def carry_support(
    verdicts: Sequence[StepScore],
    flags: list[bool],
    reference: Counter[Fraction],
    parts: GoldParts,
    final: Fraction | None = None,
) -> int:
    """Put on the gold path, in place, the steps whose results the completion's own dependencies
    carry into a later step on it: ``3 + 4 = 7 eggs used`` then ``16 - 7 = 9`` against the gold
    ``16 - 3 - 4 = 9`` (a valid partial result the gold solution never states).

    Support flows back from each step on the path whose equations all hold, through
    :attr:`StepScore.depends_on`, into steps whose equations all hold, that are not no-ops and
    none of whose results is a reference value (a repeated gold step, or a detour back to a gold
    value, stays off: only values the gold solution does not state are carried), and on through
    theirs:

    * from any step on the path, into a step each of whose equations computes what the gold
      equations compute in part, the way they compute it (:meth:`GoldParts.computed_by`: ``3 + 4``
      of ``16 - 3 - 4``, not ``60 / 2 = 30`` of ``30 + 10 + 60 + 20``), or, for an equation passing an operand through
      (``16 eggs × 1 = 16 eggs``), use (:attr:`GoldParts.operands`), even when the gold solution
      also states that value as a result (``6 x 1 = 6 rolls to her children`` before ``12 - 6 =
      6``): so a wrong chain that lands on a gold value by chance carries nothing back;
    * from the last step with equations, when it reaches the gold answer ``final``, into any such
      step whatever its value (``3.5 / 7 = 0.5`` then ``0.5 * 10 = 5`` against the gold ``10 * 3.5
      = 35``, ``35 / 7 = 5``): the completion's own route to the right answer.

    A step whose results are all gold partials is also on the path as soon as a later step uses
    them, even a wrong one: ``3 + 4 = 7`` then ``16 - 7 = 8`` is blamed at ``16 - 7 = 8``. Blame
    thus falls on the step where the chain leaves the gold path, or on a chain that reaches no
    gold value.

    Returns:
        The number of steps it put on the path.
    """
    added = 0
    starts = [k for k in range(len(verdicts)) if flags[k] and verdicts[k].correct == 1]
    last = max((k for k, v in enumerate(verdicts) if v.correct is not None), default=None)
    reaches_answer = {last} if last in starts and final in _results(verdicts[last]) else set()
    used = set().union(*(v.depends_on for v in verdicts))
    for j in sorted(used - set(starts)):  # a gold partial result that a later step goes on from
        verdict = verdicts[j]
        if verdict.correct == 1 and not verdict.noop and not flags[j]:
            if all(
                eq.rhs_value is not None and reference[eq.rhs_value] == 0 and parts.computed_by(eq)
                for eq in verdict.equations
            ):
                flags[j] = True
                added += 1
    stack = [(k, k not in reaches_answer) for k in sorted(starts, key=lambda k: k in reaches_answer)]
    seen = set(stack)
    while stack:
        k, gated = stack.pop()
        for j in verdicts[k].depends_on:
            verdict = verdicts[j]
            if gated and flags[j] or (j, gated) in seen or verdict.correct != 1 or verdict.noop:
                continue
            if flags[j]:  # on the path already: the answer's own route goes on through it
                seen.add((j, gated))
                stack.append((j, gated))
            elif all(_carried(eq, reference, parts, gated) for eq in verdict.equations):
                flags[j] = True
                added += 1
                seen.add((j, gated))
                stack.append((j, gated))
    return added


def stops_short(verdicts: Sequence[StepScore], flags: list[bool], final: Fraction) -> bool:
    """Apply the final-answer rule to ``flags`` in place: clear the last step with equations when
    it is on reference but none of its results is the gold answer ``final``.

    Returns:
        Whether it cleared a flag: the reasoning is on the gold path up to its last step and stops
        short of (or beside) the answer there.
    """
    last = next((i for i in reversed(range(len(verdicts))) if verdicts[i].correct is not None), None)
    if last is None or not flags[last] or final in _results(verdicts[last]):
        return False
    flags[last] = False
    return True


def _blame_wrong_answer(
    steps: Sequence[str], verdicts: Sequence[StepScore], flags: list[bool], final: Fraction
) -> int | None:
    """A solution whose stated final answer is not the gold answer ``final`` has a wrong step: when
    every step with equations is on the path (the error is in words or in algebra the verifier does
    not read: ``x = 420``, then ``so he climbed 420 branches per day``), its last step that says
    more than the answer (a step with equations, or one stating a number that is not only the
    answer: :func:`only_answer`; chatter without a number is passed over) takes the blame: cleared
    in ``flags`` in place when it has equations (unless they reach the gold answer: the wrong answer
    is then in the answer line), else returned (it then scores 0). ``None`` when nothing is blamed.
    """
    if not all(flag for verdict, flag in zip(verdicts, flags, strict=True) if verdict.correct is not None):
        return None
    stated = answer_value(extract_answer("\n".join(steps)))
    if stated is None or stated == final:
        return None
    last = next(
        (
            k
            for k in reversed(range(len(steps)))
            if verdicts[k].correct is not None or (not only_answer(steps[k]) and _numbers(steps[k]))
        ),
        None,
    )
    if last is None or verdicts[last].correct is None:
        return last
    if final not in _results(verdicts[last]):  # a last equation stating the gold answer is not the error
        flags[last] = False
    return None


def conclusion_value(steps: Sequence[str], verdicts: Sequence[StepScore]) -> Fraction | None:
    """The answer stated by the last step when it is a conclusion of its own, else ``None``.

    That is: the last step states no equation and comes after a step that does; the answer it
    states is its ``<answer>`` / ``####`` / ``\\boxed`` answer, else its last number (``So the
    answer is 20.``). The final-answer rule reads it: a wrong one after reasoning that is on the
    gold path up to its last equation (it stopped short) is blamed where ``blame_stop`` says
    (:data:`BLAME_STOP`); a right one means the reasoning reached the answer, in words the
    verifier may not read.
    """
    if not steps or verdicts[-1].correct is not None or all(v.correct is None for v in verdicts):
        return None
    stated = answer_value(extract_answer(steps[-1]))
    if stated is None:
        numbers = _numbers(steps[-1])
        stated = numbers[-1] if numbers else None
    return stated


def _numbers(step: str) -> list[Fraction]:
    """The numbers a step writes, in order, its ``Step 4:`` marker left out (``Step 4: ####`` states none)."""
    tokens = tokenize(plain_step(step))
    return [value for t in tokens if t.kind == "num" and (value := number_value(t.text)) is not None]


BLAME_STOP = ("next_step", "last_equation", "conclusion")
"""Where a solution that stops short (on the gold path to its last equation, then no equation that
reaches the gold answer) is blamed: the first step after its last equation that says something
other than the final answer (default, :func:`next_claim`; else the last equation), its last step
with equations, or its conclusion (the last step, when that states an answer)."""

_ANSWER_LINE = re.compile(
    r"^\s*(?:step\s*\d+\s*[:.)]\s*)?(?:####|<answer>|\\boxed|(?:(?:so|thus|therefore|hence),?\s+)?the\s+(?:final\s+)?answer\s+is\b)",
    re.I,
)
"""A step that only gives the final answer: ``#### 18``, ``<answer>18</answer>``, ``\\boxed{18}``,
``Step 7: The answer is: 18``."""


def next_claim(steps: Sequence[str], verdicts: Sequence[StepScore], last: int) -> int | None:
    """The first step after ``last`` that states no equation and is not only the final answer
    (:func:`only_answer`), or ``None``.

    That is where people put the first error of a solution that computes a gold value and then
    stops: ``35 - 18 - 3 = 14 marshmallows left`` (a gold value), then ``each kid can have 14``
    (the wrong idea: the gold solution divides by 2).
    """
    for k in range(last + 1, len(steps)):
        if verdicts[k].correct is None and not only_answer(steps[k]):
            return k
    return None


_ANSWER_MARKUP = re.compile(
    r"(?i)</?(?:reasoning|answer)>|\\boxed|\\text|\\[()\[\]]|\*+|\bstep\s*\d+\s*[:.)]|^\s*\d+\s*[:.)]"
    r"|\b(?:so|thus|therefore|hence|the|final|answer|is)\b"
)
"""What an answer line may hold besides its number: tags, ``\\boxed``, math delimiters, bold, a step
marker, and the words of ``So the final answer is``."""


def only_answer(step: str) -> bool:
    """Whether ``step`` gives nothing but the final answer: :data:`_ANSWER_LINE`, or no letters left
    once :data:`_ANSWER_MARKUP` is taken out (``$\\boxed{14}$``, ``**Final Answer:** 14``,
    ``</reasoning>``)."""
    return bool(_ANSWER_LINE.match(step)) or not re.search(r"[^\W\d_]", _ANSWER_MARKUP.sub(" ", step))


_ANNOUNCES = re.compile(
    r"(?i)\bwe\s+(?:(?:need|have)\s+to\s+|must\s+|can\s+|will\s+|should\s+)?(?:first\s+)?"
    r"(?P<verb>add|subtract|multiply|divide)\b"
)
"""A step that announces an operation: ``we need to add ...``, ``If we divide the total by 2 ...``."""

_ANNOUNCED_OPERATOR = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}


def announced_error(steps: Sequence[str], verdicts: Sequence[StepScore], flags: Sequence[bool]) -> int | None:
    """The step without equations that announces the operation the first step off the path carries
    out, when that step's equations all hold (a wrong idea, not a slip), else ``None``: in ``To find
    the total in 48 hours, we need to add the quarts made in 2 hours and in 4 hours.`` then ``100 + 50
    = 150``, the wrong idea is written first in the announcement. The announced verb must be that
    step's operation (``we multiply`` then ``100 + 50`` announces something else); answer lines between
    them are skipped."""
    first = next((j for j, v in enumerate(verdicts) if v.correct is not None and not flags[j]), None)
    if first is None or verdicts[first].correct != 1:
        return None
    k = next(
        (k for k in reversed(range(first)) if verdicts[k].correct is not None or not only_answer(steps[k])),
        None,
    )
    if k is None or verdicts[k].correct is not None:
        return None
    operators = {
        eq.lhs_tree[0]
        for eq in verdicts[first].equations
        if eq.lhs_tree is not None and not isinstance(eq.lhs_tree, Fraction)
    }
    announced = (_ANNOUNCED_OPERATOR[m["verb"].lower()] for m in _ANNOUNCES.finditer(steps[k]))
    return k if any(operator in operators for operator in announced) else None


CREDIT_VALID = ("none", "unused", "question", "chain")
"""Which valid steps off the gold route are credited (:func:`credit_valid_steps`): none (default),
those built from the question's numbers and right earlier results that no later step uses (a true
statement the solution does not need), those using only the question's numbers, or those and the
steps built on them."""

QUESTION_CONSTANTS = frozenset(Fraction(n) for n in (1, 2, 7, 12, 24, 52, 60, 100, 365, 1000, 3600))
"""Numbers a step may use as if the question stated them: a double, and the common conversions
(days a week, months or a dozen, hours a day, weeks a year, minutes or seconds, per cent, days a
year, thousands, seconds an hour)."""

_QUESTION_WORDS = {"half": Fraction(1, 2), "twice": Fraction(2), "double": Fraction(2), "triple": Fraction(3),
                   "dozen": Fraction(12), "quarter": Fraction(1, 4), "third": Fraction(1, 3)}  # fmt: skip


def prompt_text(prompt: Any) -> str:
    """The text of a prompt: a string as it is, a chat (a list of ``{"role", "content"}``) as its contents."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in prompt)
    return str(prompt)


def question_numbers(question: str) -> frozenset[Fraction]:
    """The numbers a question states (digits, number words, ``half`` ...; a percentage also as a
    fraction: ``5%`` gives 5 and 1/20), with :data:`QUESTION_CONSTANTS`."""
    tokens = number_words(tokenize(to_plain(question)), anywhere=True)
    found = set(QUESTION_CONSTANTS)
    for token in tokens:
        if token.kind == "num":
            values = written_numbers(token.text)
            found.update(values)
            if token.text.endswith("%"):
                found.update(v / 100 for v in values)
        elif token.kind == "word" and token.text.lower() in _QUESTION_WORDS:
            found.add(_QUESTION_WORDS[token.text.lower()])
    return frozenset(found)


def credit_valid_steps(
    verdicts: Sequence[StepScore],
    flags: list[bool],
    known: frozenset[Fraction],
    chain: bool = False,
    unused_only: bool = False,
) -> int:
    """Put on the path, in place, the steps off it whose equations all hold and whose operands the
    question states (``known``: :func:`question_numbers`), or (``chain``) earlier steps credited
    this way or on the path computed: a valid partial result off the gold route (``300 songs × 10
    hours = 3000 hours`` against the gold ``20 × 300``, then ``× 10``) is not blamed; a step using a
    value no such step computed still is. ``unused_only``: only steps no later step uses (``8 + 6 =
    14 people`` that the solution then ignores). Returns the number of steps credited."""
    available = set(known)
    used = set().union(*(v.depends_on for v in verdicts)) if unused_only else set()
    added = 0
    for j, verdict in enumerate(verdicts):
        results = _results(verdict)
        if verdict.correct == 1 and not flags[j] and not verdict.noop and j not in used:
            operands = set()
            for equation in verdict.equations:
                if equation.lhs_tree is not None:
                    operands.update(_leaves(equation.lhs_tree))
            if operands <= available | results:
                flags[j] = True
                added += 1
        if chain and verdict.correct == 1 and flags[j]:
            available |= results
    return added


def credit_before_slip(verdicts: Sequence[StepScore], flags: list[bool]) -> int:
    """Put on the path, in place, the steps off it whose equations all hold, that a later step uses
    and that come before the first step with a false equation (a calculation slip, a certain
    error): blame then falls on the slip, not on a valid partial result before it that the gold
    solution lacks. No-ops and results nothing uses (a distractor computed) stay off. Returns the
    number of steps credited (none when no equation is false)."""
    slip = next((j for j, v in enumerate(verdicts) if v.correct is not None and v.correct < 1), None)
    if slip is None:
        return 0
    used = set().union(*(v.depends_on for v in verdicts))
    added = 0
    for j in range(slip):
        if verdicts[j].correct == 1 and not flags[j] and not verdicts[j].noop and j in used:
            flags[j] = True
            added += 1
    return added


@dataclass
class ReferenceCounts(VerifierCounts):
    """:class:`VerifierCounts` plus the steps with equations that reach no reference value, the
    last steps among them that end the reasoning short of (or beside) the gold answer, the rows
    (completions) scored and those among them whose gold solution gave no reference value (none on
    its path, or no equation it can read): their steps were judged on arithmetic alone."""

    off_reference: int = 0
    stop_short: int = 0
    rows: int = 0
    rows_without_reference: int = 0

    STEP_KINDS = (*VerifierCounts.STEP_KINDS, "off_reference", "stop_short")

    @classmethod
    def metrics(cls, totals: dict[str, int]) -> dict[str, float]:
        """:meth:`VerifierCounts.metrics` plus ``frac_rows_without_reference``: the share of the rows scored
        whose gold solution gave no reference value (NaN without rows)."""
        rows = totals["rows"]
        share = totals["rows_without_reference"] / rows if rows else math.nan
        return super().metrics(totals) | {"frac_rows_without_reference": share}


class ReferenceVerifier(ArithmeticVerifier):
    """Step scorer ``(prompts, steps, solution=..., answer=..., **columns) -> list[list[float]]``.

    The arithmetic verifier's equation check plus the gold solution's intermediate values (see
    the module docstring). Needs the dataset columns in :data:`REQUIRED_COLUMNS`; the trainer
    checks them before training starts.

    Args:
        correct_weight: weight of the fraction of a step's equations that hold (>= 0; one of the two weights
            above 0).
        reference_weight: weight of the step reaching a reference value (>= 0).
        neutral_score: score of a step with no equation (default 0.5, for prose steps). 0 where every step
            should be an equation (arith): an unreadable step then earns no more than a wrong one, and a
            policy has no reason to drift into such steps (docs/results.md, arith-hard at 240 steps).
            Not on GSM8K text, whose correct solutions restate numbers in prose: scored as wrong, unread
            steps would put most first flags too early (docs/scorers.md).
        rel_tol: relative tolerance of ``lhs = rhs``.
        final_step_reaches_answer: the last step with equations must reach the gold answer to be
            on reference (default True; see the module docstring). False judges every step on its
            own, so a solution that stops short scores like a right one in every step it wrote.
        blame_stop: where a solution on the gold path up to its last equation, then stopping
            short of the gold answer, is blamed (:data:`BLAME_STOP`): ``"next_step"`` (default:
            the first later step that says more than the answer, score 0, else the last
            equation; on the dev files 3 more first errors found than ``"last_equation"``),
            ``"last_equation"`` or ``"conclusion"`` (score 0 there).
        credit_before_slip: credit the valid steps a later step uses that come before the first
            false equation (:func:`credit_before_slip`; default True).
        unit_flag: a step whose equation mixes units of one dimension (``50 km/hr * 3 days``,
            ``4 feet + 3 inches``: :func:`~psgrpo.ps.scorers.units.unit_mismatch`), or whose result
            is a value the gold solution writes only in other dimensions (``$36 / 4 = $9 per hour``
            against the gold's ``9 hours``: :meth:`GoldParts.other_dimension`), is off the path
            (default True; on the dev files 2 + 3 more first errors found, no correct solution blamed).
        blame_announcement: a step without equations that announces the operation (``we need to
            add ...``) of the first step off the path, whose equations hold, scores 0: the wrong idea
            is written there first (:func:`announced_error`; default True; on the dev files 3 more
            first errors found, 1 lost, no correct solution blamed).
        credit_valid: also credit valid steps off the gold route built from the question's
            numbers (:data:`CREDIT_VALID`, :func:`credit_valid_steps`; ``"unused"`` leaves 97.7 %
            of the real correct dev solutions unflagged against 96.8 %, F1 0.806 against 0.803;
            it changes arith's step scores, so it is not the default; ``"question"`` halves early
            blame but moves more blame late, docs/scorers.md). Default ``"none"``.
    """

    required_columns = REQUIRED_COLUMNS

    def __init__(
        self,
        correct_weight: float = 0.5,
        reference_weight: float = 0.5,
        neutral_score: float = 0.5,
        rel_tol: float = 1e-6,
        final_step_reaches_answer: bool = True,
        credit_valid: str = "none",
        blame_stop: str = "next_step",
        credit_before_slip: bool = True,
        unit_flag: bool = True,
        blame_announcement: bool = True,
    ) -> None:
        self.reference_weight = reference_weight  # before super().__init__, which checks weights()
        super().__init__(correct_weight, 0.0, neutral_score, rel_tol)
        self.final_step_reaches_answer = final_step_reaches_answer
        if blame_stop not in BLAME_STOP:
            raise ValueError(f"blame_stop must be one of {BLAME_STOP}, got {blame_stop!r}")
        if credit_valid not in CREDIT_VALID:
            raise ValueError(f"credit_valid must be one of {CREDIT_VALID}, got {credit_valid!r}")
        self.credit_valid = credit_valid
        self.blame_stop = blame_stop
        self.credit_before_slip = credit_before_slip
        self.unit_flag = unit_flag
        self.blame_announcement = blame_announcement
        self.counts = ReferenceCounts()
        self._reference_cache: dict[tuple[str, str | None], Counter[Fraction]] = {}
        self._parts_cache: dict[tuple[str, str | None], GoldParts] = {}

    def weights(self) -> dict[str, float]:
        """The weights a step's score is made of (both must be >= 0, one above 0)."""
        return {"correct_weight": self.correct_weight, "reference_weight": self.reference_weight}

    def reference(self, solution: str, answer: str | None) -> Counter[Fraction]:
        """:func:`reference_values` of one row, cached (a group's completions share the row)."""
        key = (solution, answer)
        if key not in self._reference_cache:
            if len(self._reference_cache) > 4096:
                self._reference_cache.clear()
            self._reference_cache[key] = reference_values(solution, answer, self.rel_tol)
        return self._reference_cache[key]

    def parts(self, solution: str, answer: str | None) -> GoldParts:
        """:func:`reference_parts` of one row, cached like :meth:`reference`."""
        key = (solution, answer)
        if key not in self._parts_cache:
            if len(self._parts_cache) > 4096:
                self._parts_cache.clear()
            self._parts_cache[key] = reference_parts(solution, answer, self.rel_tol)
        return self._parts_cache[key]

    def score_against(
        self,
        steps: Sequence[str],
        reference: Counter[Fraction],
        final: Fraction | None = None,
        parts: GoldParts | None = None,
        question: str | None = None,
    ) -> list[float]:
        """Scores of one completion's steps against its row's reference values, gold answer and
        :class:`GoldParts` (``None``: no support is carried, :func:`carry_support`)."""
        verdicts = self.score_steps(steps, extract_answer("\n".join(steps)))
        self.counts.add(verdicts)
        flags = on_reference(verdicts, reference) if reference else [v.correct == 1 for v in verdicts]
        conclusion = None
        if self.final_step_reaches_answer and final is not None and reference:
            stated = conclusion_value(steps, verdicts)
            last = (
                max(j for j, v in enumerate(verdicts) if v.correct is not None) if stated is not None else -1
            )
            if stated is None:
                last = max((j for j, v in enumerate(verdicts) if v.correct is not None), default=-1)
                short = stops_short(verdicts, flags, final)
                claim = (
                    next_claim(steps, verdicts, last) if short and self.blame_stop == "next_step" else None
                )
                if claim is not None:  # the step after the last equation carries the blame instead,
                    flags[last] = True  # unless it states the gold answer (the reasoning got there in words)
                    conclusion = None if final in _numbers(steps[claim]) else claim
                self.counts.stop_short += short
            elif stated != final and flags[last]:  # on the gold path up to its last equation, then stops
                reached = final in _results(verdicts[last])
                claim = next_claim(steps, verdicts, last) if self.blame_stop == "next_step" else None
                if claim is not None and not reached:
                    conclusion = claim
                elif self.blame_stop != "conclusion" and not reached:
                    flags[last] = False
                else:
                    conclusion = len(steps) - 1
                self.counts.stop_short += 1
        elif self.final_step_reaches_answer and final is not None and verdicts:
            # no reference values (the gold solution is algebra): a solution whose own answer is
            # wrong is still off the path at its last equation, unless that equation reaches the answer
            stated = answer_value(extract_answer("\n".join(steps)))
            stated = conclusion_value(steps, verdicts) if stated is None else stated
            last = max((j for j, v in enumerate(verdicts) if v.correct is not None), default=-1)
            if stated is not None and stated != final and last >= 0 and final not in _results(verdicts[last]):
                flags[last] = False
                self.counts.stop_short += 1
        if parts is not None:
            carry_support(verdicts, flags, reference, parts, final)
        if self.credit_before_slip and reference:
            credit_before_slip(verdicts, flags)
        if self.unit_flag:
            for j, step in enumerate(steps):
                if (
                    verdicts[j].correct is not None
                    and flags[j]
                    and (unit_mismatch(step) or parts is not None and parts.other_dimension(step))
                ):
                    flags[j] = False
        if self.credit_valid != "none" and question is not None and reference:
            last = max((j for j, v in enumerate(verdicts) if v.correct is not None), default=-1)
            keep_last = flags[last] if last >= 0 else False
            credit_valid_steps(
                verdicts,
                flags,
                question_numbers(question),
                chain=self.credit_valid in {"chain", "unused"},
                unused_only=self.credit_valid == "unused",
            )
            if (
                self.final_step_reaches_answer
                and final is not None
                and last >= 0
                and final not in _results(verdicts[last])
            ):
                flags[last] = keep_last
        if self.final_step_reaches_answer and final is not None and conclusion is None:
            conclusion = _blame_wrong_answer(steps, verdicts, flags, final)
        announced = announced_error(steps, verdicts, flags) if self.blame_announcement else None
        if announced is not None and conclusion is not None and conclusion < announced:
            announced = None
        self.counts.off_reference += sum(
            v.correct is not None and not f for v, f in zip(verdicts, flags, strict=True)
        )
        self.counts.rows += 1
        self.counts.rows_without_reference += not reference
        return [
            0.0
            if j in (conclusion, announced)
            else self.neutral_score
            if v.correct is None
            else self.correct_weight * v.correct + self.reference_weight * float(flag)
            for j, (v, flag) in enumerate(zip(verdicts, flags, strict=True))
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
        check_step_lists(steps)
        for index, gold in enumerate(solution):
            if gold is not None and not isinstance(gold, str):
                raise ValueError(
                    f"ReferenceVerifier: row {index}, field 'solution': got {short_repr(gold)} of type "
                    f"{type(gold).__name__}; expected the gold worked solution as a string, or None where a row has "
                    "none (its steps are then scored on arithmetic alone, counted in frac_rows_without_reference)"
                )
        solution = ["" if gold is None else gold for gold in solution]  # Arrow fills a missing key with None
        questions = columns.get("question") or [prompt_text(p) for p in prompts]
        scores = []
        for sample, gold, gold_answer, question in zip(steps, solution, answer, questions, strict=True):
            text = None if gold_answer is None else str(gold_answer)
            reference, parts = self.reference(gold, text), self.parts(gold, text)
            scores.append(self.score_against(sample, reference, answer_value(text), parts, str(question)))
        return scores

    def __repr__(self) -> str:
        return (
            f"ReferenceVerifier(correct_weight={self.correct_weight}, reference_weight={self.reference_weight}, "
            f"neutral_score={self.neutral_score}, rel_tol={self.rel_tol}, "
            f"final_step_reaches_answer={self.final_step_reaches_answer}, blame_stop={self.blame_stop!r}, "
            f"credit_before_slip={self.credit_before_slip}, unit_flag={self.unit_flag}, "
            f"blame_announcement={self.blame_announcement}, "
            f"credit_valid={self.credit_valid!r})"
        )
