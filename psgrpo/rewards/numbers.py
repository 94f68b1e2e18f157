"""Parsing of numeric answers as people write them: ``1,000``, ``$18``, ``18.0``, ``-3``, ``3/4``, ``50%``."""

from __future__ import annotations

import re
from fractions import Fraction

_NUMBER_RE = re.compile(
    r"""^
    (?P<sign>[-+−])?\s*
    \$?\s*
    (?P<body>
        \d{1,3}(?:,\d{3})+(?:\.\d+)?     # 1,000 or 1,234.5
      | \d+(?:\.\d*)?                     # 18, 18.0, 18.
      | \.\d+                             # .5
    )
    (?:\s*/\s*(?P<den>\d+))?              # 3/4
    \s*%?
    $""",
    re.VERBOSE,
)

MAX_NUMBER_DIGITS = 1000
"""Longest digit string read as a number. Python refuses to convert more than 4300 digits to an int
(``ValueError``); model text can hold any number of digits, so longer numbers are "not a number"."""


def parse_number(text: str) -> Fraction | None:
    """Parse ``text`` as one number and return it exactly, or ``None`` if it is not one number.

    Accepts thousands separators, a leading ``$``, a trailing ``%`` (kept as written: ``50%`` is 50,
    as GSM8K answers are), decimals, a sign (ASCII or Unicode minus) and simple fractions ``a/b``.
    Surrounding whitespace and a final full stop are ignored. Anything else (words, two numbers,
    an empty string, more than :data:`MAX_NUMBER_DIGITS` digits) gives ``None``.
    """
    s = text.strip().rstrip(".").strip() if text.strip() not in {".", ""} else ""
    match = _NUMBER_RE.match(s)
    if match is None or len(match["body"]) + len(match["den"] or "") > MAX_NUMBER_DIGITS:
        return None
    value = Fraction(match["body"].replace(",", ""))
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
