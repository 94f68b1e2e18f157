"""Arithmetic of GSM8K solution text for ``make_gsm8k_step_set.py``: parse, evaluate, re-render.

Numbers and operations are :class:`Num` / :class:`Op` trees that keep how each was written (``$``,
units, ``x`` or ``×``), so a changed calculation can be written back in the same style (:func:`render`).
They are parsed by a small recursive-descent parser over numbers (``1,000``, ``$12``,
``.5``, ``-3``), ``+ - * / x × ÷`` and parentheses, and evaluated exactly with ``Fraction`` (never
``eval``); units after a number (``35 hours/week``), ``$``, ``40%`` and ``x`` between numbers are
read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from psgrpo.rewards.numbers import DECIMAL_PATTERN, decimal_value


class Reject(ValueError):
    """One rewrite that does not apply to a solution (the generator tries another)."""


@dataclass(frozen=True)
class Num:
    """A number leaf: exact ``value``, ``text`` as written (no ``$``; ``""`` = format on render),
    a ``$`` before it, ``unit`` words after it (``eggs``, ``/hour``), parentheses around it, and
    whether it is written as a percentage (``40%``: value 2/5)."""

    value: Fraction
    text: str = ""
    dollar: bool = False
    unit: str = ""
    paren: bool = False
    percent: bool = False


@dataclass(frozen=True)
class Op:
    """A binary operation; ``sym`` is one of ``+ - * /``, ``shown`` the symbol as written (``x``, ``×``, ``÷``)."""

    sym: str
    left: Node
    right: Node
    shown: str = ""
    paren: bool = False


Node = Num | Op
PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
SHOWN = {"+": "+", "-": "-", "–": "-", "−": "-", "*": "*", "x": "*", "X": "*", "×": "*", "/": "/", "÷": "/"}
NUMBER = DECIMAL_PATTERN  # the package's number grammar (psgrpo.rewards.numbers)
_TOKEN_RE = re.compile(
    rf"\s*(?:(?P<num>\$?\s?(?:{NUMBER})%?)|(?P<word>/?[A-Za-z][A-Za-z'’]*)|(?P<op>[-–−+*/×÷])|(?P<lp>\()|(?P<rp>\)))"
)
MAX_UNIT_WORDS = 6
TEXT_NUMBER_RE = re.compile(rf"(?<![\w.,])(\$?)({NUMBER})(?![\w])")
"""A number in free text (group 1: a ``$``, group 2: the number) not glued to a word."""


def number_value(text: str) -> Fraction:
    """The value of a written number without sign: ``1,000`` → 1000, ``.5`` → 1/2."""
    return decimal_value(text)


def fmt(value: Fraction, commas: bool = False) -> str:
    """``value`` as a person writes it: ``18``, ``1,500`` (when ``commas``), ``2.5``, ``-3``.

    A value with no finite decimal of at most 4 places (``1/3``) raises :class:`Reject`."""
    for places in range(5):
        scaled = value * 10**places
        if scaled.denominator == 1:
            break
    else:
        raise Reject(f"{value} has no short decimal")
    sign, whole = ("-" if value < 0 else ""), abs(scaled.numerator)
    integer, frac = divmod(whole, 10**places)
    body = f"{integer:,}" if commas and integer >= 10_000 else str(integer)
    return sign + body + (f".{frac:0{places}d}" if places else "")


def tokenize_math(text: str) -> list[tuple[str, str]] | None:
    """``text`` as (kind, text) math tokens, or None when something else (a word) is in it."""
    tokens, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            return None
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _Parser:
    """Recursive descent over :func:`tokenize_math` tokens; standard precedence, left associative."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def expr(self) -> Node:
        node = self.term()
        while self.peek()[0] == "op" and SHOWN[self.peek()[1]] in "+-":
            shown = self.tokens[self.pos][1]
            self.pos += 1
            node = Op(SHOWN[shown], node, self.term(), shown)
        return node

    def is_times(self, i: int) -> bool:
        """Whether token ``i`` is a multiplication sign (``x`` only before a number or a parenthesis)."""
        kind, text = self.tokens[i] if i < len(self.tokens) else ("end", "")
        if kind == "op":
            return SHOWN[text] in "*/"
        following = self.tokens[i + 1][0] if i + 1 < len(self.tokens) else "end"
        return kind == "word" and text in {"x", "X"} and following in {"num", "lp"}

    def term(self) -> Node:
        node = self.factor()
        while self.is_times(self.pos):
            shown = self.tokens[self.pos][1]
            self.pos += 1
            node = Op(SHOWN[shown], node, self.factor(), shown)
        return node

    def factor(self) -> Node:
        kind, text = self.peek()
        self.pos += 1
        if kind == "num":
            body = text.lstrip("$").strip()
            percent = body.endswith("%")
            value = number_value(body.rstrip("%")) / (100 if percent else 1)
            words: list[str] = []
            while self.peek()[0] == "word" and not self.is_times(self.pos) and len(words) < MAX_UNIT_WORDS:
                words.append(self.peek()[1])
                self.pos += 1
            unit = "".join(w if w.startswith("/") or not i else " " + w for i, w in enumerate(words))
            return Num(value, body, text.startswith("$"), unit, percent=percent)
        if kind == "op" and SHOWN[text] == "-" and self.peek()[0] == "num":
            leaf = self.factor()
            assert isinstance(leaf, Num)
            return replace(leaf, value=-leaf.value, text="-" + leaf.text)
        if kind == "lp":
            node = self.expr()
            if self.peek()[0] != "rp":
                raise Reject("unbalanced parentheses")
            self.pos += 1
            return replace(node, paren=True)
        raise Reject(f"unexpected {text!r}")


def parse_math(text: str) -> Node | None:
    """The expression tree of ``text`` (numbers, operators, parentheses only), or None."""
    tokens = tokenize_math(text)
    if not tokens:
        return None
    parser = _Parser(tokens)
    try:
        node = parser.expr()
    except (Reject, AssertionError, ZeroDivisionError):
        return None
    return node if parser.pos == len(tokens) else None


def evaluate(node: Node) -> Fraction | None:
    """The exact value of ``node``; None on a division by zero."""
    if isinstance(node, Num):
        return node.value
    left, right = evaluate(node.left), evaluate(node.right)
    if left is None or right is None or (node.sym == "/" and right == 0):
        return None
    return {"+": left + right, "-": left - right, "*": left * right, "/": left / right if right else left}[
        node.sym
    ]


def leaves(node: Node) -> list[Num]:
    """The number leaves of ``node`` in written (left-to-right) order."""
    return [node] if isinstance(node, Num) else leaves(node.left) + leaves(node.right)


def map_leaves(node: Node, change: dict[int, Num], counter: list[int] | None = None) -> Node:
    """``node`` with its ``i``-th leaf (written order) replaced by ``change[i]``."""
    counter = [0] if counter is None else counter
    if isinstance(node, Num):
        counter[0] += 1
        return change.get(counter[0] - 1, node)
    return replace(
        node, left=map_leaves(node.left, change, counter), right=map_leaves(node.right, change, counter)
    )


def with_value(leaf: Num, value: Fraction) -> Num:
    """``leaf`` holding ``value`` (its text re-formatted on render), decorations kept."""
    return leaf if value == leaf.value else replace(leaf, value=value, text="")


WORD_FORMS = {("/", Fraction(2)): "half of", ("/", Fraction(3)): "a third of", ("/", Fraction(4)): "a quarter of",
              ("*", Fraction(2)): "twice"}  # fmt: skip
"""Operations an ``Op`` shown as ``"words"`` is written as: ``30 / 2`` → ``half of 30``, ``2 * 9`` → ``twice 9``."""


def _in_words(node: Op, commas: bool) -> str | None:
    """``node`` (shown as ``"words"``) as ``half of 30`` / ``twice 9``, or None when its numbers no longer fit."""
    for number, other in (
        (node.right, node.left),
        (node.left, node.right) if node.sym == "*" else (None, None),
    ):
        if isinstance(number, Num) and not (number.unit or number.dollar) and other is not None:
            words = WORD_FORMS.get((node.sym, number.value))
            if words:
                return f"{words} {render(other, commas, node)}"
    return None


def render(node: Node, commas: bool = False, parent: Op | None = None, right: bool = False) -> str:
    """``node`` as text: numbers as written (or formatted), operators as shown, parentheses where
    written or needed (a lower-precedence child; a right child of ``-`` or ``/`` of equal precedence)."""
    if isinstance(node, Op) and node.shown == "words":
        words = _in_words(node, commas)
        if words is not None:
            return f"({words})" if parent is not None else words
        node = replace(node, shown="")
    if isinstance(node, Num):
        text = node.text or (fmt(node.value * 100) + "%" if node.percent else fmt(node.value, commas))
        unit = node.unit if node.unit.startswith("/") or not node.unit else " " + node.unit
        body = ("-$" + text[1:] if node.dollar and text.startswith("-") else "$" * node.dollar + text) + unit
        needs = node.paren or (right and node.value < 0)
    else:
        body = f"{render(node.left, commas, node)} {node.shown or node.sym} {render(node.right, commas, node, True)}"
        needs = node.paren or (
            parent is not None
            and (
                PREC[node.sym] < PREC[parent.sym]
                or (right and PREC[node.sym] == PREC[parent.sym] and parent.sym in "-/")
            )
        )
    return f"({body})" if needs else body
