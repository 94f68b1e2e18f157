"""Equations written with words: units between the numbers, and operator words.

People and models write arithmetic inside sentences: ``22 pens + 10 pens = 32 pens``, ``80 GB / 2
GB/minute = 40 minutes``, ``$20/hour * 35 hours/week = $700/week``, ``2/3 of 24 = 16``, ``20% of 80
= 16``, ``half of 30 is 15``, ``3 customers × 1 DVD each = 3 DVDs``. :func:`read_words` rewrites the
tokens of such text (:func:`psgrpo.ps.scorers.expressions.tokenize`) so that the equation reader
sees the arithmetic in it, and nothing more:

* **units** (:func:`drop_units`): up to :data:`MAX_UNIT_WORDS` words after a number (``pens``,
  ``eggs for breakfast``, ``pieces of straw per cage``) are taken out when an operator or an
  operator word follows them (``x``, ``times``, ``plus``; ``of`` only after a fraction, a
  percentage or a decimal below 1: ``5 hours each week for a total of 5*2 = 10`` is prose, then an
  equation), so they sit *between* numbers of an equation; before ``=`` (or ``is``) only when
  the number is itself an operand, an operator before it (``80 sheep + 160 sheep = 240 sheep``, not the conversion ``= 12 inches = 1 foot``),
  and before ``)`` only inside parentheses that hold an operator (``(5280 feet / 1 mile)``, not ``=
  4 (15 minutes)``). Rates (``/minute``, ``$700/week``) and glued hyphen words (``15 4-packs``,
  ``60-minute``) right after a number are units wherever they stand, and such a compound after a
  number is part of its unit (``10 2-legged animals * 2 legs = 20``). Words that link clauses or
  name an operation (:data:`NOT_UNITS`: ``and``, ``is``, ``times`` ...) are never units, nor is a
  lone letter glued to a number (``2x + 3``: algebra, skipped as before) or ``3pm``.
* **``of``** after a fraction, a percentage or a decimal below 1 and before a number is ``×``
  (``2/3 of 24``, ``20% of 80``, ``.25 of 40``); ``half of`` / ``a third of`` / ``a quarter of`` a
  number is ``1/2 ×`` / ``1/3 ×`` / ``1/4 ×``. ``of`` anywhere else is prose (``a total of 9 + 6 =
  15`` reads ``9 + 6 = 15``).
* **``times`` / ``plus`` / ``minus``** between two numbers are ``× + -`` (``7 times 2 equals 14``,
  not ``= 29 times.``); **``twice`` / ``double`` / ``triple``** before a number are ``2 ×`` / ``3 ×``.
* **``is`` / ``equals`` / ``was``** is ``=`` when the math before it holds an operator and a lone
  number follows (``half of 30 is 15``, ``5 + 3 is 8``), never after a lone number (``He is 12``)
  nor before an expression (``is 1.5*8``).

Prose stays prose: without an operator and ``=`` between them nothing is read (``He worked 5 days
a week for 3 weeks``, ``at 3:30``, ``in 2019``; bare numbers then ``=``, ``9 2 1 = 8``, are a garbled
equation, :func:`psgrpo.ps.scorers.equations.garbled_equations`), so precision on GSM8K's gold lines stays at or
above 0.99 (``benchmarks/scorers/bench_equation_reading.py``, docs/scorers.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from psgrpo.ps.scorers.expressions import MAX_EXPRESSION_TOKENS, OP_CANONICAL, Token, times_signs
from psgrpo.rewards.numbers import without_currency

MAX_UNIT_WORDS = 6
"""Most words one unit may have (``eggs for breakfast``, ``pieces of straw per hamster cage``)."""

NOT_UNITS = frozenset(
    "and or but so then thus hence is are was were be been equals equal equaled gives makes means "
    "times x X plus minus than which that because since if when while where we he she they it "
    "i you there this these those sum difference product altogether together "
    "twice half double triple answer".split()
)
"""Words that never belong to a unit: they link clauses or name an operation."""

_FRACTION_OF = {"half": "1/2", "third": "1/3", "quarter": "1/4", "fourth": "1/4", "fifth": "1/5"}
_EQUALS_WORDS = {"is", "equals", "was"}
_WORD_OPS = {"times": "*", "plus": "+", "minus": "-"}
_MULTIPLIERS = {"twice": "2", "double": "2", "triple": "3", "thrice": "3"}
_BINARY = {"+", "-", "*", "/", "//"}


def _is_unit_word(token: Token, text: str, after: Token) -> bool:
    """A word that may belong to a unit: two letters or more (a lone letter glued to a number is a
    variable) and not in :data:`NOT_UNITS`; ``after`` is the token before it."""
    if token.kind != "word" or token.text in NOT_UNITS or token.text.lower() in NOT_UNITS:
        return False
    if after.end == token.start and after.kind == "num":  # glued: 5kg, but not 2x, 3pm, 1st
        return len(token.text) >= 2 and token.text.lower() not in {"am", "pm", "st", "nd", "rd", "th"}
    return len(token.text) >= 2 or token.text == "a"


def _rate_end(tokens: Sequence[Token], j: int, text: str) -> int | None:
    """The end of a rate ``/word`` (or glued ``-word``) starting at ``tokens[j]``, else ``None``."""
    if j + 1 >= len(tokens):
        return None
    sign, word = tokens[j], tokens[j + 1]
    hyphen = sign.kind == "other" and sign.text == "-"  # made prose by word_hyphens: push-ups, time-outs
    if (
        not (sign.kind == "op" or hyphen)
        or word.kind != "word"
        or len(word.text) < 2
        or word.text in NOT_UNITS
    ):
        return None
    if OP_CANONICAL.get(sign.text) == "/":
        return j + 2
    glued = tokens[j - 1].end == sign.start and sign.end == word.start
    return j + 2 if sign.text == "-" and glued else None


def _unit_end(tokens: Sequence[Token], i: int, text: str) -> tuple[int, int]:
    """After the number ``tokens[i]``: the end of the rates (``/week``) and glued hyphen words
    (``-minute``) right after it, which are units wherever they stand, and the end of the whole
    unit that follows it."""
    j, words, rates_end = i + 1, 0, i + 1
    while j < len(tokens):
        rate = _rate_end(tokens, j, text)
        if rate is not None:
            j = rate
            rates_end = j if words == 0 else rates_end
            continue
        if words < MAX_UNIT_WORDS and _is_unit_word(tokens[j], text, tokens[j - 1]):
            j, words = j + 1, words + 1
            continue
        compound = _rate_end(tokens, j + 1, text) if tokens[j].kind == "num" and j + 1 < len(tokens) else None
        if words < MAX_UNIT_WORDS and compound is not None and tokens[j + 1].text == "-":
            j, words = compound, words + 1  # 10 2-legged animals: a number glued to a word describes
            continue
        break
    return rates_end, j


def _operator_like(token: Token) -> bool:
    """An operator, or a word made one later between numbers (``x``, ``times``, ``plus``, ``of`` ...)."""
    words = {"x", "X", "times", "plus", "minus", "of", *_MULTIPLIERS}
    return token.kind == "op" or (token.kind == "word" and token.text.lower() in words)


def _unit_between(out: Sequence[Token], after: Token | None) -> bool:
    """Whether a unit after the number ``out[-1]`` sits inside an equation, given the token
    ``after`` the unit: an operator or ``x`` / ``times``; ``=`` when the number is itself an operand
    (an operator before it: ``80 sheep + 160 sheep = 240``, not the conversion ``= 12 inches = 1
    foot``); ``)`` when its parentheses hold an operator (``(5280 feet / 1 mile)``, not ``= 4 (15
    minutes)``)."""
    if after is None:
        return False
    if after.kind == "word" and after.text.lower() == "of":  # ``of`` is × after a part only (operator_words)
        return _is_part(out[-1])
    if _operator_like(after):
        return True
    if after.kind == "eq" or (after.kind == "word" and after.text in _EQUALS_WORDS):
        return len(out) > 1 and _operator_like(out[-2])
    if after.kind == "rpar":  # look back (a bounded way) for the "(" and an operator after it
        seen_operator = False
        for token in reversed(out[-MAX_EXPRESSION_TOKENS:-1]):
            if token.kind == "lpar":
                return seen_operator
            if token.kind not in {"num", "op"}:
                return False
            seen_operator |= token.kind == "op"
    return False


def drop_units(tokens: Sequence[Token], text: str) -> list[Token]:
    """``tokens`` without the units between the numbers of an equation (see the module docstring)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        out.append(tokens[i])
        if tokens[i].kind != "num":
            i += 1
            continue
        rates_end, end = _unit_end(tokens, i, text)
        if end > i + 1 and _unit_between(out, tokens[end] if end < len(tokens) else None):
            i = end
        else:
            i = rates_end
    return out


def _is_part(token: Token) -> bool:
    """A number that is a part of something: a fraction, a percentage or a decimal below 1."""
    body = without_currency(token.text)
    return token.kind == "num" and (
        "/" in body or body.endswith("%") or bool(re.fullmatch(r"0?\.\d+", body)) or not body[:1].isdigit()
    )


def _math_before_has_operator(tokens: Sequence[Token], i: int) -> bool:
    """Whether the run of math tokens ending right before ``tokens[i]`` holds a binary operator."""
    j = i - 1
    while j >= max(0, i - MAX_EXPRESSION_TOKENS) and tokens[j].kind in {"num", "op", "lpar", "rpar"}:
        if tokens[j].kind == "op" and OP_CANONICAL[tokens[j].text] in _BINARY and j < i - 1:
            return True
        j -= 1
    return False


def _result_follows(tokens: Sequence[Token], i: int) -> bool:
    """Whether a lone number (a result, not an expression) follows ``tokens[i]``: ``is 15.``, not ``is 1.5*8``."""
    if i + 1 >= len(tokens) or tokens[i + 1].kind != "num":
        return False
    return i + 2 == len(tokens) or tokens[i + 2].kind not in {"op", "lpar", "num"}


def operator_words(tokens: Sequence[Token]) -> list[Token]:
    """``of``, ``times`` / ``plus`` / ``minus``, ``twice``, ``is`` / ``equals`` / ``was`` and ``half of``
    as the operators and numbers they stand for (see the module docstring); other tokens unchanged."""
    out: list[Token] = []
    for i, token in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        number_after = after is not None and after.kind == "num"
        before = out[-1] if out else None
        word = token.text.lower() if token.kind == "word" else ""
        if word == "of" and number_after and before is not None and _is_part(before):
            out.append(Token("op", "*", token.start, token.end))
        elif word in _WORD_OPS and number_after and before is not None and before.kind == "num":
            out.append(Token("op", _WORD_OPS[word], token.start, token.end))
        elif (
            word in _EQUALS_WORDS and _result_follows(tokens, i) and _math_before_has_operator(out, len(out))
        ):
            out.append(Token("eq", "=", token.start, token.end))
        elif word in _FRACTION_OF and after is not None and after.text == "of" and i + 2 < len(tokens):
            is_part = tokens[i + 2].kind == "num"
            out.append(Token("num", _FRACTION_OF[word], token.start, token.end) if is_part else token)
        elif word in _MULTIPLIERS and number_after:
            out += [
                Token("num", _MULTIPLIERS[word], token.start, token.end),
                Token("op", "*", token.end, token.end),
            ]
        else:
            out.append(token)
    return out


_UNITS_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
)
_UNITS_WORDS += "sixteen seventeen eighteen nineteen"
NUMBER_WORDS = {word: index for index, word in enumerate(_UNITS_WORDS.split())} | {
    word: 10 * (index + 2)
    for index, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
"""Words for the numbers 0–19 and the tens, read as numbers (with ``twenty-five``)."""


_ARITHMETIC_WORDS = {"plus", "minus", "times", "is", "equals", "was", "x"}


def _beside_arithmetic(tokens: Sequence[Token], i: int) -> bool:
    """Whether the word ``tokens[i]`` (or the hyphenated number it starts) stands next to an operator,
    ``=`` or an operator word: ``seven plus two is nine``, not ``For eleven months ... of $25``."""
    end = (
        i + 2
        if i + 2 < len(tokens) and tokens[i + 1].text == "-" and tokens[i + 1].start == tokens[i].end
        else i
    )

    def arithmetic(token: Token) -> bool:
        return token.kind in {"op", "eq"} or (
            token.kind == "word" and token.text.lower() in _ARITHMETIC_WORDS
        )

    return (i > 0 and arithmetic(tokens[i - 1])) or (end + 1 < len(tokens) and arithmetic(tokens[end + 1]))


def number_words(tokens: Sequence[Token], anywhere: bool = False) -> list[Token]:
    """``tokens`` with each word for a number (``seven``, ``Twenty-five``) made that number's token.

    Only the words of :data:`NUMBER_WORDS` and tens glued to a unit by a hyphen, and only beside an
    operator, ``=`` or an operator word (``plus``, ``times``, ``is`` ...): ``For eleven months`` stays
    prose (it would swallow a unit after it); ``anywhere``: every number word (a question's numbers).
    ``hundred``, ``a dozen`` and ordinals stay words.
    """
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        value = NUMBER_WORDS.get(token.text.lower()) if token.kind == "word" else None
        if value is not None and not anywhere and not _beside_arithmetic(tokens, i):
            value = None
        if value is None:
            out.append(token)
            i += 1
            continue
        end = token.end
        if i + 2 < len(tokens) and tokens[i + 1].text == "-" and tokens[i + 1].start == end:
            unit = tokens[i + 2]
            glued = unit.kind == "word" and unit.start == end + 1
            if glued and value >= 20 and 0 < NUMBER_WORDS.get(unit.text.lower(), 10) < 10:
                value, end = value + NUMBER_WORDS[unit.text.lower()], unit.end
                i += 2
            elif glued:  # one-half, two-thirds, three-legged: a word, not a number and a unit
                out.append(token)
                i += 1
                continue
        out.append(Token("num", str(value), token.start, end))
        i += 1
    return out


def word_hyphens(tokens: Sequence[Token]) -> list[Token]:
    """``tokens`` with each ``-`` glued between two words made prose (``one-half``, ``well-known``):
    never a minus (``one-half of 30 is 15`` is not ``-half of 30``)."""
    return [
        Token("other", token.text, token.start, token.end)
        if token.text == "-"
        and 0 < i < len(tokens) - 1
        and tokens[i - 1].kind == "word"
        and tokens[i + 1].kind == "word"
        and tokens[i - 1].end == token.start
        and token.end == tokens[i + 1].start
        else token
        for i, token in enumerate(tokens)
    ]


def read_words(tokens: Sequence[Token], text: str) -> list[Token]:
    """The tokens of ``text`` with number words made numbers, hyphens between words made prose, units
    taken out and operator words made operators."""
    return operator_words(times_signs(drop_units(word_hyphens(number_words(tokens)), text)))
