"""Arithmetic of GSM8K solution text for ``make_gsm8k_step_set.py``: parse, evaluate, re-render.

Numbers and operations are :class:`Num` / :class:`Op` trees that keep how each was written (``$``,
units, ``x`` or ``×``, parentheses, ``40%``), so a changed calculation can be written back in the
same style (:func:`render`); they are evaluated exactly with ``Fraction`` (never ``eval``).

They are parsed by the package's tokenizer and parser (:mod:`psgrpo.ps.scorers.expressions`, the
one number grammar and expression parser of the step verifier) with a builder that makes
``Num`` / ``Op`` (:class:`_NodeBuilder`). Two things happen to the tokens first:

- unit words after a number (``35 hours/week``, ``3 duck eggs``: at most :data:`MAX_UNIT_WORDS`,
  ``/week`` one word, never an ``x`` that multiplies) are attached to it and taken out; a word
  anywhere else makes the text not arithmetic (``None``);
- a glued fraction, one number in the package's grammar (``3/4``), is split into ``3 / 4``: the
  division as written, so ``12/3/4`` is ``(12 / 3) / 4`` as the calculator annotations mean it.

Where the two grammars part, :func:`parse_math` gives ``None`` for what the rewrites cannot write
back: a mixed number (``3 1/2`` splits into two numbers side by side), an implicit product
(``3(47)``), ``//``, ``^`` / ``**``, a sign before a parenthesis or another sign (``-(3 + 4)``,
``--3``, ``+3``), ``$-5`` (a ``$`` the tokenizer drops) and an integer with a leading zero
(``0130``: a time or a code to the package). A vulgar fraction (``1½``) and a space-grouped amount
(``$350 000``) are numbers, kept as written; ``$ 9`` is read as ``$9``; ``x`` multiplies where the
package's rule says so once units are taken out (``3 x 4``, ``3 x -4``, ``2 apples x 3``). Over
all GSM8K gold solutions (test and train) the slots read differ from those of the parser this
replaced in 4 solutions, each a written calculation now read (``$350 000 x 5/100``, ``8 acres x ¾``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from psgrpo.ps.scorers import expressions as px
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
NUMBER = DECIMAL_PATTERN  # the package's number grammar (psgrpo.rewards.numbers)
MAX_UNIT_WORDS = 6
TEXT_NUMBER_RE = re.compile(rf"(?<![\w.,])(\$?)({NUMBER})(?![\w])")
"""A number in free text (group 1: a ``$``, group 2: the number) not glued to a word."""
_UNIT_WORD_RE = re.compile(r"/?[A-Za-z][A-Za-z'’]*")  # eggs, kid's, /week
_DROPPED_DOLLAR_RE = re.compile(r"\$(?=[-−]\d)")  # $-5: the package's tokenizer drops this $
_SPACED_DOLLAR_RE = re.compile(r"\$\s(?=[\d.])")  # $ 9, as GSM8K writes it at times


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


def _split_fractions(tokens: list[px.Token]) -> list[px.Token]:
    """``tokens`` with each glued fraction (``3/4``, ``$3/4``, ``3 1/2``) split into its numbers and ``/``."""
    out: list[px.Token] = []
    for token in tokens:
        if token.kind != "num" or "/" not in token.text:
            out.append(token)
            continue
        for m in re.finditer(r"[^\s/]+|/", token.text):
            start = token.start + m.start()
            out.append(
                px.Token("op" if m.group() == "/" else "num", m.group(), start, start + len(m.group()))
            )
    return out


def _unit_word_end(tokens: list[px.Token], i: int) -> int:
    """The end of the unit word that starts at ``tokens[i]`` (``eggs``, ``kid's``, ``/week``), or ``i``
    if none does; an ``x`` before a number or ``(`` is a times sign, not a unit."""
    j = i
    while j < len(tokens) and (j == i or tokens[j].start == tokens[j - 1].end):
        if tokens[j].kind != "word" and tokens[j].text not in {"/", "'", "’"}:
            break
        j += 1
    word = "".join(token.text for token in tokens[i:j])
    while j > i and not _UNIT_WORD_RE.fullmatch(word):  # a trailing / or apostrophe run
        j -= 1
        word = "".join(token.text for token in tokens[i:j])
    times = word in {"x", "X"} and j < len(tokens) and tokens[j].kind in {"num", "lpar"}
    return i if times else j


def _take_units(tokens: list[px.Token]) -> tuple[list[px.Token], dict[px.Token, str]]:
    """``tokens`` without the unit words that follow numbers, and each such number's unit
    (``hours/week``, ``duck eggs``)."""
    kept: list[px.Token] = []
    units: dict[px.Token, str] = {}
    i = 0
    while i < len(tokens):
        number = tokens[i]
        kept.append(number)
        i += 1
        words: list[str] = []
        while number.kind == "num" and len(words) < MAX_UNIT_WORDS and (end := _unit_word_end(tokens, i)) > i:
            words.append("".join(token.text for token in tokens[i:end]))
            i = end
        if words:
            units[number] = "".join(w if w.startswith("/") or not k else " " + w for k, w in enumerate(words))
    return kept, units


class _NodeBuilder:
    """The :class:`~psgrpo.ps.scorers.expressions.Builder` of :func:`parse_math`: :class:`Num` /
    :class:`Op` as written; ``None`` (no tree) for what :func:`render` cannot write back."""

    def __init__(self, units: dict[px.Token, str]) -> None:
        self.units = units

    def leaf(self, token: px.Token) -> Num | None:
        tree = px.parse_literal(token.text)  # a number or a percentage (fractions are split)
        value = None if tree is None else px.evaluate(tree)
        if value is None:
            return None
        body = token.text.removeprefix("$")
        return Num(
            value, body, token.text.startswith("$"), self.units.get(token, ""), percent=body.endswith("%")
        )

    def binary(self, op: str, token: px.Token | None, left: Node, right: Node) -> Op | None:
        return None if token is None or op not in PREC else Op(op, left, right, token.text)

    def sign(self, op: str, operand: Node, token: px.Token) -> Num | None:
        if op != "-" or not isinstance(operand, Num) or operand.paren or operand.text.startswith("-"):
            return None
        return replace(operand, value=-operand.value, text="-" + operand.text)

    def group(self, inner: Node) -> Node:
        return replace(inner, paren=True)


def parse_math(text: str) -> Node | None:
    """The expression tree of ``text`` (numbers with their units, operators, parentheses only), or None."""
    if _DROPPED_DOLLAR_RE.search(text):
        return None
    tokens, units = _take_units(_split_fractions(px.tokenize(_SPACED_DOLLAR_RE.sub("$", text))))
    try:
        return px.parse_expression(px.times_signs(tokens), builder=_NodeBuilder(units))
    except px.BudgetExceeded:
        return None


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
