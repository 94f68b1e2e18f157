"""Parsing of numeric answers as people write them: ``1,000``, ``$18``, ``£18``, ``18.0``, ``-3``, ``3/4``, ``50%``."""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

# ---- the one number grammar: answers here, step text in psgrpo.ps.scorers.expressions, the benchmarks' rewrites

DECIMAL_PATTERN = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
"""An unsigned decimal as people write it: ``1,000`` / ``1,234.5`` (comma thousands), ``18``, ``2.5``, ``.5``."""
FRACTION_PATTERN = r"\d+/\d+(?!\.?\d|,\d)"
"""A glued fraction ``3/4`` (one number, so ``1 1/2 / 1/2`` is 3), never ``3/4.5``."""
VULGAR_FRACTIONS = "¼½¾⅐⅑⅒⅓⅔⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞"
CURRENCY_SIGNS = "$£€¥₹"
"""Signs written before an amount (``$18``, ``£18``, ``€18``): part of the number, not of its value."""
CURRENCY_PATTERN = f"[{re.escape(CURRENCY_SIGNS)}]"
SPACED_PATTERN = rf"(?<={CURRENCY_PATTERN})\d{{1,3}}(?: \d{{3}})+(?:\.\d+)?(?![\d,/])"
"""A space-grouped amount after a currency sign: ``$350 000``."""
NUMBER_PATTERN = rf"{CURRENCY_PATTERN}?(?:{SPACED_PATTERN}|\d+ (?!0){FRACTION_PATTERN}|{FRACTION_PATTERN}|\d*[{VULGAR_FRACTIONS}]|{DECIMAL_PATTERN})%?"
"""One number written in step text: an optional currency sign, a decimal, a (mixed or vulgar) fraction, an optional ``%``."""


def without_currency(text: str) -> str:
    """``text`` without the currency sign it starts with (``£1,000`` → ``1,000``), if any."""
    return text[1:] if text[:1] in CURRENCY_SIGNS else text


def decimal_value(body: str) -> Fraction:
    """The exact value of a :data:`DECIMAL_PATTERN` or space-grouped number (``1,000`` → 1000, ``.5`` → 1/2),
    or of a vulgar fraction with its whole part (``1½`` → 3/2)."""
    if body and body[-1] in VULGAR_FRACTIONS:
        return Fraction(body[:-1] or 0) + Fraction(unicodedata.numeric(body[-1])).limit_denominator(10)
    return Fraction(body.replace(",", "").replace(" ", ""))


_NUMBER_RE = re.compile(
    rf"""^
    (?P<sign>[-+−])?\s*
    [$£€¥₹]?\s*
    (?P<body>{DECIMAL_PATTERN})
    (?:\s*/\s*(?P<den>\d+))?              # 3/4, 3 / 4
    \s*%?
    $""",
    re.VERBOSE,
)

MAX_NUMBER_DIGITS = 1000
"""Longest digit string read as a number. Python refuses to convert more than 4300 digits to an int
(``ValueError``); model text can hold any number of digits, so longer numbers are "not a number"."""


def parse_number(text: str) -> Fraction | None:
    """Parse ``text`` as one number and return it exactly, or ``None`` if it is not one number.

    Accepts thousands separators, a leading currency sign (``$ £ € ¥ ₹``), a trailing ``%`` (kept as written: ``50%`` is 50,
    as GSM8K answers are), decimals, a sign (ASCII or Unicode minus) and simple fractions ``a/b``.
    Surrounding whitespace and a final full stop are ignored. Anything else (words, two numbers,
    an empty string, more than :data:`MAX_NUMBER_DIGITS` digits) gives ``None``.
    """
    s = text.strip().rstrip(".").strip() if text.strip() not in {".", ""} else ""
    match = _NUMBER_RE.match(s)
    if match is None or len(match["body"]) + len(match["den"] or "") > MAX_NUMBER_DIGITS:
        return None
    value = decimal_value(match["body"])
    if match["den"] is not None:
        den = int(match["den"])
        if den == 0:
            return None
        value /= den
    return -value if match["sign"] in {"-", "−"} else value


def format_number(value: Fraction) -> str:
    """Canonical text for a number: integers without a decimal point, others as a decimal (up to 6 places)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6f}".rstrip("0").rstrip(".")
