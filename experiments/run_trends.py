"""Exploratory trends of a kept paired comparison: how the lead moves between two evaluation steps, and one
training metric per run over windows of steps.

A pre-registered test (``experiments/preregistered.py``) reads one step. What happened between steps is
exploratory and reported as such; this prints it from the kept folder itself, so the figures in a run's
README come from a command and not from a notebook:

* paired by seed, with a 95 % t interval: each arm's gain from ``--from_step`` to ``--to_step``, and the
  change of the treatment's lead (``(T − C)@to − (T − C)@from``), in points of accuracy;
* per run, the mean of a ``metrics.jsonl`` metric over each window of steps (``--windows 105-200 205-240``,
  inclusive), and its last logged value: where a run drifts (e.g. ``diag/unnecessary_step_frac``, logged
  with ``--diagnostics true``).

Usage::

    python experiments/run_trends.py experiments/runs/hard-240-confirm --treatment ps-ref-bin \\
        --from_step 120 --to_step 240 --metric diag/unnecessary_step_frac --windows 105-200 205-240

Without ``--treatment`` (and the steps) only the metric table is printed, for a folder of runs of one arm
(no ``curves.csv`` needed): ``--metric heldout/accuracy --windows 120-120 240-240`` reads each run's
held-out accuracy at steps 120 and 240.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from preregistered import values_at

from psgrpo.compare.intervals import Interval, mean_interval
from psgrpo.compare.report import read_curves_csv
from psgrpo.metrics_log import read_metrics


def lead_trends(
    rows: Sequence[dict], treatment: str, control: str, from_step: int, to_step: int
) -> dict[str, tuple[Interval, list[float]]]:
    """Each arm's gain and the lead's change from ``from_step`` to ``to_step``: name → (interval, per seed),
    in accuracy points, over the seeds both arms have at both steps (sorted)."""
    points = {
        (arm, step): values_at(rows, arm, step, "accuracy")
        for arm in (treatment, control)
        for step in (from_step, to_step)
    }
    seeds = sorted(set.intersection(*(set(p) for p in points.values())))
    if len(seeds) < 2:
        raise ValueError(
            f"fewer than 2 seeds have both {treatment!r} and {control!r} at steps {from_step} and {to_step}"
        )

    def gain(arm: str, seed: int) -> float:
        return 100 * (points[arm, to_step][seed] - points[arm, from_step][seed])

    series = {
        f"{control} gain": [gain(control, s) for s in seeds],
        f"{treatment} gain": [gain(treatment, s) for s in seeds],
        "lead change": [gain(treatment, s) - gain(control, s) for s in seeds],
    }
    return {name: (mean_interval(values), values) for name, values in series.items()}


def parse_window(text: str) -> tuple[int, int]:
    """``'105-200'`` → (105, 200), inclusive; argparse's type for ``--windows``."""
    try:
        first, last = (int(part) for part in text.split("-"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected FIRST-LAST steps, e.g. 105-200") from None
    if not 0 <= first <= last:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 <= FIRST <= LAST")
    return first, last


def metric_windows(
    metrics: Path, metric: str, windows: Sequence[tuple[int, int]]
) -> tuple[list[float | None], float | None]:
    """Mean of ``metric`` over each window's logged steps (None where none), and its last logged value."""
    logged = [
        (int(record["step"]), float(record[metric]))
        for record in read_metrics(metrics.parent)
        if metric in record and "step" in record
    ]
    means = []
    for first, last in windows:
        values = [v for step, v in logged if first <= step <= last]
        means.append(sum(values) / len(values) if values else None)
    return means, (logged[-1][1] if logged else None)


def report(
    folder: Path,
    treatment: str | None,
    control: str,
    from_step: int | None,
    to_step: int | None,
    metric: str | None,
    windows: Sequence[tuple[int, int]],
) -> str:
    """The markdown this script prints (see the module docstring); the lead table only with a treatment."""
    lines: list[str] = []
    if treatment is not None and from_step is not None and to_step is not None:
        rows = read_curves_csv(folder / "curves.csv")
        trends = lead_trends(rows, treatment, control, from_step, to_step)
        used = len(next(iter(trends.values()))[1])
        seen = sorted({row["seed"] for row in rows if row["method"] in (treatment, control)})
        if used < len(seen):  # the intersection the pairs need: say who is left out, never silently
            kept = set.intersection(
                *(
                    set(values_at(rows, arm, step, "accuracy"))
                    for arm in (treatment, control)
                    for step in (from_step, to_step)
                )
            )
            lines += [
                f"Left out (an arm lacks step {from_step} or {to_step}): seeds {', '.join(str(s) for s in seen if s not in kept)}.",
                "",
            ]
        lines += [
            f"| from step {from_step} to {to_step} (points) | mean [95 % t] | per seed |",
            "|---|---|---|",
        ]
        for name, (interval, values) in trends.items():
            lines.append(
                f"| {name} | {interval.mean:+.1f} [{interval.low:+.1f}, {interval.high:+.1f}] | "
                f"{', '.join(f'{v:+.1f}' for v in values)} |"
            )
        lines.append("")
    if metric:
        span = " | ".join(f"steps {a}-{b}" for a, b in windows)
        lines += [f"| run | `{metric}`: {span} | last |", "|---|" + "---|" * (len(windows) + 1)]
        for run in sorted((folder / "runs").glob("*/metrics.jsonl")):
            if not (run.parent / "report.json").is_file():  # still training, or cut short: not a result
                lines.append(f"| {run.parent.name} | unfinished (no report.json) |")
                continue
            means, last = metric_windows(run, metric, windows)
            cells = " | ".join("—" if m is None else f"{m:.3f}" for m in means)
            lines.append(f"| {run.parent.name} | {cells} | {'—' if last is None else f'{last:.3f}'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="a kept comparison: curves.csv and runs/*/metrics.jsonl")
    parser.add_argument(
        "--treatment",
        default=None,
        help="the arm whose lead is followed (default none: the metric table only)",
    )
    parser.add_argument("--control", default="grpo", help="the arm it is paired against (default grpo)")
    parser.add_argument("--from_step", type=int, default=None, help="the earlier evaluation step")
    parser.add_argument("--to_step", type=int, default=None, help="the later evaluation step")
    parser.add_argument("--metric", default=None, help="a metrics.jsonl key to show per run (default none)")
    parser.add_argument(
        "--windows", type=parse_window, nargs="+", default=[], help="inclusive step windows, e.g. 105-200"
    )
    args = parser.parse_args(argv)
    if args.treatment is None:
        if not args.metric:
            parser.error("without --treatment there is only the metric table: give --metric and --windows")
        if not any((args.folder / "runs").glob("*/metrics.jsonl")):
            parser.error(f"{args.folder}: no runs/*/metrics.jsonl")
    else:
        if args.from_step is None or args.to_step is None:
            parser.error("--treatment needs --from_step and --to_step")
        if not (args.folder / "curves.csv").is_file():
            parser.error(f"{args.folder}: no curves.csv (run psgrpo compare ... --report_only true first)")
        if args.from_step >= args.to_step:
            parser.error(f"--from_step {args.from_step} must come before --to_step {args.to_step}")
    if args.metric and not args.windows:
        parser.error("--metric needs --windows, e.g. --windows 105-200 205-240")
    try:
        text = report(
            args.folder, args.treatment, args.control, args.from_step, args.to_step, args.metric, args.windows
        )
    except ValueError as err:
        parser.error(str(err))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
