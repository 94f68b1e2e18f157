"""Synthetic multi-step arithmetic word problems ("arith"): the embedded default task.

A problem is a short story whose quantity changes ``difficulty`` times (2–5 steps)::

    Question: Mia has 7 pens. She buys 5 more. She gives away 3. How many pens now?

and its gold solution is written the way PS-GRPO's step verifier reads it::

    <reasoning>
    Step 1: 7 + 5 = 12
    Step 2: 12 - 3 = 9
    </reasoning>
    <answer>9</answer>

Every number stays in [0, 99] so that a character-level model can learn it. Splits are
fixed: each split has its own seed, and the test questions never appear in train.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from datasets import Dataset

from psgrpo.data.prompts import format_prompt

MIN_STEPS, MAX_STEPS = 2, 5
MAX_VALUE = 99

NAMES = ["Mia", "Tom", "Ava", "Leo", "Zoe", "Sam", "Ben", "Amy", "Max", "Eva"]
PRONOUNS = {"Mia": "She", "Ava": "She", "Zoe": "She", "Amy": "She", "Eva": "She"}
ITEMS = ["apples", "pens", "books", "coins", "cards", "eggs", "shells", "stamps"]

SPLIT_SEEDS = {"train": 1234, "validation": 777, "test": 2024}
DEFAULT_SIZES = {"train": 4000, "validation": 200, "test": 200}
HELD_OUT_GUARANTEE = 1000
"""Train never contains a question of the first 1000 validation or test rows (default difficulty range)."""


@dataclass(frozen=True)
class ArithProblem:
    """One problem: the question, the gold reasoning lines, and the final answer."""

    question: str
    steps: tuple[str, ...]
    answer: int

    @property
    def solution(self) -> str:
        """The gold completion: ``<reasoning>`` with one ``Step k:`` line per step, then ``<answer>``."""
        lines = "\n".join(self.steps)
        return f"<reasoning>\n{lines}\n</reasoning>\n<answer>{self.answer}</answer>"


def _next_step(rng: random.Random, value: int, pronoun: str) -> tuple[str, str, int]:
    """Pick an operation that keeps the value in [0, MAX_VALUE]; return (sentence, op, operand).

    Operands are single digits (and ``× 2`` only up to 20) so that a character-level model
    can learn the arithmetic from a few minutes of SFT; difficulty comes from the step count.
    """
    options: list[tuple[str, str, int]] = []
    if value < MAX_VALUE:
        b = rng.randint(1, min(9, MAX_VALUE - value))
        options.append((rng.choice([f"{pronoun} buys {b} more.", f"{pronoun} finds {b} more."]), "+", b))
    if value > 1:
        b = rng.randint(1, min(9, value - 1))
        options.append((rng.choice([f"{pronoun} gives away {b}.", f"{pronoun} loses {b}."]), "-", b))
    if 0 < value <= 20:
        options.append((f"{pronoun} doubles them.", "*", 2))
    return rng.choice(options)


def generate_problem(rng: random.Random, n_steps: int) -> ArithProblem:
    """Draw one problem with ``n_steps`` operations from ``rng`` (deterministic given its state)."""
    if not MIN_STEPS <= n_steps <= MAX_STEPS:
        raise ValueError(f"n_steps must be in [{MIN_STEPS}, {MAX_STEPS}], got {n_steps}")
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    pronoun = PRONOUNS.get(name, "He")
    value = rng.randint(2, 20)
    sentences = [f"{name} has {value} {item}."]
    steps = []
    for k in range(1, n_steps + 1):
        sentence, op, b = _next_step(rng, value, pronoun)
        result = value + b if op == "+" else value - b if op == "-" else value * b
        sentences.append(sentence)
        steps.append(f"Step {k}: {value} {op} {b} = {result}")
        value = result
    sentences.append(f"How many {item} now?")
    return ArithProblem(" ".join(sentences), tuple(steps), value)


def generate_problems(
    n: int, seed: int, min_steps: int = MIN_STEPS, max_steps: int = MAX_STEPS
) -> list[ArithProblem]:
    """``n`` problems with difficulty uniform in [min_steps, max_steps], from one seeded generator."""
    rng = random.Random(seed)
    return [generate_problem(rng, rng.randint(min_steps, max_steps)) for _ in range(n)]


def make_arith_dataset(
    split: str = "train",
    n: int | None = None,
    template: str = "compact",
    chat: bool = False,
    min_steps: int = MIN_STEPS,
    max_steps: int = MAX_STEPS,
) -> Dataset:
    """The arith task as a ``datasets.Dataset`` for TRL.

    Columns: ``prompt`` (formatted question), ``completion`` (gold solution, for SFT), ``answer``
    (gold number as text), ``solution`` (same as completion), ``question``, ``difficulty`` (steps).

    Args:
        split: ``train``, ``validation`` or ``test``; each has a fixed seed, so the same call always
            returns the same rows. ``train`` excludes every question of the first
            :data:`HELD_OUT_GUARANTEE` rows of ``validation`` and ``test`` drawn with the default
            difficulty range (the held-out sets the CLI evaluates on).
        n: number of rows (default: 4000 train, 200 validation/test).
        template: prompt template name or pattern (see :mod:`psgrpo.data.prompts`).
        chat: conversational prompts (for chat models).
        min_steps, max_steps: difficulty range, within [2, 5].
    """
    if split not in SPLIT_SEEDS:
        raise ValueError(f"unknown arith split {split!r}; expected one of {sorted(SPLIT_SEEDS)}")
    n = DEFAULT_SIZES[split] if n is None else n
    if n <= 0:
        raise ValueError(f"arith split {split!r}: n must be positive, got {n}")
    if not MIN_STEPS <= min_steps <= max_steps <= MAX_STEPS:
        raise ValueError(
            f"need {MIN_STEPS} <= min_steps <= max_steps <= {MAX_STEPS}, got min_steps={min_steps}, "
            f"max_steps={max_steps}"
        )
    held_out: set[str] = set()
    if split == "train":  # keep held-out questions out of training
        for other in ("validation", "test"):
            held_out |= {p.question for p in generate_problems(HELD_OUT_GUARANTEE, SPLIT_SEEDS[other])}
    problems: list[ArithProblem] = []
    seed = SPLIT_SEEDS[split]
    while len(problems) < n:
        batch = generate_problems(n, seed, min_steps, max_steps)
        problems += [p for p in batch if p.question not in held_out][: n - len(problems)]
        seed += 1_000_003
    rows = {
        "prompt": [format_prompt(p.question, template, chat=chat) for p in problems],
        "completion": [p.solution for p in problems],
        "answer": [str(p.answer) for p in problems],
        "solution": [p.solution for p in problems],
        "question": [p.question for p in problems],
        "difficulty": [len(p.steps) for p in problems],
    }
    return Dataset.from_dict(rows)
