"""Equations a step states: found in text, judged exactly, with the numbers the step uses.

Equations are read from GSM8K calculator annotations ``<<expr=result>>`` (the visible copy of the
result right after ``>>`` belongs to the annotation, so ``48/2 = <<48/2=24>>24`` is one equation)
and from plain text: ``a op b = c`` and chains ``a = b = c``, in any expression
:mod:`psgrpo.ps.scorers.expressions` parses (an equation with ``%`` holds if it holds with
percentages as hundredths or as written). A right side that writes decimals may round:
``10/3 = 3.33`` holds. Words between the numbers are read first (:mod:`psgrpo.ps.scorers.words`:
units ``22 pens + 10 pens = 32 pens``, rates ``50 km/hr * 3``, ``20% of 80``, ``half of 30 is 15``,
``7 times 2 equals 14``); prose without an operator and ``=`` is never an equation, except
numbers with the operators missing (``9 2 1 = 8``: a garbled equation, which never holds,
:func:`garbled_equations`). Text next to a
variable or an operator word (``2x + 3 = 9``, ``X*25% = 19.50``, ``two-thirds of 24 * 2``) is only
part of an expression and is skipped, and so is anything else that does not parse: it is not an
equation. Division by zero makes an equation fail. On GSM8K's gold lines with their annotations
removed this reads 98.6 % of the annotated equations at 99.95 % precision (test split;
``benchmarks/scorers/bench_equation_reading.py``, docs/scorers.md).

:func:`extract_step` never raises: a run of arithmetic beyond the limits of
:mod:`psgrpo.ps.scorers.expressions`, or past the step's work budget, yields no equation and is
counted in :attr:`StepEquations.unparsed`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import pairwise

from psgrpo.ps.scorers.expressions import (
    HUNDREDTHS,
    MATH_KINDS,
    NUMBER_PATTERN,
    OP_CANONICAL,
    Budget,
    BudgetExceeded,
    Expr,
    Token,
    evaluate,
    has_operator,
    number_value,
    parse_expression,
    pass_through,
    tokenize,
    written_numbers,
)
from psgrpo.ps.scorers.latex import to_plain
from psgrpo.ps.scorers.words import read_words
from psgrpo.rewards.numbers import CURRENCY_PATTERN


@dataclass(frozen=True)
class Equation:
    """One stated equation ``lhs = rhs``; a value is ``None`` when it divides by zero (or is garbled).

    ``passes_through``: ``None``, unless the left side passes an operand equal to the right side
    through unchanged (``12 + 0``, ``12 * 1``, see :func:`pass_through`); then the left side's other
    numbers, which make it a no-op unless one of them was computed by an earlier step.
    ``lhs_tree``: the parsed left side (for :func:`~psgrpo.ps.scorers.expressions.partial_values`).
    ``garbled``: the left side is numbers side by side with no operator between them (``9 2 1 = 8``,
    see :func:`garbled_equations`); such an equation never holds and its ``lhs_value`` is ``None``.
    """

    lhs_text: str
    rhs_text: str
    lhs_value: Fraction | None
    rhs_value: Fraction | None
    holds: bool
    passes_through: tuple[Fraction, ...] | None = None
    lhs_tree: Expr | None = field(default=None, compare=False, repr=False)
    garbled: bool = False


# --------------------------------------------------------------------------- equality


def rounding_tolerance(rhs_text: str, percent: Fraction = HUNDREDTHS) -> Fraction:
    """Half a unit of the last decimal written in a single-number right side (``3.33`` → 0.005), else 0."""
    match = re.fullmatch(rf"[-−+]?\s*{CURRENCY_PATTERN}?[\d,]*\.(\d+)(%?)", rhs_text.strip())
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


ANNOTATION_PATTERN = r"<<(?P<body>[^<>]*)>>"
"""A GSM8K calculator annotation, ``<<6*2=12>>``; the result it shows follows it (``$<<6*2=12>>12 on``).
It names one group, ``body``, so a regular expression can hold it once."""
_ANNOTATION_RE = re.compile(rf"{ANNOTATION_PATTERN}(?P<shown>{NUMBER_PATTERN})?")
_STEP_MARKER_RE = re.compile(
    r"\bstep\s*(?:\(\d+\)(?![^\S\n]*[-+−*/×÷^·=(])|\d+)\s*[:.)-]?"
    r"|^[^\S\n]*(?:\d+[.)](?=\s)|\(\d+\)(?=[^\S\n]*(?:\n|\Z)|[^\S\n]+(?:[-−]\d|(?![-+−*/×÷^·=(\s]))))",
    re.IGNORECASE | re.MULTILINE,
)


def plain_step(text: str) -> str:
    """A step as the readers read it: :func:`~psgrpo.ps.scorers.latex.to_plain`, then its step markers
    blanked, as labels rather than numbers (same length): ``Step 2:``, and ``2.``, ``2)`` or ``(2)``
    opening a line; ``(2)`` only before a number, a signed one or a line end (``(2) (3) = 6`` and
    ``(25) + 5`` are arithmetic)."""
    return _STEP_MARKER_RE.sub(lambda m: " " * len(m.group()), to_plain(text))


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
        lhs_text, rhs_text, lhs_value, rhs_value, holds, pass_through(lhs.tree, rhs_value, percent), lhs.tree
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


def _whole(tokens: Sequence[Token], budget: Budget) -> _Side | None:
    tree = parse_expression(tokens, budget)
    return None if tree is None else _Side(tuple(tokens), tree)


def _can_cut(before: Token, after: Token) -> bool:
    """Whether an expression may start at ``after`` or end at ``before`` (prose numbers around it):
    between two numbers apart (``1. 7 + 5``, not inside ``16,0000`` or ``1 234``) or at a parenthesis."""
    if before.kind == "num" and after.kind == "num":  # not inside thousands in groups: 1 234.50
        grouped = after.start - before.end == 1 and _thousands([before, after])
        return before.end < after.start and not grouped
    return (
        before.kind == "lpar"
        or after.kind == "rpar"
        or (before.kind, after.kind) in {("num", "lpar"), ("rpar", "num")}
    )


def _longest_suffix(tokens: Sequence[Token], budget: Budget) -> _Side | None:
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


def _longest_prefix(tokens: Sequence[Token], budget: Budget) -> _Side | None:
    """The longest expression starting the group, ending at its end or at a cut (raises as
    :func:`_longest_suffix`)."""
    for end in range(len(tokens), 0, -1):
        if end == len(tokens) or _can_cut(tokens[end - 1], tokens[end]):
            if side := _whole(tokens[:end], budget):
                return side
    return None


_WORDS_BEFORE_OPERAND = {"x", "X", "times", "plus", "minus"}  # 15 pages x 1/3 = 5: not 1/3 = 5
_PART_WORD_RE = re.compile(
    r"(?i)(half|halves|thirds?|quarters?|[a-z]+ths?|percent|dozens?|twice|double|triple)"
)
_WORDS_AFTER_OPERAND = {"x", "X", "plus", "minus"}  # not "times": "= 29 times."
_WORDS_BEFORE_SIGN = {"to", "is", "was", "are", "were", "be", "becomes", "reaches", "at"}
"""Words after which ``- 6`` is a negative number, not the rest of ``x - 6`` (``rose to - 6 + 3 = -3``)."""


def _operator_word(tokens: Sequence[Token], i: int) -> bool:
    """Whether the word ``tokens[i]`` makes the number after it an operand: ``x``, ``times`` ..., or
    ``of`` after a number or a part (``two-thirds of 24``; ``a total of 9 + 6`` is prose)."""
    if tokens[i].text in _WORDS_BEFORE_OPERAND:
        return True
    if tokens[i].text != "of" or i == 0:
        return False
    return tokens[i - 1].kind == "num" or bool(_PART_WORD_RE.fullmatch(tokens[i - 1].text))


def _is_open(text: str, tokens: Sequence[Token], start: int, end: int) -> tuple[bool, bool]:
    """Whether the math run ``tokens[start:end]`` continues into prose on the (left, right), so that
    its first (last) group is only part of an expression: ``2x + 3 = 9``, ``15 pages x 1/3 = 5``, ``= 8x``.

    Left: the run starts with a binary operator (``+ * /``, or ``-`` followed by a space, except
    after a word of :data:`_WORDS_BEFORE_SIGN`: ``rose to - 6 + 3 = -3``), follows
    ``^`` or an operator word (``x``, ``times``, ``of`` ...), or starts with a rate's 1 (``24 eggs
    in 1 tray x 2 trays = 48``: not 1 × 2 = 48), or opens with ``(`` on the line after a factor
    (:func:`_after_a_hanging_factor`). Right: it ends with an operator, a lone letter or ``^`` is
    glued to its end, an operator word follows, or it ends in the first group of a number written in
    groups of three (``= 18 000``: the reader cannot take ``000`` for a number).
    """
    first, last = tokens[start], tokens[end - 1]
    before = tokens[start - 1] if start > 0 else None
    after = tokens[end] if end < len(tokens) else None
    signed = (  # on the same line, and a hyphen-minus or minus sign: a bullet or a dash is no sign
        before is not None
        and before.kind == "word"
        and before.text.lower() in _WORDS_BEFORE_SIGN
        and first.text in {"-", "−"}
        and "\n" not in text[before.end : first.start]
    )
    starts_binary = first.kind == "op" and (
        OP_CANONICAL[first.text] in {"+", "*", "/", "^"}
        or (text[first.end : first.end + 1].isspace() and not signed)
    )
    word_before = before is not None and before.kind == "word" and _operator_word(tokens, start - 1)
    rate_one = first.text == "1" and before is not None and before.text in {"in", "per", "each", "every"}
    hanging = _after_a_hanging_factor(text, tokens, start) or _marker_or_factor(text, tokens, start)
    left_open = (
        starts_binary
        or word_before
        or rate_one
        or hanging
        or text[max(0, first.start - 1) : first.start] == "^"
    )
    glued = text[last.end : last.end + 2]
    lone_letter = bool(re.match(r"[A-Za-z](?![A-Za-z])", glued))
    word_after = after is not None and after.kind == "word" and after.text in _WORDS_AFTER_OPERAND
    grouped = len(last.text) <= 3 and last.text.isdigit() and bool(_GROUP_AFTER_RE.match(text, last.end))
    right_open = last.kind == "op" or lone_letter or glued.startswith("^") or word_after or grouped
    return left_open, right_open


_GROUP_AFTER_RE = re.compile(r"[^\S\n]\d{3}(?![\d,/])")


def _after_a_hanging_factor(text: str, tokens: Sequence[Token], start: int) -> bool:
    """Whether the run at ``start`` opens with ``(`` on the line after an operand of a line with no
    ``=``: ``1000\n(1 + 0.05)^2 = 1102.5`` may be one product, so its first group is not whole.
    After an equation (``= 12\n(12 + 1) × 2 = 26``) the line starts an expression of its own."""
    if (
        start == 0
        or tokens[start].kind != "lpar"
        or not _new_line_operand(text, tokens[start - 1], tokens[start])
    ):
        return False
    k = start - 1
    while k >= 0 and tokens[k].kind in MATH_KINDS:
        if tokens[k].kind == "eq":
            return False
        if k > 0 and "\n" in text[tokens[k - 1].end : tokens[k].start]:
            break
        k -= 1
    return True


def _marker_or_factor(text: str, tokens: Sequence[Token], start: int) -> bool:
    """Whether the run at ``start`` opens its line with ``(N)`` and then ``(``: ``(4) (138-2)/2 = 68`` is a
    list marker and an equation, or a product; its first group is not judged."""
    head = tokens[start : start + 4]
    return (
        [t.kind for t in head] == ["lpar", "num", "rpar", "lpar"]
        and head[1].text.isdigit()
        and text[text.rfind("\n", 0, head[0].start) + 1 : head[0].start].strip() == ""
    )


def _math_runs(tokens: Sequence[Token], text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each maximal run of math tokens (numbers, operators, parentheses, ``=``).

    A line break between two operands with no operator joining them (``= 12\n(12 + 1) × 2``) ends
    the run: the next line starts another expression, not a product. An operator at either end of the
    line break (``100\n- 20``, display math's continuation lines) keeps the run going.
    """
    runs: list[tuple[int, int]] = []
    start = None
    for i, token in enumerate([*tokens, Token("other", "", -1, -1)]):
        if (
            token.kind in MATH_KINDS
            and start is not None
            and i > start
            and (
                _new_line_operand(text, tokens[i - 1], token)
                or _new_line_after_equation(text, tokens, i, start)
            )
        ):
            runs.append((start, i))
            start = i
        elif token.kind in MATH_KINDS and start is None:
            start = i
        elif token.kind not in MATH_KINDS and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _new_line_operand(text: str, before: Token, after: Token) -> bool:
    """Whether ``after`` opens an operand (a number or ``(``) on a new line right after the operand
    ``before`` ended."""
    return (
        before.kind in {"num", "rpar"}
        and after.kind in {"num", "lpar"}
        and "\n" in text[before.end : after.start]
    )


def _new_line_after_equation(text: str, tokens: Sequence[Token], i: int, start: int) -> bool:
    """Whether ``tokens[i]``, a minus sign glued to a number (``= -30\n-30/3 = -10``), opens a new line
    after a line of the run that holds an ``=``: a new equation, not ``- 30`` subtracted (a line of
    display math with no ``=`` may go on with ``-20``)."""
    token, before = tokens[i], tokens[i - 1]
    if token.text not in {"-", "−"} or not text[token.end : token.end + 1].isdigit():
        return False
    if before.kind not in {"num", "rpar"} or "\n" not in text[before.end : token.start]:
        return False
    for k in range(i - 1, start - 1, -1):
        if tokens[k].kind == "eq":
            return True
        if k > start and "\n" in text[tokens[k - 1].end : tokens[k].start]:
            return False
    return False


def _chains(text: str, tokens: Sequence[Token], start: int, end: int, budget: Budget) -> list[list[_Side]]:
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


_PLAIN_NUMBER_RE = re.compile(rf"{CURRENCY_PATTERN}?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?%?")
"""A number a garble is made of: ``9``, ``$15``, ``1,500``, ``2.5``, ``7%``; not ``1/2`` or ``½``."""
_LINE_SPACE_RE = re.compile(r"[^\S\n]+")
_GARBLE_KINDS = {"num", "op", "lpar", "rpar"}


def _garbled_left(text: str, left: Sequence[Token]) -> bool:
    """Whether ``left`` (the tokens before an ``=``, on its line) is arithmetic with an operator missing:
    numbers, operators and parentheses only, two numbers of it apart by nothing but spaces (``9 2 1``,
    ``9 - 2 1``, ``(8 7)``, ``$15 2 $7``). Not ``16,0000/10`` (glued), ``1 ½`` or ``2 1/2`` (mixed
    numbers) or ``12 345.50`` (thousands in groups of three)."""
    if len(left) < 2 or not all(t.kind in _GARBLE_KINDS for t in left):
        return False
    spaced: list[Token] = []  # the current run of numbers apart only by spaces
    for token in left:
        plain = token.kind == "num" and _PLAIN_NUMBER_RE.fullmatch(token.text) is not None
        if plain and spaced and _LINE_SPACE_RE.fullmatch(text[spaced[-1].end : token.start]):
            spaced.append(token)
            continue
        if len(spaced) >= 2 and not _thousands(spaced):
            return True
        spaced = [token] if plain else []
    return len(spaced) >= 2 and not _thousands(spaced)


_FIRST_GROUP_RE = re.compile(r"\d{1,3}")
_GROUP_RE = re.compile(r"\d{3}")
_LAST_GROUP_RE = re.compile(r"\d{3}(?:\.\d+)?")


def _thousands(numbers: Sequence[Token]) -> bool:
    """``12 345``, ``1 000 000``, ``1 234.50``: one number written in groups of three."""
    first, *middle, last = (t.text for t in numbers)
    return (
        _FIRST_GROUP_RE.fullmatch(first) is not None
        and all(_GROUP_RE.fullmatch(group) for group in middle)
        and _LAST_GROUP_RE.fullmatch(last) is not None
    )


def _on_its_line(text: str, left: Sequence[Token], equals: Token) -> list[Token]:
    """The tokens of ``left`` on the line of the ``=`` after them (a left side is on its ``=``'s line)."""
    tokens = [*left, equals]
    for k in range(len(tokens) - 1, 0, -1):
        if "\n" in text[tokens[k - 1].end : tokens[k].start]:
            return tokens[k:-1]
    return list(left)


def garbled_equations(
    text: str, run: Sequence[Token], chains: Sequence[Sequence[_Side]]
) -> list[tuple[Equation, Token]]:
    """Equations of the math run ``run`` whose left side is numbers with the operators missing.

    ``9 2 1 = 8``, ``9 - 2 1 = 6``: two numbers side by side, nothing but spaces between them, in a
    left side of numbers, operators and parentheses on the ``=``'s line (:func:`_garbled_left`), then
    ``=`` and a number with no letter glued to it, and no equation read across that ``=``
    (:func:`_chains`). It is an equation that does not hold (``garbled``), not prose: read as prose it
    would score a step's neutral score, above a wrong step's, and a policy trained on a reference
    verifier learned to write such steps (docs/learning.md). Like any false equation it states its
    right side as a result and uses its numbers. Real solutions do not write it: none of the labelled
    GSM8K dev files' steps, plain or in LaTeX; one of GSM8K's 31,545 gold lines, a typo (docs/scorers.md).

    Returns:
        ``(equation, right-side token)`` per garbled ``=``, left to right.
    """
    covered = [(chain[0].tokens[0].start, chain[-1].tokens[-1].end) for chain in chains]
    found: list[tuple[Equation, Token]] = []
    left: list[Token] = []
    for i, token in enumerate(run):
        if token.kind != "eq":
            left.append(token)
            continue
        rhs = run[i + 1] if i + 1 < len(run) else None
        left = _on_its_line(text, left, token)
        if (
            rhs is not None
            and rhs.kind == "num"
            and _garbled_left(text, left)  # first: it fails at once on an ordinary equation's left side
            and not re.match(r"[A-Za-z^]", text[rhs.end : rhs.end + 1])  # 3 4 = 12x: algebra, as in _is_open
            and not any(a <= token.start < b for a, b in covered)
            and (value := number_value(rhs.text)) is not None
        ):
            lhs_text = text[left[0].start : left[-1].end]
            found.append((Equation(lhs_text, rhs.text, None, value, False, garbled=True), rhs))
        left = []
    return found


def garbled_without_equals(text: str, run: Sequence[Token]) -> tuple[Equation, Token] | None:
    """``4 + 8 8 12``: the math run ``run`` as an equation with its ``=`` written as a number.

    No ``=`` in the run; on the line of its last token, an expression with an operator (numbers,
    operators and parentheses) and then two numbers apart only by spaces, with no letter glued to the
    last: a policy trained on the reference verifier wrote these once ``9 2 1 = 8`` was read as false
    (docs/learning.md), and read as prose they hid a wrong step (``14 * 2 8 38``) behind the neutral
    score. It is a garbled equation stating the last number, as :func:`garbled_equations`'. The gaps are
    one space each (table cells and LaTeX spacing leave wider ones: ``3 \\times 4 & 12 & 12``). Not
    thousands in groups (``3 + 1 000``) or a list of numbers with no operator."""
    if len(run) < 5 or any(t.kind == "eq" for t in run):
        return None
    line = [*_on_its_line(text, run[:-1], run[-1]), run[-1]]
    if len(line) < 5:  # 345\n+ 278\n623: the last number alone on its line
        return None
    *left, digit, rhs = line
    plain = all(t.kind == "num" and _PLAIN_NUMBER_RE.fullmatch(t.text) for t in (digit, rhs))
    if (
        not plain
        or not all(t.kind in _GARBLE_KINDS for t in left)
        or not any(t.kind == "op" for t in left)
        or left[-1].kind not in {"num", "rpar"}
        or text[digit.end : rhs.start] != " "  # one space each: table cells, LaTeX spacing and math
        or text[left[-1].end : digit.start] != " "  # spans joined by to_plain leave wider gaps
        or _thousands([digit, rhs])
        or (left[-1].kind == "num" and _thousands([left[-1], digit]))
        or re.match(r"[A-Za-z^]", text[rhs.end : rhs.end + 1])
        or (value := number_value(rhs.text)) is None
    ):
        return None
    lhs_text = text[left[0].start : digit.end]
    return Equation(lhs_text, rhs.text, None, value, False, garbled=True), rhs


def _garbled_annotation(body: str, groups: Sequence[Sequence[Token]]) -> Equation | None:
    """``<<9 2 1=8>>``: an annotation whose left side is garbled (:func:`_garbled_left`) and whose right
    side is one number, as a false equation; else ``None``."""
    left, right = groups
    if len(right) != 1 or right[0].kind != "num" or not _garbled_left(body, left):
        return None
    value = number_value(right[0].text)
    lhs_text = body[left[0].start : left[-1].end]
    return None if value is None else Equation(lhs_text, right[0].text, None, value, False, garbled=True)


def _annotation_equations(body: str, rel_tol: float, budget: Budget) -> tuple[list[Equation], list[Fraction]]:
    """Equations and operand numbers of one calculator annotation; nothing if it is not all arithmetic."""
    tokens = tokenize(body)
    groups = _split_on_equals(tokens)
    sides = [_whole(group, budget) for group in groups]
    if len(sides) == 2 and sides[0] is None and (garbled := _garbled_annotation(body, groups)):
        return [garbled], [v for t in groups[0] if t.kind == "num" for v in written_numbers(t.text)]
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
    Operands are all numbers except each chain's final result (and a garbled equation's right side,
    :func:`garbled_equations`); step markers (``Step 2:``, and
    ``2.`` opening a line) are labels, not numbers of the step. A run of arithmetic beyond the
    verifier's limits adds nothing but one to ``unparsed``; this function never raises.
    """
    text = plain_step(text)
    budget = Budget(len(text))
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
    tokens = read_words(tokenize(prose), prose)
    for start, end in _math_runs(tokens, prose):
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
        garbled = garbled_equations(prose, tokens[start:end], chains)
        if (no_equals := garbled_without_equals(prose, tokens[start:end])) is not None:
            garbled.append(no_equals)
        for equation, rhs in garbled:
            equations.append(equation)
            results.append((rhs.end, equation.rhs_value))
            final_sides.add(rhs.start)
    for i, token in enumerate(tokens):
        if token.kind == "num" and token.start not in final_sides:
            values = written_numbers(token.text)
            # ``4 + 1/2`` uses 1 and 2, and the 1/2 an earlier step may have computed (``1/4 * 2 =
            # 1/2``); not when the step computes that value from it (``24/2 = 12`` divides)
            sign = -1 if _signed(tokens, i) else 1  # ``-30 / 3`` uses -30, the result of an earlier step
            whole = number_value(token.text) if len(values) > 1 and "/" in token.text else None
            wholes = [] if whole is None else [sign * whole]
            if wholes and any(position > token.start and value in wholes for position, value in results):
                wholes = []
            values = [sign * value for value in values]
            percent = values[-1:] if token.text.endswith("%") else []  # 5% uses 5 or 0.05
            uses += [(token.start, value) for value in values + [v * HUNDREDTHS for v in percent] + wholes]
    uses.sort(key=lambda use: use[0])
    return StepEquations(equations, [value for _, value in uses], uses, results, unparsed)


def _signed(tokens: Sequence[Token], i: int) -> bool:
    """Whether the number ``tokens[i]`` has a minus sign glued to it that is a sign, not an operator:
    not after a number or ``)`` (``is -6``, ``= -6 + 3``, ``(-3)``, but ``5 -3`` subtracts)."""
    if i == 0 or tokens[i - 1].kind != "op" or tokens[i - 1].text not in {"-", "−"}:
        return False
    return tokens[i - 1].end == tokens[i].start and (i < 2 or tokens[i - 2].kind not in {"num", "rpar"})


def extract_equations(text: str, rel_tol: float = 1e-6) -> list[Equation]:
    """The equations stated in one step's text (see :func:`extract_step`)."""
    return extract_step(text, rel_tol).equations
