"""Units that do not match: inside one equation (``50 km/hr * 3 days``, ``4 feet + 3 inches``), or
between a step's result and the gold solution's same value (``$36 / 4 = $9 per hour`` where the gold
has ``36 / 4 = 9 hours``).

An equation can hold as arithmetic and still be wrong because its numbers are in different units
of one dimension: a rate per hour times a number of days, feet plus inches. :func:`unit_mismatch`
finds the two patterns a rule can see without guessing: a rate ``a X/U`` (or ``a X per U``) times
``b V``, and ``a U ± b V``, where ``U`` and ``V`` are different units of the same dimension (time,
length, weight, volume) in :data:`DIMENSIONS`. Anything else (money and hours, a unit it does not
know, a conversion written out as ``60 minutes/hour``) is not judged. Linear in the text (one
regular-expression scan with bounded repetitions). :func:`quantities` reads the dimension a text
gives each number (money, or a unit of :data:`DIMENSIONS` written right after it).
"""

from __future__ import annotations

import re
from fractions import Fraction

from psgrpo.ps.scorers.equations import ANNOTATION_PATTERN
from psgrpo.ps.scorers.latex import to_plain
from psgrpo.rewards.numbers import CURRENCY_PATTERN

DIMENSIONS = {
    "time": "second sec minute min hour hr day week wk month year yr",
    "length": "inch foot feet ft yard yd mile meter metre centimeter cm kilometer km millimeter mm",
    "weight": "ounce oz pound lb gram kilogram kg ton",
    "volume": "cup pint quart gallon liter litre milliliter ml",
    "temperature": "degree",
}
"""Units by dimension (singular; plurals are read by dropping a final ``s`` / ``es``)."""

_UNIT = {unit: dimension for dimension, units in DIMENSIONS.items() for unit in units.split()}
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_RATE = re.compile(
    rf"{_NUMBER}\s*[A-Za-z]{{0,12}}\s*(?:/|\bper\b)\s*(?P<per>[A-Za-z]{{1,12}})\s*(?:[*×x]|\btimes\b)\s*"
    rf"{_NUMBER}\s*(?P<unit>[A-Za-z]{{1,12}})\b(?!\s*(?:/|\bper\b))"  # not a rate itself: 4 weeks/month * 6 days/week
)
_SUM = re.compile(
    rf"{_NUMBER}\s*(?P<first>[A-Za-z]{{1,12}})\s*[-+]\s*{_NUMBER}\s*(?P<second>[A-Za-z]{{1,12}})"
)


def _canonical(word: str) -> str | None:
    """The unit a word names (``hours`` → ``hour``, ``feet`` → ``feet``), ``None`` if it names none."""
    word = word.lower()
    for candidate in (
        word,
        word[:-1] if word.endswith("s") else word,
        word[:-2] if word.endswith("es") else word,
    ):
        if candidate in _UNIT:
            return {
                "foot": "feet",
                "hr": "hour",
                "min": "minute",
                "sec": "second",
                "yr": "year",
                "wk": "week",
            }.get(candidate, candidate)
    return None


def _mismatch(a: str, b: str) -> bool:
    """Two words naming different units of one dimension."""
    first, second = _canonical(a), _canonical(b)
    return first is not None and second is not None and first != second and _UNIT[first] == _UNIT[second]


def unit_mismatch(step: str) -> bool:
    """Whether the step writes a rate per one unit times a quantity in another of the same dimension
    (``50 km/hr * 3 days``), or adds or subtracts two units of one dimension (``4 feet + 3 inches``)."""
    text = to_plain(step)
    if any(_mismatch(m["per"], m["unit"]) for m in _RATE.finditer(text)):
        return True
    return any(_mismatch(m["first"], m["second"]) for m in _SUM.finditer(text))


MONEY = "money"
"""The dimension of an amount written ``$12`` (or ``£12``, ``€12`` …), ``12 dollars`` or ``12 cents``."""

_QUANTITY = re.compile(
    rf"(?<![\w.,])(?P<currency>{CURRENCY_PATTERN}\s{{0,2}})?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d.,]\d)"
    r"(?:\s{0,8}(?P<unit>[A-Za-z]{1,12})\b)?"  # LaTeX leaves spaces: ``15 \text{ hours}`` -> ``15   hours``
)


def _dimension(match: re.Match[str]) -> str | None:
    """The dimension a :data:`_QUANTITY` match gives its number, ``None`` when it names none."""
    unit = (match["unit"] or "").lower()
    if match["currency"] or unit in {"dollar", "dollars", "cent", "cents"}:
        return MONEY
    canonical = _canonical(unit)
    return None if canonical is None else _UNIT[canonical]


def quantities(text: str) -> list[tuple[Fraction, str]]:
    """The numbers of ``text`` whose dimension it names, in order, as ``(value, dimension)``: money
    (``$12``, ``12.50 dollars``, ``30 cents``), or the dimension of a unit of :data:`DIMENSIONS`
    written right after the number (``12 hours``, ``2 feet/hour`` and ``$9 per hour`` by their first
    unit). A number followed by another word (``12 green cards``), a percentage or nothing is left out.
    """
    return [
        (Fraction(match["num"].replace(",", "")), dimension)
        for match in _QUANTITY.finditer(text)
        if (dimension := _dimension(match)) is not None
    ]


_ANNOTATION = re.compile(ANNOTATION_PATTERN)


def result_quantities(text: str) -> list[tuple[Fraction, str]]:
    """The value and dimension of each result plain ``text`` states with a unit: the first number
    after each ``=``, when a unit or ``$`` comes with it (``12 miles / 4 mph = 3 hours`` → [(3,
    time)]; the 12 miles it computes from are operands; in ``3 * 4 = 12, so $24`` the result 12 has
    no unit and the $24 is not it). Calculator annotations are read as the result they show."""
    found = []
    for piece in _ANNOTATION.sub("", text).split("=")[1:]:
        match = _QUANTITY.search(piece)
        if match is not None and (dimension := _dimension(match)) is not None:
            found.append((Fraction(match["num"].replace(",", "")), dimension))
    return found


def result_quantity(step: str) -> tuple[Fraction, str] | None:
    """The value and dimension of a step's last result, its LaTeX read first (:func:`result_quantities`:
    ``$36 / 4 = $9 per hour`` → (9, money)), else ``None``."""
    found = result_quantities(to_plain(_ANNOTATION.sub("", step)))
    return found[-1] if found else None
