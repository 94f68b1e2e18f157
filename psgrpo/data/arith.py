"""Synthetic multi-step arithmetic word problems ("arith"): the embedded default task and its variants.

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

Variants (:data:`ARITH_VARIANTS`, the ``--dataset`` name) change the shape of the problems:

* ``arith``: the default above (its rows are exactly those of earlier versions).
* ``arith-long``: 4–8 operations, so one slip among many steps makes an answer wrong.
* ``arith-distractor``: 2–5 operations plus one irrelevant fact about someone else
  (``Tom has 6 coins and finds 3 more.``); the question names whom it asks about, and half of
  the gold solutions compute the irrelevant value anyway, in a step whose result is never used.
* ``arith-hard``: both (4–8 operations and a distractor), the credit-assignment testbed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from datasets import Dataset

from psgrpo.config.options import ArithVariant
from psgrpo.data.prompts import format_prompt

MIN_STEPS, MAX_STEPS = 2, 5
"""Operation counts of the default variant."""
MAX_CHAIN = 10
"""The most operations any variant may ask for (a longer story no longer fits the tiny model's context)."""
MAX_VALUE = 99

NAMES = ["Mia", "Tom", "Ava", "Leo", "Zoe", "Sam", "Ben", "Amy", "Max", "Eva"]
PRONOUNS = {"Mia": "She", "Ava": "She", "Zoe": "She", "Amy": "She", "Eva": "She"}
ITEMS = ["apples", "pens", "books", "coins", "cards", "eggs", "shells", "stamps"]

SPLIT_SEEDS = {"train": 1234, "validation": 777, "test": 2024}
DEFAULT_SIZES = {"train": 4000, "validation": 200, "test": 200}
HELD_OUT_GUARANTEE = 1000
"""Train never contains a question of the first 1000 validation or test rows (default difficulty range)."""


@dataclass(frozen=True)
class ArithSpec:
    """The shape of an arith variant.

    Attributes:
        min_steps, max_steps: operations per problem, drawn uniformly in this range.
        max_operand: largest operand of ``+`` and ``-`` (``×`` is always ``× 2``).
        double_max: ``doubles them`` is offered only while the value is at most this.
        distractor_prob: probability that a question also states one irrelevant fact.
        distractor_step_prob: probability that the gold solution of such a question computes the
            irrelevant value anyway, in a step whose result is never used.
    """

    min_steps: int = MIN_STEPS
    max_steps: int = MAX_STEPS
    max_operand: int = 9
    double_max: int = 20
    distractor_prob: float = 0.0
    distractor_step_prob: float = 0.5

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps <= MAX_CHAIN:
            raise ValueError(
                f"arith variant: need 1 <= min_steps <= max_steps <= {MAX_CHAIN}, got min_steps={self.min_steps}, "
                f"max_steps={self.max_steps}"
            )
        if not 1 <= self.max_operand <= MAX_VALUE // 2:
            raise ValueError(
                f"arith variant: max_operand must be in [1, {MAX_VALUE // 2}], got {self.max_operand}"
            )
        for name in ("distractor_prob", "distractor_step_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(
                    f"arith variant: {name} must be a probability in [0, 1], got {getattr(self, name)}"
                )


ARITH_VARIANTS: dict[ArithVariant, ArithSpec] = {
    "arith": ArithSpec(),
    "arith-long": ArithSpec(min_steps=4, max_steps=8),
    "arith-distractor": ArithSpec(distractor_prob=1.0),
    "arith-hard": ArithSpec(min_steps=4, max_steps=8, distractor_prob=1.0),
}
"""The arith datasets by name (``--dataset``; the names are :data:`psgrpo.config.options.ArithVariant`)."""


def get_arith_spec(variant: str | ArithSpec) -> ArithSpec:
    """The :class:`ArithSpec` of a variant name (or the spec itself); the error lists the names."""
    if isinstance(variant, ArithSpec):
        return variant
    try:
        return ARITH_VARIANTS[variant]
    except KeyError:
        raise ValueError(
            f"unknown arith variant {variant!r}; expected one of {sorted(ARITH_VARIANTS)}"
        ) from None


@dataclass(frozen=True)
class ArithStep:
    """One written operation ``a op b = stated``.

    Attributes:
        a, op, b: the operation (``op`` is ``+``, ``-`` or ``*``).
        stated: the result the solution writes; ``None`` means the true result (a wrong step
            states something else).
        used: False for a distractor computation, whose result no later step or answer uses.
    """

    a: int
    op: str
    b: int
    stated: int | None = None
    used: bool = True

    @property
    def result(self) -> int:
        """The true value of ``a op b``."""
        return self.a + self.b if self.op == "+" else self.a - self.b if self.op == "-" else self.a * self.b

    @property
    def written(self) -> int:
        """The result as written: ``stated``, or the true result."""
        return self.result if self.stated is None else self.stated

    def text(self, k: int) -> str:
        """The solution line of this operation as step ``k`` (1-based): ``Step k: a op b = c``."""
        return f"Step {k}: {self.a} {self.op} {self.b} = {self.written}"


@dataclass(frozen=True)
class ArithProblem:
    """One problem: the question, the gold reasoning lines, and the final answer.

    ``chain`` holds the operations behind ``steps`` (one per line) when the problem was generated;
    hand-written problems may leave it empty.
    """

    question: str
    steps: tuple[str, ...]
    answer: int
    chain: tuple[ArithStep, ...] = field(default=(), compare=False)

    @property
    def solution(self) -> str:
        """The gold completion: ``<reasoning>`` with one ``Step k:`` line per step, then ``<answer>``."""
        lines = "\n".join(self.steps)
        return f"<reasoning>\n{lines}\n</reasoning>\n<answer>{self.answer}</answer>"

    @property
    def difficulty(self) -> int:
        """Operations the answer depends on (distractor steps do not count)."""
        return sum(step.used for step in self.chain) if self.chain else len(self.steps)


def problem_from_chain(question: str, chain: tuple[ArithStep, ...]) -> ArithProblem:
    """The problem whose solution writes ``chain`` in order; the answer is the last used step's written result."""
    used = [step for step in chain if step.used]
    if not used:
        raise ValueError("an arith chain needs at least one used step")
    steps = tuple(step.text(k) for k, step in enumerate(chain, start=1))
    return ArithProblem(question, steps, used[-1].written, chain)


def _next_step(rng: random.Random, value: int, pronoun: str, spec: ArithSpec) -> tuple[str, str, int]:
    """Pick an operation that keeps the value in [0, MAX_VALUE]; return (sentence, op, operand).

    Operands are at most ``spec.max_operand`` (single digits by default) and ``× 2`` applies only
    up to ``spec.double_max``, so that a character-level model can learn the arithmetic from a
    few minutes of SFT; difficulty comes from the step count. The random draws of the default
    spec are those of earlier versions, so its splits are unchanged.
    """
    options: list[tuple[str, str, int]] = []
    if value < MAX_VALUE:
        b = rng.randint(1, min(spec.max_operand, MAX_VALUE - value))
        options.append((rng.choice([f"{pronoun} buys {b} more.", f"{pronoun} finds {b} more."]), "+", b))
    if value > 1:
        b = rng.randint(1, min(spec.max_operand, value - 1))
        options.append((rng.choice([f"{pronoun} gives away {b}.", f"{pronoun} loses {b}."]), "-", b))
    if 0 < value <= spec.double_max:
        options.append((f"{pronoun} doubles them.", "*", 2))
    return rng.choice(options)


def _distractor(
    rng: random.Random, name: str, item: str, avoid: set[int], spec: ArithSpec
) -> tuple[str, ArithStep]:
    """An irrelevant fact about someone of the other gender (so pronouns stay unambiguous) and its step.

    Its result never equals a number in ``avoid`` (the later operands and the answer), so the
    step verifier always judges it unnecessary.
    """
    others = [n for n in NAMES if (n in PRONOUNS) != (name in PRONOUNS)]
    other, other_item = rng.choice(others), rng.choice([i for i in ITEMS if i != item])
    while True:
        a = rng.randint(2, 20)
        if rng.random() < 0.5:
            b = rng.randint(1, spec.max_operand)
            step, verb = ArithStep(a, "+", b, used=False), rng.choice([f"finds {b} more", f"buys {b} more"])
        else:
            b = rng.randint(1, min(spec.max_operand, a - 1))
            step, verb = ArithStep(a, "-", b, used=False), rng.choice([f"loses {b}", f"gives away {b}"])
        if step.result not in avoid:
            return f"{other} has {a} {other_item} and {verb}.", step


def generate_problem(rng: random.Random, n_steps: int, spec: ArithSpec | None = None) -> ArithProblem:
    """Draw one problem with ``n_steps`` operations from ``rng`` (deterministic given its state)."""
    spec = spec or ARITH_VARIANTS["arith"]
    if not spec.min_steps <= n_steps <= spec.max_steps:
        raise ValueError(f"n_steps must be in [{spec.min_steps}, {spec.max_steps}], got {n_steps}")
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    pronoun = PRONOUNS.get(name, "He")
    value = rng.randint(2, 20)
    sentences = [f"{name} has {value} {item}."]
    chain: list[ArithStep] = []
    for _ in range(n_steps):
        sentence, op, b = _next_step(rng, value, pronoun, spec)
        sentences.append(sentence)
        chain.append(ArithStep(value, op, b))
        value = chain[-1].result
    ending = f"How many {item} now?"
    if spec.distractor_prob and rng.random() < spec.distractor_prob:
        position = rng.randint(0, n_steps)  # after this many operations
        avoid = {n for step in chain[position:] for n in (step.a, step.b)} | {value}
        sentence, step = _distractor(rng, name, item, avoid, spec)
        sentences.insert(position + 1, sentence)
        if rng.random() < spec.distractor_step_prob:
            chain.insert(position, step)
        ending = f"How many {item} does {name} have now?"
    sentences.append(ending)
    return problem_from_chain(" ".join(sentences), tuple(chain))


def generate_problems(
    n: int,
    seed: int,
    min_steps: int | None = None,
    max_steps: int | None = None,
    spec: ArithSpec | None = None,
) -> list[ArithProblem]:
    """``n`` problems with difficulty uniform in [min_steps, max_steps] (default: the spec's), one seeded generator."""
    spec = spec or ARITH_VARIANTS["arith"]
    lo = spec.min_steps if min_steps is None else min_steps
    hi = spec.max_steps if max_steps is None else max_steps
    rng = random.Random(seed)
    return [generate_problem(rng, rng.randint(lo, hi), spec) for _ in range(n)]


def split_problems(
    split: str = "train",
    n: int | None = None,
    min_steps: int | None = None,
    max_steps: int | None = None,
    variant: str | ArithSpec = "arith",
) -> list[ArithProblem]:
    """The problems of one split, as :func:`make_arith_dataset` lays them out (same arguments)."""
    spec = get_arith_spec(variant)
    if split not in SPLIT_SEEDS:
        raise ValueError(f"unknown arith split {split!r}; expected one of {sorted(SPLIT_SEEDS)}")
    n = DEFAULT_SIZES[split] if n is None else n
    if n <= 0:
        raise ValueError(f"arith split {split!r}: n must be positive, got {n}")
    lo = spec.min_steps if min_steps is None else min_steps
    hi = spec.max_steps if max_steps is None else max_steps
    if not spec.min_steps <= lo <= hi <= spec.max_steps:
        raise ValueError(
            f"need {spec.min_steps} <= min_steps <= max_steps <= {spec.max_steps}, got min_steps={lo}, "
            f"max_steps={hi}"
        )
    held_out: set[str] = set()
    if split == "train":  # keep held-out questions out of training
        for other in ("validation", "test"):
            held_out |= {
                p.question for p in generate_problems(HELD_OUT_GUARANTEE, SPLIT_SEEDS[other], spec=spec)
            }
    problems: list[ArithProblem] = []
    seed = SPLIT_SEEDS[split]
    while len(problems) < n:
        batch = generate_problems(n, seed, lo, hi, spec)
        problems += [p for p in batch if p.question not in held_out][: n - len(problems)]
        seed += 1_000_003
    return problems


def make_arith_dataset(
    split: str = "train",
    n: int | None = None,
    template: str = "compact",
    chat: bool = False,
    min_steps: int | None = None,
    max_steps: int | None = None,
    variant: str | ArithSpec = "arith",
) -> Dataset:
    """The arith task as a ``datasets.Dataset`` for TRL.

    Columns: ``prompt`` (formatted question), ``completion`` (gold solution, for SFT), ``answer``
    (gold number as text), ``solution`` (same as completion), ``question``, ``difficulty``
    (operations the answer depends on).

    Args:
        split: ``train``, ``validation`` or ``test``; each has a fixed seed, so the same call always
            returns the same rows. ``train`` excludes every question of the first
            :data:`HELD_OUT_GUARANTEE` rows of ``validation`` and ``test`` drawn with the variant's
            default difficulty range (the held-out sets the CLI evaluates on).
        n: number of rows (default: 4000 train, 200 validation/test).
        template: prompt template name or pattern (see :mod:`psgrpo.data.prompts`).
        chat: conversational prompts (for chat models).
        min_steps, max_steps: difficulty range, within the variant's (default: all of it).
        variant: a name in :data:`ARITH_VARIANTS` or an :class:`ArithSpec`.
    """
    problems = split_problems(split, n, min_steps, max_steps, variant)
    rows = {
        "prompt": [format_prompt(p.question, template, chat=chat) for p in problems],
        "completion": [p.solution for p in problems],
        "answer": [str(p.answer) for p in problems],
        "solution": [p.solution for p in problems],
        "question": [p.question for p in problems],
        "difficulty": [p.difficulty for p in problems],
    }
    return Dataset.from_dict(rows)


def with_wrong_step(problem: ArithProblem, index: int, wrong_result: int) -> ArithProblem | None:
    """A copy of ``problem`` with exactly one wrong step: ``chain[index]`` states ``wrong_result``.

    Later used steps are recomputed from the wrong value (so their own arithmetic holds) and the
    answer is where the chain then ends; distractor steps are unchanged. Returns ``None`` when a
    recomputed value leaves [0, MAX_VALUE] (the task never shows such numbers).

    Raises:
        ValueError: the problem has no chain, ``index`` is out of range or names a distractor
            step, or ``wrong_result`` is the step's true result.
    """
    chain = list(problem.chain)
    if not 0 <= index < len(chain):
        raise ValueError(f"step index {index} is outside the chain of {len(chain)} steps")
    step = chain[index]
    if not step.used:
        raise ValueError(f"step {index + 1} is a distractor: a wrong value there changes no answer")
    if wrong_result == step.result:
        raise ValueError(f"step {index + 1}: {wrong_result} is its true result, not a wrong one")
    chain[index] = replace(step, stated=wrong_result)
    value = wrong_result
    for k in range(index + 1, len(chain)):
        if chain[k].used:
            chain[k] = replace(chain[k], a=value)
            value = chain[k].result
    if not all(0 <= n <= MAX_VALUE for s in chain for n in (s.a, s.written)):
        return None
    return problem_from_chain(problem.question, tuple(chain))
