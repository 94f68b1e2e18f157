"""Argparse types for the benchmarks' numeric flags: a bad value is argparse's one line, before anything loads.

No heavy imports here: ``device_check.py`` reads its flags on a machine that may lack trl or datasets.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def at_least(
    minimum: float, kind: type[int] | type[float] = float, strict: bool = False
) -> Callable[[str], float]:
    """An argparse ``type=``: ``kind(text)``, refused unless ``>= minimum`` (``> minimum`` when ``strict``).

    argparse then prints ``argument --flag: expected …, got …`` under the usage and exits 2.
    """
    noun = "an integer" if kind is int else "a number"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        too_small = value <= minimum if strict else value < minimum
        if too_small or value != value or value == float("inf"):  # NaN compares false: refuse it, and inf
            raise argparse.ArgumentTypeError(
                f"expected {noun} {'>' if strict else '>='} {minimum:g}, got {text}"
            )
        return value

    parse.__name__ = kind.__name__  # argparse names the type in some messages
    return parse


POSITIVE_INT = at_least(1, int)
"""1, 2, …: counts of steps, workers, tokens."""

POSITIVE_SECONDS = at_least(0, float, strict=True)
"""A duration that must leave time for something: > 0 s."""

SECONDS = at_least(0, float)
"""A duration or margin that may be 0 s."""
