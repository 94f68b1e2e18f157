"""Which steps are necessary: the dependency path to the final answer, and no-op steps.

A step is *necessary* when its result lies on the dependency path to the final answer and it is
not a no-op. The path (:func:`dependency_path`) starts at the last step that states the final
answer as a result and follows each operand back to the latest earlier step that states that
value as a result (an operand the same step computed first is its own; a value used k times
reaches the k latest; ``-30 / 3`` uses -30, so a negative result is reached through its sign);
numbers no step computed (the question's) end it. So unrelated steps, a
chain of padding that feeds nothing, and the earlier copy of a repeated step are off the path. A
**no-op** step (:func:`noop_steps`) passes an operand through unchanged (``12 + 0 = 12``,
``12 * 1 = 12``, ``12 + 5 - 5 = 12``: changing that operand by δ changes the result by δ), uses
no other number an earlier step computed (``1 * 2 = 2`` doubling a running total of 1 is real
work), and pads: the operand it passes through was computed by an earlier step, or nothing later
uses its result (``3 customers × 1 DVD each = 3 DVDs`` then used is real work); the path
continues through it to where its operand came from. Values match exactly
(``1,000`` is ``1000``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from psgrpo.ps.scorers.equations import StepEquations
from psgrpo.ps.scorers.expressions import number_value, tokenize
from psgrpo.rewards.numbers import parse_number


def answer_value(answer: str | None) -> Fraction | None:
    """The number a final answer states: the whole text as a number, else its only number, else ``None``."""
    if answer is None:
        return None
    value = parse_number(answer)
    if value is not None:
        return value
    numbers = [t for t in tokenize(answer) if t.kind == "num"]
    return number_value(numbers[0].text) if len(numbers) == 1 else None


@dataclass(frozen=True)
class Links:
    """How the steps of one solution use each other's results.

    Attributes:
        depends_on: per step, the earlier steps whose results it uses.
        producers: per value, the steps stating it as a result, in order.
    """

    depends_on: list[set[int]]
    producers: dict[Fraction, list[int]]


def links(found: Sequence[StepEquations]) -> Links:
    """The :class:`Links` of a solution's steps (linked as in :func:`dependency_path`)."""
    depends_on: list[set[int]] = [set() for _ in found]
    producers: dict[Fraction, list[int]] = {}
    for j, step in enumerate(found):
        first_own: dict[Fraction, int] = {}
        for position, value in step.results:
            first_own[value] = min(position, first_own.get(value, position))
        external = Counter(
            value for position, value in step.uses if first_own.get(value, position) >= position
        )
        for value, count in external.items():
            depends_on[j].update(producers.get(value, [])[-count:])
        for value in dict.fromkeys(value for _, value in step.results):
            producers.setdefault(value, []).append(j)
    return Links(depends_on, producers)


def dependency_graph(found: Sequence[StepEquations]) -> list[set[int]]:
    """For each step, the earlier steps whose results it uses (linked as in :func:`dependency_path`)."""
    return links(found).depends_on


def dependency_path(found: Sequence[StepEquations], target: Fraction | None) -> set[int]:
    """Indices of the steps on the dependency path to the final answer ``target``.

    The path starts at the last step that states ``target`` as a result. An operand of a step on
    the path links to the latest earlier step stating that value as a result, unless the same
    step computed that value before using it; a value used k times links to the k latest such
    steps (``20 + 20 + 15`` after two steps that each gave 20). ``None`` (no final answer) gives
    an empty path.
    """
    found_links = links(found)
    depends_on, producers = found_links.depends_on, found_links.producers
    path: set[int] = set()
    stack = producers.get(target, [])[-1:] if target is not None else []
    while stack:
        j = stack.pop()
        if j not in path:
            path.add(j)
            stack.extend(depends_on[j] - path)
    return path


def noop_steps(found: Sequence[StepEquations]) -> list[bool]:
    """Whether each step is a no-op: it states equations and each one passes an operand through
    unchanged (:func:`pass_through`) with no other number that an earlier step computed, and
    either the operand passed through was computed by an earlier step (padding: ``12 * 1 = 12``
    after a step gave 12) or no later step uses the result. So ``3 customers × 1 DVD each = 3
    DVDs`` or ``60 / 1 = 60 servings``, turning a question quantity into one the solution then
    uses, is real work."""
    used = set().union(*dependency_graph(found)) if found else set()
    known: set[Fraction] = set()
    flags = []
    for j, step in enumerate(found):
        flags.append(
            bool(step.equations)
            and all(
                eq.passes_through is not None
                and known.isdisjoint(eq.passes_through)
                and (eq.rhs_value in known or j not in used)
                for eq in step.equations
            )
        )
        known.update(value for _, value in step.results)
    return flags
