"""Rule-based step verifier: check the arithmetic written in each reasoning step.

A step such as ``Step 2: 16 - 3 - 4 = 9`` or GSM8K's ``48/2 = <<48/2=24>>24`` states equations.
The verifier finds them, evaluates both sides exactly (``Fraction``, a tiny recursive-descent
parser, never ``eval``) and scores the step (DeepSeekMath-style process reward, the reference
``0.6·correct + 0.4·necessary``)::

    verifier = ArithmeticVerifier()
    verifier(["Mia has 7 pens ..."], [["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"]])
    # [[1.0, 1.0, 0.5]]

* **correct**: the fraction of the step's equations that hold; a step without equations gets the
  neutral score instead.
* **necessary**: the step's result lies on the dependency path to the final answer, and the step
  is not a no-op. The path starts at the last step that states the final answer as a result and
  follows each operand back to the latest earlier step that states that value as a result (an
  operand the same step computed first is its own; a value used k times reaches the k latest);
  numbers no step computed (the question's) end it. So unrelated steps, a chain of padding that
  feeds nothing, and the earlier copy of a repeated step are off the path. A **no-op** step passes
  an operand through unchanged (``12 + 0 = 12``, ``12 * 1 = 12``, ``12 + 5 - 5 = 12``: changing that
  operand by δ changes the result by δ) and uses no other number an earlier step computed (``1 * 2
  = 2`` doubling a running total of 1 is real work); it is never necessary, and the path continues
  through it to where its operand came from. Without a final answer no step is necessary. Values
  match exactly (``1,000`` is ``1000``). On GSM8K's test gold solutions 94.5 % of the steps with
  equations are necessary (docs/robustness.md).

Equations are read from GSM8K calculator annotations ``<<expr=result>>`` (the visible copy of the
result right after ``>>`` belongs to the annotation, so ``48/2 = <<48/2=24>>24`` is one equation)
and from plain text: ``a op b = c``, chains ``a = b = c``, operators ``+ - * / // × ÷ x`` (``x``
only between numbers), Unicode minus, parentheses (``3(47)`` multiplies), numbers ``1,000``,
``$18``, ``2.5``, ``3/4``, ``3 1/2``, ``½`` and ``50%`` (an equation with ``%`` holds if it holds
with percentages as hundredths or as written). A right side that writes decimals may round:
``10/3 = 3.33`` holds. Text next to a variable or an operator word (``2x + 3 = 9``,
``X*25% = 19.50``, ``15 pages x 1/3 = 5``) is only part of an expression and is skipped, and so is
anything else that does not parse: it is not an equation. Division by zero makes an equation fail.

**Bounded work, never an exception.** Any string is either equations the verifier judges or not an
equation. An expression of more than :data:`MAX_EXPRESSION_TOKENS` tokens, nesting (parentheses,
signs) deeper than :data:`MAX_NESTING`, a number of more than :data:`MAX_LITERAL_DIGITS` digits, a
value whose numerator or denominator exceeds :data:`MAX_VALUE_BITS` bits, or a step that spends its
work budget (:data:`WORK_PER_CHAR` parser token visits per character) is *not checkable*: the run
of arithmetic holding it is skipped and counted in ``StepScore.unparsed`` (the trainer logs the
batch total as ``ps/unparsed_equations``). The parser's recursion is bounded by those limits, so a
3,000-fold division or 2,000 nested parentheses cost milliseconds instead of a ``RecursionError``,
and verification time is linear in the text's length (``benchmarks/bench_verifier.py --scaling``).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from itertools import pairwise
from typing import Any

from psgrpo.numbers import parse_number
from psgrpo.rewards import extract_answer

# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class Equation:
    """One stated equation ``lhs = rhs``; a value is ``None`` when it divides by zero.

    ``passes_through``: ``None``, unless the left side passes an operand equal to the right side
    through unchanged (``12 + 0``, ``12 * 1``, see :func:`pass_through`); then the left side's other
    numbers, which make it a no-op unless one of them was computed by an earlier step.
    """

    lhs_text: str
    rhs_text: str
    lhs_value: Fraction | None
    rhs_value: Fraction | None
    holds: bool
    passes_through: tuple[Fraction, ...] | None = None


@dataclass(frozen=True)
class StepScore:
    """The verdict on one step: ``correct`` is ``None`` when the step states no equation.

    ``noop``: the step states equations and every one is a no-op. ``unparsed``: runs of arithmetic
    in the step the verifier gave up on (beyond its budget), see the module docstring.
    """

    correct: float | None
    necessary: bool
    equations: list[Equation] = field(default_factory=list)
    noop: bool = False
    unparsed: int = 0

    def score(
        self, correct_weight: float = 0.6, necessary_weight: float = 0.4, neutral_score: float = 0.5
    ) -> float:
        """``correct_weight·correct + necessary_weight·necessary``, or ``neutral_score`` without equations."""
        if self.correct is None:
            return neutral_score
        return correct_weight * self.correct + necessary_weight * float(self.necessary)


# --------------------------------------------------------------------------- budget

MAX_EXPRESSION_TOKENS = 128
"""Most tokens one side of an equation may have (GSM8K's longest is about 30)."""
MAX_NESTING = 32
"""Deepest nesting of parentheses and unary signs the parser follows."""
MAX_LITERAL_DIGITS = 40
"""Most digits one number in an equation may have (Python refuses int conversion beyond 4300)."""
MAX_VALUE_BITS = 1024
"""Largest numerator or denominator (bits) of any value computed; ``99999 * 99999 * …`` stops here."""
WORK_PER_CHAR = 16
"""A step's work budget: parser token visits per character of its text (plus :data:`BASE_WORK`)."""
BASE_WORK = 1024


class BudgetExceeded(ValueError):
    """Text the verifier will not judge: beyond one of the limits above. Never escapes the verifier."""


class _Budget:
    """The work left to one step: every parse spends the number of tokens it is given."""

    def __init__(self, n_chars: int) -> None:
        self.work = WORK_PER_CHAR * n_chars + BASE_WORK

    def spend(self, n_tokens: int) -> None:
        self.work -= n_tokens
        if self.work < 0:
            raise BudgetExceeded("the step's work budget is spent")


def _bounded(value: Fraction) -> Fraction:
    """``value``, unless its numerator or denominator is larger than :data:`MAX_VALUE_BITS` bits."""
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_VALUE_BITS:
        raise BudgetExceeded(f"a value beyond {MAX_VALUE_BITS} bits")
    return value


# --------------------------------------------------------------------------- tokens

_DECIMAL = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_FRACTION = r"\d+/\d+(?!\.?\d|,\d)"  # glued 3/4 is one number (so 1 1/2 / 1/2 = 3), not 3/4.5
_VULGAR = "¼½¾⅐⅑⅒⅓⅔⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞"
_SPACED = r"(?<=\$)\d{1,3}(?: \d{3})+(?:\.\d+)?(?![\d,/])"  # $350 000 (space-grouped amounts)
_NUMBER = rf"\$?(?:{_SPACED}|\d+ {_FRACTION}|{_FRACTION}|\d*[{_VULGAR}]|{_DECIMAL})%?"  # 3 1/2, 1½
_TOKEN_RE = re.compile(
    rf"(?P<ws>\s+|\$(?=[-−]\d))|(?P<num>{_NUMBER})|(?P<op>//|[-+*/×÷−–])|(?P<lpar>\()|(?P<rpar>\))"
    r"|(?P<eq>=)|(?P<word>[A-Za-z_]+)|(?P<other>.)",
    re.DOTALL,
)
_OP_CANONICAL = {
    "+": "+", "-": "-", "−": "-", "–": "-", "*": "*", "×": "*", "x": "*", "X": "*", "/": "/", "÷": "/", "//": "//"
}  # fmt: skip
_MATH_KINDS = {"num", "op", "lpar", "rpar", "eq"}


@dataclass(frozen=True)
class Token:
    """A lexical token of step text: ``kind`` is num/op/lpar/rpar/eq/word/other; ``start:end`` in the text."""

    kind: str
    text: str
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (whitespace dropped).

    ``x``/``X`` between two numbers is multiplication; an integer with a leading zero (``0730``, a
    time or a code) is not a number.
    """
    tokens = [
        Token(_kind(m.lastgroup or "other", m.group()), m.group(), m.start(), m.end())
        for m in _TOKEN_RE.finditer(text)
        if m.lastgroup != "ws"
    ]
    return [_times_sign(tokens, i) for i in range(len(tokens))]


def _kind(kind: str, text: str) -> str:
    """The token kind, except that a number with a leading zero is ``other``."""
    return "other" if kind == "num" and re.match(r"\$?0\d", text) else kind


def _times_sign(tokens: list[Token], i: int) -> Token:
    """``tokens[i]`` as an operator when it is the letter ``x`` between two numbers (``3 x 4``, ``3x4``, ``3 x -4``)."""
    token = tokens[i]
    if token.kind != "word" or token.text not in {"x", "X"} or i == 0 or i + 1 == len(tokens):
        return token
    following = tokens[i + 1 : i + 3]
    negative = (  # 3 x -4, but not the algebra 2x-5
        len(following) == 2
        and following[0].text in {"-", "−"}
        and following[1].kind == "num"
        and following[0].start > token.end
    )
    if tokens[i - 1].kind in {"num", "rpar"} and (following[0].kind in {"num", "lpar"} or negative):
        return Token("op", token.text, token.start, token.end)
    return token


# --------------------------------------------------------------------------- expressions

Expr = Fraction | tuple[str, Any] | tuple[str, Any, Any]
"""A parsed expression: a number, ``(op, left, right)`` with op in ``+ - * / //``, or a unary
``("neg", operand)`` / ``("%", operand)`` (a percentage, read as hundredths or as written)."""


def parse_literal(text: str) -> Expr | None:
    """The expression a number token stands for: ``$1,000`` → 1000, ``3/4`` → 3 ÷ 4, ``3 1/2`` →
    3 + 1 ÷ 2 (only a proper fraction makes a mixed number), ``1½`` → 3/2, ``50%`` → a percentage of 50.

    Raises:
        BudgetExceeded: the number has more than :data:`MAX_LITERAL_DIGITS` digits.
    """
    body = text.removeprefix("$")
    if sum(char.isdigit() for char in body) > MAX_LITERAL_DIGITS:
        raise BudgetExceeded(f"a number of more than {MAX_LITERAL_DIGITS} digits")
    percent = body.endswith("%")
    body = body.removesuffix("%")
    tree = _fraction_literal(body) if "/" in body else _plain_literal(body)
    return ("%", tree) if percent and tree is not None else tree


def _fraction_literal(body: str) -> Expr | None:
    """``3/4`` as the division 3 ÷ 4 (so ``5/0`` divides by zero), ``3 1/2`` as 3 + 1 ÷ 2."""
    whole, _, fraction = body.rpartition(" ")
    numerator, denominator = (Fraction(part) for part in fraction.split("/"))
    tree: Expr = ("/", numerator, denominator)
    if not whole:
        return tree
    return ("+", Fraction(whole), tree) if numerator < denominator else None


def _plain_literal(body: str) -> Fraction:
    """``1,000``, ``350 000``, ``2.5``, ``.5`` or a vulgar fraction ``1½``, exactly."""
    if body[-1] in _VULGAR:
        return Fraction(body[:-1] or 0) + Fraction(unicodedata.numeric(body[-1])).limit_denominator(10)
    return Fraction(body.replace(",", "").replace(" ", ""))


class _Parser:
    """Recursive descent over tokens, standard precedence::

    expr := term (("+" | "-") term)*
    term := unary (("*" | "/" | "//") unary | "(" expr ")")*     # 3(47), (1/2) 278: implicit product
    unary := ("-" | "+") unary | number | "(" expr ")"

    Recursion happens only for a sign or a parenthesis, at most :data:`MAX_NESTING` deep.
    """

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise BudgetExceeded(f"nesting deeper than {MAX_NESTING}")

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take_op(self, ops: set[str]) -> str | None:
        token = self.peek()
        if token is not None and token.kind == "op" and _OP_CANONICAL[token.text] in ops:
            self.pos += 1
            return _OP_CANONICAL[token.text]
        return None

    def expr(self) -> Expr | None:
        left = self.term()
        while left is not None and (op := self.take_op({"+", "-"})):
            right = self.term()
            left = None if right is None else (op, left, right)
        return left

    def term(self) -> Expr | None:
        left = self.unary()
        while left is not None:
            token = self.peek()
            if op := self.take_op({"*", "/", "//"}):
                right = self.unary()
            elif self._implicit_factor(token):
                op, right = "*", self.primary()
            else:
                break
            left = None if right is None else (op, left, right)
        return left

    def _implicit_factor(self, token: Token | None) -> bool:
        """A factor written without ``*``: ``(`` after anything, or a number right after ``)``."""
        if token is None:
            return False
        return token.kind == "lpar" or (token.kind == "num" and self.tokens[self.pos - 1].kind == "rpar")

    def unary(self) -> Expr | None:
        op = self.take_op({"-", "+"})
        if op is None:
            return self.primary()
        self.nest()
        operand = self.unary()
        self.depth -= 1
        return None if operand is None else (("neg", operand) if op == "-" else operand)

    def primary(self) -> Expr | None:
        token = self.peek()
        if token is None:
            return None
        self.pos += 1
        if token.kind == "num":
            return parse_literal(token.text)
        if token.kind == "lpar":
            self.nest()
            inner = self.expr()
            self.depth -= 1
            closing = self.peek()
            if inner is None or closing is None or closing.kind != "rpar":
                return None
            self.pos += 1
            return inner
        return None


def parse_expression(tokens: Sequence[Token], budget: _Budget | None = None) -> Expr | None:
    """Parse all of ``tokens`` as one arithmetic expression, or ``None`` if they are not one.

    Raises:
        BudgetExceeded: more than :data:`MAX_EXPRESSION_TOKENS` tokens, nesting deeper than
            :data:`MAX_NESTING`, a number with too many digits, or ``budget`` spent.
    """
    if not tokens:
        return None
    if len(tokens) > MAX_EXPRESSION_TOKENS:
        raise BudgetExceeded(f"an expression of more than {MAX_EXPRESSION_TOKENS} tokens")
    if budget is not None:
        budget.spend(len(tokens))
    parser = _Parser(tokens)
    tree = parser.expr()
    return tree if parser.pos == len(tokens) else None


HUNDREDTHS = Fraction(1, 100)


def evaluate(tree: Expr, percent: Fraction = HUNDREDTHS) -> Fraction | None:
    """The exact value of a parsed expression, ``None`` when it divides by zero.

    ``percent`` is what ``1%`` is worth: 1/100 (``50% * 2 = 1``), or 1 to read ``50%`` as written.

    Raises:
        BudgetExceeded: a value (of the tree or a subtree) beyond :data:`MAX_VALUE_BITS` bits.
    """
    if isinstance(tree, Fraction):
        return _bounded(tree)
    if len(tree) == 2:
        value = evaluate(tree[1], percent)
        return None if value is None else _bounded(-value if tree[0] == "neg" else value * percent)
    op, left, right = tree
    a, b = evaluate(left, percent), evaluate(right, percent)
    if a is None or b is None or (op in {"/", "//"} and b == 0):
        return None
    if op == "+":
        return _bounded(a + b)
    if op == "-":
        return _bounded(a - b)
    if op == "*":
        return _bounded(a * b)
    return _bounded(a / b if op == "/" else Fraction(math.floor(a / b)))


def has_operator(tree: Expr) -> bool:
    """True when the expression contains a binary operation (a bare, negated or percent number does not)."""
    if isinstance(tree, Fraction):
        return False
    return len(tree) == 3 or has_operator(tree[1])


def evaluate_text(text: str, percent: Fraction = HUNDREDTHS) -> Fraction | None:
    """Parse and evaluate a whole arithmetic expression written as text (``None``: not one, ÷0, or
    beyond the verifier's limits)."""
    try:
        tree = parse_expression(tokenize(text))
        return None if tree is None else evaluate(tree, percent)
    except BudgetExceeded:
        return None


def number_value(text: str) -> Fraction | None:
    """The value of one number token as written (``50%`` is 50), ``None`` if it is not one (or too long)."""
    try:
        tree = parse_literal(text)
        return None if tree is None else evaluate(tree, Fraction(1))
    except BudgetExceeded:
        return None


def written_numbers(text: str) -> list[Fraction]:
    """The numbers written in one number token, as operands: ``120/60`` → [120, 60] (a division
    uses both), ``3 1/2`` → [3, 1, 2], ``$1,000`` → [1000], ``50%`` → [50]; [] if it is too long."""
    try:
        tree = parse_literal(text)
    except BudgetExceeded:
        return []
    return [] if tree is None else _leaves(tree)


_NOOP_SHIFT = Fraction(1, 7919)


def _substitute(tree: Expr, leaf: int, value: Fraction, counter: list[int]) -> Expr:
    """``tree`` with its ``leaf``-th number (depth first, left to right) replaced by ``value``."""
    if isinstance(tree, Fraction):
        counter[0] += 1
        return value if counter[0] - 1 == leaf else tree
    return (tree[0], *(_substitute(child, leaf, value, counter) for child in tree[1:]))  # type: ignore[return-value]


def _leaves(tree: Expr) -> list[Fraction]:
    """The numbers of ``tree``, depth first, left to right."""
    if isinstance(tree, Fraction):
        return [tree]
    return [leaf for child in tree[1:] for leaf in _leaves(child)]


def pass_through(
    tree: Expr, result: Fraction | None, percent: Fraction = HUNDREDTHS
) -> tuple[Fraction, ...] | None:
    """The other numbers of ``tree`` if it passes an operand equal to ``result`` through unchanged, else ``None``.

    An operand passes through when it equals ``result`` and shifting it by δ shifts the value by
    exactly δ: ``12 + 0``, ``12 * 1``, ``12 + 5 - 5``, ``12 * 12 / 12`` pass 12 through (others
    ``(0,)``, ``(1,)``, ``(5, 5)``, ``(12, 12)``); ``4 - 2`` and ``4 / 2`` with result 2 do not.
    ``1 * 2 = 2`` does too, and is still real work when its 1 is an earlier step's result (doubling
    a running total of 1), which is why the caller decides from the other numbers.
    """
    if result is None or not has_operator(tree):
        return None
    leaves = _leaves(tree)
    for i, leaf in enumerate(leaves):
        if leaf != result:
            continue
        shifted = evaluate(_substitute(tree, i, leaf + _NOOP_SHIFT, [0]), percent)
        if shifted == result + _NOOP_SHIFT:
            return tuple(leaves[:i] + leaves[i + 1 :])
    return None


# --------------------------------------------------------------------------- equality


def rounding_tolerance(rhs_text: str, percent: Fraction = HUNDREDTHS) -> Fraction:
    """Half a unit of the last decimal written in a single-number right side (``3.33`` → 0.005), else 0."""
    match = re.fullmatch(r"[-−+]?\s*\$?[\d,]*\.(\d+)(%?)", rhs_text.strip())
    if match is None:
        return Fraction(0)
    unit = Fraction(1, 10 ** len(match.group(1)))
    return unit / 2 * (percent if match.group(2) else 1)


def values_match(lhs: Fraction | None, rhs: Fraction | None, rounding: Fraction, rel_tol: float) -> bool:
    """True when ``rhs`` states ``lhs``: within ``rel_tol·max(1, |rhs|)``, or within ``rounding``
    (the right side rounds ``lhs`` to the decimals it writes: ``10/3 = 3.33``, ``2/3 = 0.67``)."""
    if lhs is None or rhs is None:
        return False
    error = abs(lhs - rhs)
    return error <= Fraction(rel_tol) * max(1, abs(rhs)) or error <= rounding


# --------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class _Side:
    """An expression found in text: its tokens (for the source span) and parse tree."""

    tokens: tuple[Token, ...]
    tree: Expr


@dataclass(frozen=True)
class StepEquations:
    """What a step states: its equations, and the numbers it uses as operands (not as results).

    ``uses`` and ``results`` hold ``(position, value)`` in the step's text, for the dependency
    path: every operand number, and the value each equation states on its right side.
    ``unparsed`` counts the runs of arithmetic given up on (see the module docstring).
    """

    equations: list[Equation]
    operands: list[Fraction]
    uses: list[tuple[int, Fraction]] = field(default_factory=list)
    results: list[tuple[int, Fraction]] = field(default_factory=list)
    unparsed: int = 0


_ANNOTATION_RE = re.compile(rf"<<(?P<body>[^<>]*)>>(?P<shown>{_NUMBER})?")
_STEP_MARKER_RE = re.compile(r"\bstep\s*\d+\s*[:.)-]?|^[^\S\n]*\d+[.)](?=\s)", re.IGNORECASE | re.MULTILINE)
# Stands for a removed annotation, padded to its length: not math, so it ends any expression.
_PLACEHOLDER = "¶"


def _judge(
    lhs: _Side, rhs: _Side, lhs_text: str, rhs_text: str, percent: Fraction, rel_tol: float
) -> Equation:
    """The equation ``lhs = rhs`` evaluated with ``1% = percent``."""
    lhs_value, rhs_value = evaluate(lhs.tree, percent), evaluate(rhs.tree, percent)
    rounding = Fraction(0) if has_operator(rhs.tree) else rounding_tolerance(rhs_text, percent)
    holds = values_match(lhs_value, rhs_value, rounding, rel_tol)
    return Equation(
        lhs_text, rhs_text, lhs_value, rhs_value, holds, pass_through(lhs.tree, rhs_value, percent)
    )


def _make_equation(text: str, lhs: _Side, rhs: _Side, rel_tol: float) -> Equation:
    """The equation ``lhs = rhs`` with its source texts, values and verdict.

    With a ``%`` in it, it holds when it holds either with percentages as hundredths
    (``3 / 6 = 50%``, ``50% * 50% = 25%``) or as written (``100 - 20 = 80%``).
    """
    lhs_text = text[lhs.tokens[0].start : lhs.tokens[-1].end]
    rhs_text = text[rhs.tokens[0].start : rhs.tokens[-1].end]
    readings = [HUNDREDTHS, Fraction(1)] if "%" in lhs_text + rhs_text else [Fraction(1)]
    verdicts = [_judge(lhs, rhs, lhs_text, rhs_text, percent, rel_tol) for percent in readings]
    return next((verdict for verdict in verdicts if verdict.holds), verdicts[0])


def _split_on_equals(tokens: Sequence[Token]) -> list[list[Token]]:
    """The token groups between ``=`` signs."""
    groups: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "eq":
            groups.append([])
        else:
            groups[-1].append(token)
    return groups


def _whole(tokens: Sequence[Token], budget: _Budget) -> _Side | None:
    tree = parse_expression(tokens, budget)
    return None if tree is None else _Side(tuple(tokens), tree)


def _can_cut(before: Token, after: Token) -> bool:
    """Whether an expression may start at ``after`` or end at ``before`` (prose numbers around it):
    between two numbers apart (``1. 7 + 5``, not inside ``16,0000``) or at a parenthesis."""
    if before.kind == "num" and after.kind == "num":
        return before.end < after.start
    return (
        before.kind == "lpar"
        or after.kind == "rpar"
        or (before.kind, after.kind) in {("num", "lpar"), ("rpar", "num")}
    )


def _longest_suffix(tokens: Sequence[Token], budget: _Budget) -> _Side | None:
    """The longest expression ending the group, starting at its start or at a cut.

    Raises:
        BudgetExceeded: a candidate is longer than :data:`MAX_EXPRESSION_TOKENS` (its verdict
            would decide which shorter one is meant), or the budget is spent.
    """
    for start in range(len(tokens)):
        if start == 0 or _can_cut(tokens[start - 1], tokens[start]):
            if side := _whole(tokens[start:], budget):
                return side
    return None


def _longest_prefix(tokens: Sequence[Token], budget: _Budget) -> _Side | None:
    """The longest expression starting the group, ending at its end or at a cut (raises as
    :func:`_longest_suffix`)."""
    for end in range(len(tokens), 0, -1):
        if end == len(tokens) or _can_cut(tokens[end - 1], tokens[end]):
            if side := _whole(tokens[:end], budget):
                return side
    return None


_WORDS_BEFORE_OPERAND = {"x", "X", "times", "of", "plus", "minus"}  # 15 pages x 1/3 = 5: not 1/3 = 5
_WORDS_AFTER_OPERAND = {"x", "X", "plus", "minus"}  # not "times": "= 29 times."


def _is_open(text: str, tokens: Sequence[Token], start: int, end: int) -> tuple[bool, bool]:
    """Whether the math run ``tokens[start:end]`` continues into prose on the (left, right), so that
    its first (last) group is only part of an expression: ``2x + 3 = 9``, ``15 pages x 1/3 = 5``, ``= 8x``.

    Left: the run starts with a binary operator (``+ * /``, or ``-`` followed by a space), follows
    ``^`` or an operator word (``x``, ``times``, ``of`` ...). Right: it ends with an operator, a lone
    letter or ``^`` is glued to its end, or an operator word follows.
    """
    first, last = tokens[start], tokens[end - 1]
    before = tokens[start - 1] if start > 0 else None
    after = tokens[end] if end < len(tokens) else None
    starts_binary = first.kind == "op" and (
        _OP_CANONICAL[first.text] in {"+", "*", "/"} or text[first.end : first.end + 1].isspace()
    )
    word_before = before is not None and before.kind == "word" and before.text in _WORDS_BEFORE_OPERAND
    left_open = starts_binary or word_before or text[max(0, first.start - 1) : first.start] == "^"
    glued = text[last.end : last.end + 2]
    lone_letter = bool(re.match(r"[A-Za-z](?![A-Za-z])", glued))
    word_after = after is not None and after.kind == "word" and after.text in _WORDS_AFTER_OPERAND
    right_open = last.kind == "op" or lone_letter or glued.startswith("^") or word_after
    return left_open, right_open


def _math_runs(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """``(start, end)`` of each maximal run of math tokens (numbers, operators, parentheses, ``=``)."""
    runs: list[tuple[int, int]] = []
    start = None
    for i, token in enumerate([*tokens, Token("other", "", -1, -1)]):
        if token.kind in _MATH_KINDS and start is None:
            start = i
        elif token.kind not in _MATH_KINDS and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _chains(text: str, tokens: Sequence[Token], start: int, end: int, budget: _Budget) -> list[list[_Side]]:
    """The ``=`` chains of the math run ``tokens[start:end]``, each a list of two or more sides.

    Inner groups must be whole expressions to link a chain; the first group may be cut to its
    longest expression suffix and the last to its longest prefix (prose numbers around them).
    """
    left_open, right_open = _is_open(text, tokens, start, end)
    groups = _split_on_equals(tokens[start:end])
    chains: list[list[_Side]] = []
    current: list[_Side] = []
    for i, group in enumerate(groups):
        is_first, is_last = i == 0, i == len(groups) - 1
        whole = None if (is_first and left_open) or (is_last and right_open) else _whole(group, budget)
        if whole is not None and not (is_first and is_last):
            current.append(whole)
            continue
        if not is_first and not (is_last and right_open):  # close the chain with a prefix of the group
            if prefix := _longest_prefix(group, budget):
                current.append(prefix)
        chains.append(current)
        current = []
        if not is_last and not (is_first and left_open):  # open a new chain with a suffix of the group
            if suffix := _longest_suffix(group, budget):
                current.append(suffix)
    chains.append(current)
    return [chain for chain in chains if len(chain) >= 2 and any(has_operator(side.tree) for side in chain)]


def _annotation_equations(
    body: str, rel_tol: float, budget: _Budget
) -> tuple[list[Equation], list[Fraction]]:
    """Equations and operand numbers of one calculator annotation; nothing if it is not all arithmetic."""
    tokens = tokenize(body)
    sides = [_whole(group, budget) for group in _split_on_equals(tokens)]
    if len(sides) < 2 or any(side is None for side in sides):
        return [], []
    equations = [_make_equation(body, a, b, rel_tol) for a, b in pairwise(sides)]  # type: ignore[arg-type]
    operands = [
        value
        for side in sides[:-1]
        for t in side.tokens
        if t.kind == "num"
        for value in written_numbers(t.text)
    ]  # type: ignore[union-attr]
    return equations, operands


def extract_step(text: str, rel_tol: float = 1e-6) -> StepEquations:
    """The equations a step states and the numbers it uses as operands.

    Annotations ``<<expr=result>>`` are read first and replaced (with their visible result) by a
    placeholder of the same length, so the visible ``48/2 =`` before one is not a second equation
    and positions stay those of ``text``; the remaining text is scanned for plain equations.
    Operands are all numbers except each chain's final result; step markers (``Step 2:``, and
    ``2.`` opening a line) are labels, not numbers of the step. A run of arithmetic beyond the
    verifier's limits adds nothing but one to ``unparsed``; this function never raises.
    """
    text = _STEP_MARKER_RE.sub(lambda m: " " * len(m.group()), text)
    budget = _Budget(len(text))
    equations: list[Equation] = []
    uses: list[tuple[int, Fraction]] = []
    results: list[tuple[int, Fraction]] = []
    unparsed = 0
    for match in _ANNOTATION_RE.finditer(text):
        try:
            found, used = _annotation_equations(match["body"], rel_tol, budget)
        except BudgetExceeded:
            unparsed += 1
            continue
        equations += found
        uses += [(match.start(), value) for value in used]
        results += [(match.end(), eq.rhs_value) for eq in found if eq.rhs_value is not None]
    prose = _ANNOTATION_RE.sub(lambda m: _PLACEHOLDER.ljust(len(m.group())), text)
    final_sides: set[int] = set()  # token starts of each chain's final result
    tokens = tokenize(prose)
    for start, end in _math_runs(tokens):
        try:
            chains = _chains(prose, tokens, start, end, budget)
            judged = [
                (_make_equation(prose, a, b, rel_tol), b) for chain in chains for a, b in pairwise(chain)
            ]
        except BudgetExceeded:
            unparsed += any(token.kind == "eq" for token in tokens[start:end])
            continue
        equations += [equation for equation, _ in judged]
        results += [(b.tokens[-1].end, eq.rhs_value) for eq, b in judged if eq.rhs_value is not None]
        final_sides |= {token.start for chain in chains for token in chain[-1].tokens}
    for token in tokens:
        if token.kind == "num" and token.start not in final_sides:
            uses += [(token.start, value) for value in written_numbers(token.text)]
    uses.sort(key=lambda use: use[0])
    return StepEquations(equations, [value for _, value in uses], uses, results, unparsed)


def extract_equations(text: str, rel_tol: float = 1e-6) -> list[Equation]:
    """The equations stated in one step's text (see :func:`extract_step`)."""
    return extract_step(text, rel_tol).equations


# --------------------------------------------------------------------------- scoring


def answer_value(answer: str | None) -> Fraction | None:
    """The number a final answer states: the whole text as a number, else its only number, else ``None``."""
    if answer is None:
        return None
    value = parse_number(answer)
    if value is not None:
        return value
    numbers = [t for t in tokenize(answer) if t.kind == "num"]
    return number_value(numbers[0].text) if len(numbers) == 1 else None


def dependency_path(found: Sequence[StepEquations], target: Fraction | None) -> set[int]:
    """Indices of the steps on the dependency path to the final answer ``target``.

    The path starts at the last step that states ``target`` as a result. An operand of a step on
    the path links to the latest earlier step stating that value as a result, unless the same
    step computed that value before using it; a value used k times links to the k latest such
    steps (``20 + 20 + 15`` after two steps that each gave 20). ``None`` (no final answer) gives
    an empty path.
    """
    depends_on: list[set[int]] = [set() for _ in found]
    producers: dict[Fraction, list[int]] = {}  # value -> the steps stating it as a result, in order
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
    unchanged (:func:`pass_through`) with no other number that an earlier step computed."""
    known: set[Fraction] = set()
    flags = []
    for step in found:
        flags.append(
            bool(step.equations)
            and all(
                eq.passes_through is not None and known.isdisjoint(eq.passes_through) for eq in step.equations
            )
        )
        known.update(value for _, value in step.results)
    return flags


def score_steps(steps: Sequence[str], final_answer: str | None, rel_tol: float = 1e-6) -> list[StepScore]:
    """Verify the equations of each step of one completion and decide which steps are necessary.

    A step is necessary when it states equations, lies on the :func:`dependency_path` to
    ``final_answer`` and is not a no-op (:func:`noop_steps`).
    """
    found = [extract_step(step, rel_tol) for step in steps]
    path = dependency_path(found, answer_value(final_answer))
    scores: list[StepScore] = []
    for j, (step, noop) in enumerate(zip(found, noop_steps(found), strict=True)):
        if not step.equations:
            scores.append(StepScore(None, False, [], unparsed=step.unparsed))
            continue
        correct = sum(eq.holds for eq in step.equations) / len(step.equations)
        scores.append(StepScore(correct, j in path and not noop, step.equations, noop, step.unparsed))
    return scores


@dataclass
class VerifierCounts:
    """What the verifier saw in the steps it scored: steps, and among them those with no equation,
    no-ops, those with equations but off the dependency path (no-ops included), and runs of
    arithmetic it gave up on (``unparsed_equations``)."""

    steps: int = 0
    no_equation: int = 0
    noop: int = 0
    unnecessary: int = 0
    unparsed_equations: int = 0

    def add(self, verdicts: Sequence[StepScore]) -> None:
        """Count the verdicts on one completion's steps."""
        self.steps += len(verdicts)
        self.no_equation += sum(v.correct is None for v in verdicts)
        self.noop += sum(v.noop for v in verdicts)
        self.unnecessary += sum(v.correct is not None and not v.necessary for v in verdicts)
        self.unparsed_equations += sum(v.unparsed for v in verdicts)


class ArithmeticVerifier:
    """Step scorer ``(prompts, steps, **columns) -> list[list[float]]`` checking each step's arithmetic.

    It never raises on model text (see the module docstring) and counts what it saw in
    :class:`VerifierCounts`; :meth:`pop_counts` hands the counts since the last call to the trainer.

    Args:
        correct_weight: weight of the fraction of a step's equations that hold.
        necessary_weight: weight of the step being necessary (on the dependency path to the answer).
        neutral_score: score of a step with no equation.
        rel_tol: relative tolerance of ``lhs = rhs`` (besides rounding to the decimals written).
    """

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
        return [self.score_completion(sample) for sample in steps]

    def pop_counts(self) -> dict[str, int]:
        """The :class:`VerifierCounts` of every step scored since the last call, as a dict; resets them."""
        counts, self.counts = self.counts, VerifierCounts()
        return asdict(counts)

    def __repr__(self) -> str:
        return (
            f"ArithmeticVerifier(correct_weight={self.correct_weight}, necessary_weight={self.necessary_weight}, "
            f"neutral_score={self.neutral_score}, rel_tol={self.rel_tol})"
        )
