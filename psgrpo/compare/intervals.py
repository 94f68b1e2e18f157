"""Confidence intervals over seeds: Student's t quantiles, and a mean with its interval.

``psgrpo compare`` reports every mean over seeds with a t interval (n − 1 degrees of freedom),
usually at 95%. When several arms are compared with one baseline, the chance that *some* 95%
interval excludes 0 by luck grows with their number; :func:`t_quantile` gives the quantile at any
level, so the Bonferroni interval (level 1 − 0.05/k for k arms) is as easy to state. No SciPy:
the t distribution's CDF is the regularized incomplete beta function, evaluated by its continued
fraction (Numerical Recipes' ``betacf``), and the quantile is found by bisection.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)  # fmt: skip
"""Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom, as printed in tables (beyond them,
:func:`t_quantile` computes it: 2.021 at 40, not the normal's 1.96)."""


def _check_degrees(degrees_of_freedom: int) -> None:
    if degrees_of_freedom < 1:
        raise ValueError(
            f"a t interval needs at least 2 values (1 degree of freedom), got {degrees_of_freedom}"
        )


def t_quantile_95(degrees_of_freedom: int) -> float:
    """The 0.975 quantile of Student's t with ``degrees_of_freedom`` ≥ 1 (:data:`T_975`, then :func:`t_quantile`)."""
    _check_degrees(degrees_of_freedom)
    if degrees_of_freedom <= len(T_975):
        return T_975[degrees_of_freedom - 1]
    return t_quantile(0.95, degrees_of_freedom)


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(b, a, 1.0 - x) / b


def t_coverage(t: float, degrees_of_freedom: int) -> float:
    """P(|T| ≤ t) for Student's t with ``degrees_of_freedom``: the two-sided coverage of ±t."""
    return 1.0 - incomplete_beta(
        degrees_of_freedom / 2.0, 0.5, degrees_of_freedom / (degrees_of_freedom + t * t)
    )


def t_quantile(level: float, degrees_of_freedom: int) -> float:
    """The t such that ±t covers ``level`` (e.g. 0.95 → the 0.975 quantile) with ``degrees_of_freedom``."""
    _check_degrees(degrees_of_freedom)
    if not 0.0 < level < 1.0:
        raise ValueError(f"a confidence level is strictly between 0 and 1, got {level}")
    low, high = 0.0, 1.0
    while t_coverage(high, degrees_of_freedom) < level:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if t_coverage(middle, degrees_of_freedom) < level else (low, middle)
        if high - low < 1e-10 * high:
            break
    return 0.5 * (low + high)


@dataclass(frozen=True)
class Interval:
    """A mean with the half-width of its confidence interval over ``n`` values (NaN for n < 2)."""

    mean: float
    half_width: float
    n: int
    level: float = 0.95

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def excludes_zero(self) -> bool:
        """Whether the interval lies entirely above or below 0 (never, with fewer than 2 values)."""
        return self.n >= 2 and (self.low > 0 or self.high < 0)

    def __str__(self) -> str:
        if math.isnan(self.half_width):
            return f"{self.mean:.3f}"
        return f"{self.mean:.3f} ± {self.half_width:.3f}"


def mean_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean of ``values`` and the half-width t · s / √n of its ``level`` confidence interval
    (t from :data:`T_975` at 95%, else :func:`t_quantile`; n − 1 degrees of freedom)."""
    if not values:
        raise ValueError("a mean needs at least one value")
    if any(math.isnan(v) for v in values):  # statistics.stdev fails on NaN with an AttributeError
        raise ValueError(f"a mean interval needs numbers, got NaN among {list(values)}")
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return Interval(mean, math.nan, n, level)
    t = t_quantile_95(n - 1) if level == 0.95 else t_quantile(level, n - 1)
    return Interval(mean, t * statistics.stdev(values) / math.sqrt(n), n, level)
