"""Bounded arithmetic for the step verifier: tokens, an exact expression parser and evaluator.

Text is split into :class:`Token` s (:func:`tokenize`), a run of tokens is parsed into an
expression tree (:func:`parse_expression`, recursive descent with standard precedence, never
``eval``; a :class:`Builder` makes the tree's nodes, :data:`Expr` tuples by default) and evaluated
exactly with ``Fraction`` (:func:`evaluate`). Numbers are read as written:
``1,000``, ``$18`` (or ``£18``, ``€18``), ``2.5``, ``3/4``, ``3 1/2``, ``½`` and ``50%`` (a percentage: hundredths, or as
written); operators ``+ - * / // × ÷ x ^ **`` (``x`` only between numbers; ``^`` a power with a
small integer exponent) and Unicode minus. Clock times (``3:30``) and scientific notation (``1e3``)
are not numbers here: an equation holding one is left unread rather than misread.

**Bounded work.** Every function here does a bounded amount of work on any input or raises
:class:`BudgetExceeded`, which the verifier turns into "not checkable"
(:mod:`psgrpo.ps.scorers.equations`); nothing else is raised on model text. The limits:
:data:`MAX_EXPRESSION_TOKENS` tokens per expression, :data:`MAX_NESTING` levels of parentheses or
signs (the parser's only recursion), :data:`MAX_LITERAL_DIGITS` digits per number,
:data:`MAX_VALUE_BITS` bits per numerator or denominator of any value computed, and a
:class:`Budget` of :data:`WORK_PER_CHAR` token visits per character of a step.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, Protocol, TypeVar, overload

from psgrpo.rewards.numbers import CURRENCY_PATTERN, NUMBER_PATTERN, decimal_value, without_currency

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


class Budget:
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

# the number grammar is the package's one (psgrpo.rewards.numbers): NUMBER_PATTERN, decimal_value
_UNREAD = (
    r"\d{1,2}:\d{2}(?::\d{2})?(?!\d)|\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])"  # 3:30, 1e3: never read as 30, 3
)
_TOKEN_RE = re.compile(
    rf"(?P<ws>\s+|{CURRENCY_PATTERN}(?=[-−]\d))|(?P<unread>{_UNREAD})|(?P<num>{NUMBER_PATTERN})|(?P<op>//|\*\*|[-+*/×÷−–^])"
    r"|(?P<lpar>\()|(?P<rpar>\))"
    r"|(?P<eq>=)|(?P<word>[A-Za-z_]+)|(?P<other>.)",
    re.DOTALL,
)
OP_CANONICAL = {
    "+": "+", "-": "-", "−": "-", "–": "-", "*": "*", "×": "*", "x": "*", "X": "*", "/": "/", "÷": "/", "//": "//",
    "^": "^", "**": "^",
}  # fmt: skip
MATH_KINDS = {"num", "op", "lpar", "rpar", "eq"}


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
    return times_signs(tokens)


def times_signs(tokens: Sequence[Token]) -> list[Token]:
    """``tokens`` with each letter ``x`` between two numbers made the operator (see :func:`tokenize`)."""
    return [_times_sign(tokens, i) for i in range(len(tokens))]


def _kind(kind: str, text: str) -> str:
    """The token kind, except that a number with a leading zero, a clock time (``3:30``) or a number
    in scientific notation (``1e3``) is ``other``: never read, so never misread."""
    if kind == "unread":
        return "other"
    return "other" if kind == "num" and re.match(rf"{CURRENCY_PATTERN}?0\d", text) else kind


def _times_sign(tokens: Sequence[Token], i: int) -> Token:
    """``tokens[i]`` as an operator when it is the letter ``x`` between two numbers (``3 x 4``, ``3x4``, ``3 x -4``)."""
    token = tokens[i]
    if token.kind != "word" or token.text not in {"x", "X"} or i == 0 or i + 1 == len(tokens):
        return token
    following = tokens[i + 1 : i + 3]
    negative = (  # 3 x -4 (a minus glued to its number), but not the algebra 2x-5 or 2x - 5
        len(following) == 2
        and following[0].text in {"-", "−"}
        and following[1].kind == "num"
        and following[0].start > token.end
        and following[1].start == following[0].end
    )
    if tokens[i - 1].kind in {"num", "rpar"} and (following[0].kind in {"num", "lpar"} or negative):
        return Token("op", token.text, token.start, token.end)
    return token


# --------------------------------------------------------------------------- expressions

Expr = Fraction | tuple[str, Any] | tuple[str, Any, Any]
"""A parsed expression: a number, ``(op, left, right)`` with op in ``+ - * / // ^``, or a unary
``("neg", operand)`` / ``("%", operand)`` (a percentage, read as hundredths or as written)."""


def parse_literal(text: str) -> Expr | None:
    """The expression a number token stands for: ``$1,000`` → 1000, ``3/4`` → 3 ÷ 4, ``3 1/2`` →
    3 + 1 ÷ 2 (only a proper fraction makes a mixed number), ``1½`` → 3/2, ``50%`` → a percentage of 50.

    Raises:
        BudgetExceeded: the number has more than :data:`MAX_LITERAL_DIGITS` digits.
    """
    body = without_currency(text)
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
    return decimal_value(body)


N = TypeVar("N")


class Builder(Protocol[N]):
    """What the parser makes of what it reads; a hook may return ``None`` to refuse (the parse is ``None``).

    The default, :data:`EXPR_BUILDER`, makes :data:`Expr` tuples; the GSM8K step-set generator
    (``benchmarks/scorers/gsm8k_expressions.py``) makes trees that keep how each number and operator
    was written, from the same parse.
    """

    def leaf(self, token: Token) -> N | None:
        """A number token."""

    def binary(self, op: str, token: Token | None, left: N, right: N) -> N | None:
        """``left op right``; ``op`` canonical (``+ - * / // ^``), ``token`` as written, ``None`` for
        an implicit product (``3(47)``)."""

    def sign(self, op: str, operand: N, token: Token) -> N | None:
        """A unary ``-`` or ``+`` (``op``) before ``operand``."""

    def group(self, inner: N) -> N | None:
        """``inner`` written in parentheses."""


class ExprBuilder:
    """The default :class:`Builder`: :data:`Expr` tuples (parentheses and ``+`` signs leave no trace)."""

    def leaf(self, token: Token) -> Expr | None:
        return parse_literal(token.text)

    def binary(self, op: str, token: Token | None, left: Expr, right: Expr) -> Expr:
        return (op, left, right)

    def sign(self, op: str, operand: Expr, token: Token) -> Expr:
        return ("neg", operand) if op == "-" else operand

    def group(self, inner: Expr) -> Expr:
        return inner


EXPR_BUILDER = ExprBuilder()


class _Parser(Generic[N]):
    """Recursive descent over tokens, standard precedence, each node made by ``builder``::

    expr := term (("+" | "-") term)*
    term := unary (("*" | "/" | "//") unary | "(" expr ")")*     # 3(47), (1/2) 278: implicit product
    unary := ("-" | "+") unary | power
    power := primary ("^" unary)?                                 # 2^3, -2^2 = -4, 2^-1
    primary := number | "(" expr ")"

    Recursion happens only for a sign or a parenthesis, at most :data:`MAX_NESTING` deep.
    """

    def __init__(self, tokens: Sequence[Token], builder: Builder[N]) -> None:
        self.tokens = tokens
        self.build = builder
        self.pos = 0
        self.depth = 0

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise BudgetExceeded(f"nesting deeper than {MAX_NESTING}")

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take_op(self, ops: set[str]) -> Token | None:
        token = self.peek()
        if token is not None and token.kind == "op" and OP_CANONICAL[token.text] in ops:
            self.pos += 1
            return token
        return None

    def expr(self) -> N | None:
        left = self.term()
        while left is not None and (token := self.take_op({"+", "-"})):
            right = self.term()
            left = None if right is None else self.build.binary(OP_CANONICAL[token.text], token, left, right)
        return left

    def term(self) -> N | None:
        left = self.unary()
        while left is not None:
            token = self.peek()
            if op_token := self.take_op({"*", "/", "//"}):
                right = self.unary()
            elif self._implicit_factor(token):
                op_token, right = None, self.power()
            else:
                break
            op = OP_CANONICAL[op_token.text] if op_token else "*"
            left = None if right is None else self.build.binary(op, op_token, left, right)
        return left

    def _implicit_factor(self, token: Token | None) -> bool:
        """A factor written without ``*``: ``(`` after anything, or a number right after ``)``."""
        if token is None:
            return False
        return token.kind == "lpar" or (token.kind == "num" and self.tokens[self.pos - 1].kind == "rpar")

    def unary(self) -> N | None:
        token = self.take_op({"-", "+"})
        if token is None:
            return self.power()
        self.nest()
        operand = self.unary()
        self.depth -= 1
        return None if operand is None else self.build.sign(OP_CANONICAL[token.text], operand, token)

    def power(self) -> N | None:
        base = self.primary()
        token = None if base is None else self.take_op({"^"})
        if token is None:
            return base
        self.nest()
        exponent = self.unary()
        self.depth -= 1
        return None if exponent is None else self.build.binary("^", token, base, exponent)

    def primary(self) -> N | None:
        token = self.peek()
        if token is None:
            return None
        self.pos += 1
        if token.kind == "num":
            return self.build.leaf(token)
        if token.kind == "lpar":
            self.nest()
            inner = self.expr()
            self.depth -= 1
            closing = self.peek()
            if inner is None or closing is None or closing.kind != "rpar":
                return None
            self.pos += 1
            return self.build.group(inner)
        return None


@overload
def parse_expression(tokens: Sequence[Token], budget: Budget | None = None) -> Expr | None: ...
@overload
def parse_expression(
    tokens: Sequence[Token], budget: Budget | None = None, *, builder: Builder[N]
) -> N | None: ...


def parse_expression(
    tokens: Sequence[Token], budget: Budget | None = None, *, builder: Builder[Any] = EXPR_BUILDER
) -> Any:
    """Parse all of ``tokens`` as one arithmetic expression, or ``None`` if they are not one (or
    ``builder`` refuses a part of it). The tree is ``builder``'s: :data:`Expr` by default.

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
    parser = _Parser(tokens, builder)
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
    if op == "^":
        return _power(a, b)
    return _bounded(a / b if op == "/" else Fraction(math.floor(a / b)))


MAX_EXPONENT = 64
"""Largest exponent of ``a ^ b`` evaluated (an integer); a larger or fractional one is not judged."""


def _power(base: Fraction, exponent: Fraction) -> Fraction | None:
    """``base ^ exponent`` exactly, ``None`` for ``0 ^ -n``.

    Raises:
        BudgetExceeded: a fractional exponent (``4^(1/2)``: irrational in general, not judged), one
            beyond :data:`MAX_EXPONENT`, or a result beyond :data:`MAX_VALUE_BITS` bits.
    """
    if exponent.denominator != 1 or abs(exponent) > MAX_EXPONENT:
        raise BudgetExceeded("a power with a fractional or large exponent")
    n = int(exponent)
    bits = max(base.numerator.bit_length(), base.denominator.bit_length())
    if bits * abs(n) > MAX_VALUE_BITS + abs(n):
        raise BudgetExceeded(f"a value beyond {MAX_VALUE_BITS} bits")
    if base == 0 and n < 0:
        return None
    return _bounded(base**n)


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
        try:
            shifted = evaluate(_substitute(tree, i, leaf + _NOOP_SHIFT, [0]), percent)
        except BudgetExceeded:  # an exponent made fractional: 2^1 is not a pass-through of 1
            continue
        if shifted == result + _NOOP_SHIFT:
            return tuple(leaves[:i] + leaves[i + 1 :])
    return None


MAX_PARTIAL_TERMS = 8
"""Longest chain of ``+``/``-`` terms or ``*``/``/`` factors whose every sub-combination
:func:`partial_values` enumerates (2^8 subsets); a longer chain gives its pairs only."""


def _chain(tree: Expr, ops: tuple[str, str], inverse: bool = False) -> list[tuple[bool, Expr]]:
    """The terms of a ``+``/``-`` chain (or factors of a ``*``/``/`` chain), each with whether it is
    subtracted (divided by)."""
    if not isinstance(tree, Fraction) and len(tree) == 3 and tree[0] in ops:
        op, left, right = tree
        return _chain(left, ops, inverse) + _chain(right, ops, inverse != (op == ops[1]))
    return [(inverse, tree)]


@dataclass(frozen=True)
class PartialChain:
    """One ``+``/``-`` chain (or ``*``/``/`` chain) of an expression and what it computes in part.

    Attributes:
        additive: a chain of terms (``+``/``-``), else of factors (``*``/``/``).
        values: every sub-combination of two or more of its items (:func:`_combinations`).
        items: the values a step may combine to compute one of ``values``: the items themselves (a
            factor also as its inverse, a term also as its magnitude) and the sub-combinations.
    """

    additive: bool
    values: frozenset[Fraction]
    items: frozenset[Fraction]


def partial_chains(tree: Expr, percent: Fraction = HUNDREDTHS) -> list[PartialChain]:
    """The :class:`PartialChain` s of every chain in ``tree``, outermost first (see :func:`partial_values`).

    Raises nothing beyond :func:`evaluate`'s ``BudgetExceeded``.
    """
    if isinstance(tree, Fraction):
        return []
    if len(tree) == 2:
        return partial_chains(tree[1], percent)
    found: list[PartialChain] = []
    for ops in (("+", "-"), ("*", "/")):
        if tree[0] not in ops:
            continue
        chain = _chain(tree, ops)
        values = [(inverse, evaluate(sub, percent)) for inverse, sub in chain]
        if all(value is not None for _, value in values):
            additive = ops[0] == "+"
            combined = _combinations(values, additive)  # type: ignore[arg-type]
            items = {value for _, value in values} | {abs(value) for _, value in values}  # type: ignore[arg-type]
            if not additive:
                items |= {1 / value for _, value in values if value}  # type: ignore[operator]
            found.append(PartialChain(additive, frozenset(combined), frozenset(items | combined)))
        for _, sub in chain:
            found += partial_chains(sub, percent)
    if tree[0] == "//":
        found += partial_chains(tree[1], percent) + partial_chains(tree[2], percent)
    return found


def partial_values(tree: Expr, percent: Fraction = HUNDREDTHS) -> set[Fraction]:
    """The values an expression computes *in part*: every sub-combination of two or more terms of
    each of its ``+``/``-`` chains and factors of its ``*``/``/`` chains, and their magnitudes.

    ``16 - 3 - 4`` → {13, 12, 7, -7, 9 ...}: ``3 + 4 = 7`` is a valid first half of it. A subtracted
    group counts as its sum (7), a divided group as its product, so a solution may compute any
    grouping of the gold's operands first. Chains longer than :data:`MAX_PARTIAL_TERMS` give
    only their pairs. Raises nothing beyond :func:`evaluate`'s ``BudgetExceeded``.
    """
    return set().union(*(chain.values for chain in partial_chains(tree, percent)))


def computes_part(tree: Expr | None, value: Fraction | None, chains: Sequence[PartialChain]) -> bool:
    """Whether ``tree = value`` computes part of one of ``chains`` *as that chain does*: with the
    same kind of operation, from that chain's items, to one of its sub-combinations. ``3 + 4 = 7``
    is part of ``16 - 3 - 4``; ``60 / 2 = 30`` is not part of ``30 + 10 + 60 + 20``, though 30 =
    10 + 20 there (a wrong step landing on a sub-sum by chance)."""
    if tree is None or value is None or isinstance(tree, Fraction) or len(tree) != 3:
        return False
    ops = ("+", "-") if tree[0] in ("+", "-") else ("*", "/") if tree[0] in ("*", "/") else None
    if ops is None:
        return False
    try:
        items = [evaluate(sub) for _, sub in _chain(tree, ops)]
    except BudgetExceeded:
        return False
    return any(
        chain.additive == (ops[0] == "+")
        and (value in chain.values or abs(value) in chain.values)
        and all(item is not None and (item in chain.items or abs(item) in chain.items) for item in items)
        for chain in chains
    )


def _combinations(values: list[tuple[bool, Fraction]], additive: bool) -> set[Fraction]:
    """Sums (products) of every subset of two or more ``values`` (pairs only for a long chain):
    with signs (exponents) as written, and of the subtracted (divided) ones as a group."""
    n = len(values)
    if n > MAX_PARTIAL_TERMS:
        subsets = [(1 << i) | (1 << k) for i in range(n) for k in range(i + 1, n)]
    else:
        subsets = [mask for mask in range(1 << n) if mask & (mask - 1)]
    found: set[Fraction] = set()
    for mask in subsets:
        chosen = [values[i] for i in range(n) if mask >> i & 1]
        if additive:
            total = sum((-v if inverse else v for inverse, v in chosen), Fraction(0))
            found |= {_bounded(total), abs(total)}
        elif all(v != 0 for _, v in chosen):
            product = math.prod((1 / v if inverse else v for inverse, v in chosen), start=Fraction(1))
            found |= {_bounded(product), _bounded(1 / product)} if product else {product}
    return found
