"""Pre-registered paired tests of one arm against a control, from a ``psgrpo compare`` curves.csv.

A test fixed before its runs finish reads only the figures it names, and only once every seed it
names is in: with a seed missing this script prints which, and no number (exit status 3), so an
interim look cannot happen by accident. Two tests, each a paired difference over seeds with a
Student's t interval at ``--level`` (Bonferroni: 0.975 for two tests at 95 % family-wise):

* ``final``: treatment at ``--final_step`` minus control at ``--final_step``;
* ``early``: treatment at ``--early_step`` minus control at ``--final_step`` (the convergence form:
  does the treatment reach the control's final accuracy in ``early/final`` of the steps?).

A test is confirmed when its interval lies entirely above 0. With ``--equivalence_margin M`` each test
also says whether the arms end **level**: its interval lies entirely within [−M, +M] (an equivalence
test, fixed in advance like the rest; M in the column's units, e.g. 0.02 for 2 accuracy points). It reads
the same ``--level`` interval, which is stricter than the two one-sided tests' usual 1 − 2α interval.
An interval at the margin to within 1e-9 counts as inside it (0.352 − 0.332 is not quite 0.02 in floats).

With ``--verdict`` a last column gives the four verdicts every PREREGISTRATION.md fixes: **better** (the
interval lies above 0), **level** (within ±M; only with ``--equivalence_margin``), **worse** (below 0),
otherwise **not shown either way**; level can come with better or worse (``better, level``). It is a flag
so that the tables kept in experiments/runs/*/preregistered.md, printed without it, still reproduce.

``curves.csv`` must hold one row per (arm, seed, step), and ``--seeds`` at least two seeds (a t interval
needs two); otherwise the script stops with a usage error (exit status 2).

Usage (the second confirmation of docs/learning.md; curves.csv from ``psgrpo compare ... --report_only
true`` over both arms and all ten seeds)::

    python experiments/preregistered.py outputs/compare-hard-ref/curves.csv --treatment ps-ref-bin \
        --control grpo --seeds 10 11 12 13 14 15 16 17 18 19 --final_step 60 --early_step 30 --level 0.975
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psgrpo.compare.intervals import Interval, mean_interval
from psgrpo.compare.report import read_curves_csv

EXIT_INCOMPLETE = 3
MARGIN_SLACK = 1e-9
"""An interval end this close to ±margin counts as within it (as ``steps_to_reach`` allows for float noise)."""


@dataclass(frozen=True)
class PairedTest:
    """One pre-registered test: ``treatment@treatment_step − control@control_step`` paired by seed."""

    name: str
    treatment_step: int
    control_step: int


@dataclass(frozen=True)
class TestResult:
    test: PairedTest
    differences: dict[int, float]  # seed → difference in ``column``
    interval: Interval

    @property
    def confirmed(self) -> bool:
        return self.interval.n >= 2 and self.interval.low > 0

    @property
    def worse(self) -> bool:
        return self.interval.n >= 2 and self.interval.high < 0

    def level_within(self, margin: float) -> bool:
        """The interval lies inside [−margin, +margin] (to within :data:`MARGIN_SLACK`, for float noise):
        the arms are equivalent up to ``margin``."""
        return (
            self.interval.n >= 2
            and -margin - MARGIN_SLACK <= self.interval.low
            and self.interval.high <= margin + MARGIN_SLACK
        )

    def verdict(self, margin: float | None = None) -> str:
        """``better`` (interval above 0), ``worse`` (below 0), ``level`` (within ±``margin``, given one), the
        level verdict joined to the other (``better, level``), else ``not shown either way``."""
        verdicts = ["better"] if self.confirmed else ["worse"] if self.worse else []
        if margin is not None and self.level_within(margin):
            verdicts.append("level")
        return ", ".join(verdicts) or "not shown either way"


def values_at(rows: Sequence[dict[str, Any]], method: str, step: int, column: str) -> dict[int, float]:
    """``seed → column`` of ``method`` at evaluation ``step`` (rows without the column are skipped)."""
    return {
        int(r["seed"]): float(r[column])
        for r in rows
        if r["method"] == method and int(r["step"]) == step and r.get(column) is not None
    }


def missing_points(
    rows: Sequence[dict[str, Any]],
    arms: dict[str, Sequence[int]],
    seeds: Sequence[int],
    column: str,
) -> list[str]:
    """``'ARM seed S step N'`` for every (arm, seed, step) the tests need and ``rows`` lack."""
    return [
        f"{method} seed {seed} step {step}"
        for method, steps in arms.items()
        for step in sorted(set(steps))
        for seed in seeds
        if seed not in values_at(rows, method, step, column)
    ]


def run_tests(
    rows: Sequence[dict[str, Any]],
    treatment: str,
    control: str,
    seeds: Sequence[int],
    tests: Sequence[PairedTest],
    level: float,
    column: str = "accuracy",
) -> list[TestResult]:
    """Every test over exactly ``seeds``. Raises ValueError naming each missing point (and computes nothing)."""
    needed = {treatment: [t.treatment_step for t in tests], control: [t.control_step for t in tests]}
    missing = missing_points(rows, needed, seeds, column)
    if missing:
        raise ValueError(f"{len(missing)} pre-registered point(s) not in yet: {', '.join(missing)}")
    results = []
    for test in tests:
        mine = values_at(rows, treatment, test.treatment_step, column)
        theirs = values_at(rows, control, test.control_step, column)
        differences = {seed: mine[seed] - theirs[seed] for seed in seeds}
        results.append(TestResult(test, differences, mean_interval(list(differences.values()), level=level)))
    return results


def report(
    results: Sequence[TestResult],
    treatment: str,
    control: str,
    level: float,
    equivalence_margin: float | None = None,
    verdict: bool = False,
) -> str:
    """A markdown table: per test, the mean difference, its interval, each seed's difference and the verdict
    (and, given ``equivalence_margin``, whether the interval lies within ±margin; with ``verdict``, a last
    column with :meth:`TestResult.verdict`)."""
    header = f"| test | {treatment} step | {control} step | seeds | paired Δ [{level:.1%} t interval] | per seed | confirmed |"
    rule = "|---|---|---|---|---|---|---|"
    if equivalence_margin is not None:
        header += f" level (within ±{equivalence_margin:.3f}) |"
        rule += "---|"
    if verdict:
        header += " verdict |"
        rule += "---|"
    lines = [header, rule]
    for r in results:
        per_seed = ", ".join(f"{100 * d:+.1f}" for d in r.differences.values())
        line = (
            f"| {r.test.name} | {r.test.treatment_step} | {r.test.control_step} | {r.interval.n} | "
            f"{r.interval.mean:+.3f} [{r.interval.low:+.3f}, {r.interval.high:+.3f}] | {per_seed} | "
            f"{'**yes**' if r.confirmed else 'no'} |"
        )
        if equivalence_margin is not None:
            line += f" {'**yes**' if r.level_within(equivalence_margin) else 'no'} |"
        if verdict:
            line += f" {r.verdict(equivalence_margin)} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("curves", type=Path, help="curves.csv written by psgrpo compare")
    parser.add_argument("--treatment", required=True, help="the arm under test (a method column value)")
    parser.add_argument("--control", default="grpo", help="the arm it is paired against (default grpo)")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="every pre-registered seed")
    parser.add_argument("--final_step", type=int, required=True, help="the budget's last evaluation step")
    parser.add_argument(
        "--early_step", type=int, default=None, help="also test treatment at this step against control final"
    )
    parser.add_argument("--level", type=float, default=0.95, help="t interval level per test (default 0.95)")
    parser.add_argument(
        "--column", default="accuracy", help="the curves.csv column compared (default accuracy)"
    )
    parser.add_argument(
        "--equivalence_margin",
        type=float,
        default=None,
        help="also say whether each interval lies within ±this (column units, e.g. 0.02): the arms end level",
    )
    parser.add_argument(
        "--verdict",
        action="store_true",
        help="add a verdict column: better, worse, level (with --equivalence_margin) or not shown either way",
    )
    args = parser.parse_args(argv)
    if args.equivalence_margin is not None and not 0 < args.equivalence_margin < math.inf:
        parser.error(
            "--equivalence_margin must be a finite number > 0 (column units, e.g. 0.02), "
            f"got {args.equivalence_margin}"
        )
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds names a seed twice: {args.seeds}")
    if not 0 < args.level < 1:  # else "incomplete" (exit 3) would hide a typo such as 97.5
        parser.error(
            f"--level is a probability strictly between 0 and 1 (e.g. 0.95, 0.975), got {args.level}"
        )
    if not args.curves.is_file():
        parser.error(f"{args.curves}: no such file (run psgrpo compare ... --report_only true first)")
    tests = [PairedTest("final", args.final_step, args.final_step)]
    if args.early_step is not None:
        tests.append(PairedTest("early", args.early_step, args.final_step))
    try:
        rows = read_curves_csv(args.curves)  # also refuses an (arm, seed, step) given twice
    except ValueError as err:
        parser.error(str(err))
    if (
        len(args.seeds) < 2
    ):  # after the file is read, so a malformed file is named first (a t interval needs 2)
        parser.error(f"--seeds names {len(args.seeds)} seed: a paired t interval needs at least 2")
    try:
        results = run_tests(rows, args.treatment, args.control, args.seeds, tests, args.level, args.column)
    except ValueError as err:
        print(f"preregistered: {err}", file=sys.stderr)
        return EXIT_INCOMPLETE
    print(report(results, args.treatment, args.control, args.level, args.equivalence_margin, args.verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
