"""The outputs of ``psgrpo compare``: held-out curves → CSV rows → per-method tables and Markdown.

Everything here is a pure function over plain rows, one row per (method, seed, evaluation step)
(the figure is :mod:`psgrpo.compare.plot`, the error, length and process-signal tables
:mod:`psgrpo.compare.tables`)::

    {"method": "vps", "seed": 0, "step": 20, "accuracy": 0.55, "mean_tokens": 77.1,
     "wall_seconds": 41.0, "train_seconds": 38.2, "completion_tokens": 98304.0, ...}

Conventions (stated again in the report): a method's accuracy is its mean over seeds with a 95%
confidence interval from Student's t over seeds (n − 1 degrees of freedom); a method is compared
with outcome GRPO *per seed* (the same seed sets the same data order), so the paired difference
and its t interval are reported too; a method "reaches" a target accuracy at the first evaluation
step where its seed-mean accuracy is ≥ the target. Plots shade the 95% interval over seeds.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psgrpo.compare.intervals import Interval, mean_interval

PREFIX = "heldout/"
# Fixed leading columns of curves.csv; any further held-out metric follows in sorted order.
CURVE_COLUMNS = (
    "method",
    "seed",
    "step",
    "accuracy",
    "mean_tokens",
    "wall_seconds",
    "train_seconds",
    "completion_tokens",
)
REFERENCE_METHOD = "grpo"


TRAINING_WINDOW = {
    "completions/mean_length": "train/mean_tokens",
    "diag/unnecessary_step_frac": "train/unnecessary_step_frac",
    # the process signal's quality and weight (README, "Signal quality"); a run logs ps/ or vps/, not both
    "diag/process_auc": "train/process_auc",
    "ps/process_share": "train/process_share",
    "vps/process_share": "train/process_share",
    "diag/all_equal_correct_frac": "train/all_equal_correct_frac",
}
"""Training-log metric → the curve column holding its mean over the steps since the previous evaluation."""


def heldout_points(records: Iterable[dict[str, Any]]) -> list[dict[str, float]]:
    """``metrics.jsonl`` records → one ``{"step": s, <metric>: value, ...}`` per held-out evaluation.

    Keeps records with ``heldout/accuracy``, strips the ``heldout/`` prefix, sorts by step; a step
    logged twice keeps its last record. Each point also gets the mean of every :data:`TRAINING_WINDOW`
    metric over the training records logged after the previous evaluation, up to its own step
    (sampled completions, not greedy ones; absent at step 0 and when the run did not log it).
    """
    records = list(records)
    by_step: dict[int, dict[str, float]] = {}
    for record in records:
        if PREFIX + "accuracy" not in record:
            continue
        point = {key.removeprefix(PREFIX): value for key, value in record.items() if key.startswith(PREFIX)}
        by_step[int(record["step"])] = {"step": int(record["step"]), **point}
    previous = -1
    for step in sorted(by_step):
        for metric, column in TRAINING_WINDOW.items():
            window = [
                r[metric] for r in records if previous < int(r["step"]) <= step and r.get(metric) is not None
            ]
            if window:
                by_step[step][column] = statistics.fmean(window)
        previous = step
    return [by_step[step] for step in sorted(by_step)]


def curve_rows(method: str, seed: int, points: Iterable[dict[str, float]]) -> list[dict[str, Any]]:
    """Label one run's held-out points with its method and seed (the rows of ``curves.csv``)."""
    return [{"method": method, "seed": seed, **point} for point in points]


def curve_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    """CSV header: :data:`CURVE_COLUMNS`, then every other key found in ``rows``, sorted."""
    extra = sorted({key for row in rows for key in row} - set(CURVE_COLUMNS))
    return [*CURVE_COLUMNS, *extra]


def write_curves_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` to ``path``; a metric a row lacks is an empty cell."""
    with Path(path).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=curve_columns(rows), restval="")
        writer.writeheader()
        writer.writerows(rows)


def read_curves_csv(path: Path) -> list[dict[str, Any]]:
    """Inverse of :func:`write_curves_csv`: ``seed`` and ``step`` as int, metrics as float, empty → absent.

    Raises:
        ValueError naming the line of a malformed row, or the arm, seed and step of a point given twice
        (which of two rows is "the" evaluation would otherwise be a silent choice).
    """
    rows = []
    seen: dict[tuple[str, int, int], int] = {}
    with Path(path).open(newline="") as f:
        for line, raw in enumerate(csv.DictReader(f), start=2):
            try:
                row: dict[str, Any] = {
                    "method": raw["method"],
                    "seed": int(raw["seed"]),
                    "step": int(raw["step"]),
                }
                row.update({k: float(v) for k, v in raw.items() if k not in row and v not in ("", None)})
            except (KeyError, ValueError) as err:
                raise ValueError(
                    f"{path} line {line}: expected method, int seed/step, numbers: {err}"
                ) from None
            point = (row["method"], row["seed"], row["step"])
            if point in seen:
                raise ValueError(
                    f"{path} line {line}: arm {point[0]!r} seed {point[1]} step {point[2]} repeats line "
                    f"{seen[point]}; one row per (arm, seed, step)"
                )
            seen[point] = line
            rows.append(row)
    return rows


def paired_differences(
    rows: Sequence[dict[str, Any]],
    method: str,
    reference: str = REFERENCE_METHOD,
    column: str = "accuracy",
    relative: bool = False,
) -> dict[int, float]:
    """``seed → final(method) − final(reference)`` of ``column`` over the seeds both ran; with
    ``relative``, ``final(method) / final(reference) − 1`` instead (seeds where the reference is 0 left out).

    "Final" is, per seed, the last step *both* arms evaluated, so the two values are always from the
    same step: an arm cut short is paired with the reference where it stopped, not with the reference's
    later evaluation (:func:`uneven_final_steps` names such seeds). Seeds without a common step, or
    lacking ``column`` at it, are left out.
    """
    mine = _by_seed_and_step(rows, method)
    theirs = _by_seed_and_step(rows, reference)
    differences = {}
    for seed in sorted(set(mine) & set(theirs)):
        common = set(mine[seed]) & set(theirs[seed])
        if not common:
            continue
        step = max(common)
        a, b = mine[seed][step].get(column), theirs[seed][step].get(column)
        if a is None or b is None:
            continue
        if relative:
            if float(b) != 0:
                differences[seed] = float(a) / float(b) - 1
        else:
            differences[seed] = float(a) - float(b)
    return differences


def _by_seed_and_step(rows: Iterable[dict[str, Any]], method: str) -> dict[int, dict[int, dict[str, Any]]]:
    """``seed → step → row`` of ``method`` (the first row of a repeated point: read_curves_csv refuses those)."""
    points: dict[int, dict[int, dict[str, Any]]] = {}
    for row in rows:
        if row["method"] == method:
            points.setdefault(row["seed"], {}).setdefault(row["step"], row)
    return points


def _final_by_seed(rows: Iterable[dict[str, Any]], method: str, column: str) -> dict[int, float]:
    last: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row["method"] == method and (row["seed"] not in last or row["step"] > last[row["seed"]]["step"]):
            last[row["seed"]] = row
    return {seed: float(row[column]) for seed, row in last.items() if row.get(column) is not None}


def uneven_final_steps(rows: Iterable[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """One line per arm whose seeds' last evaluations fall at different steps (a run cut short, a missing
    record): its "final" accuracy and paired Δ then mix steps. One line, too, per arm whose last evaluation
    differs from ``reference``'s for some seed, naming each such seed and the two steps: its paired Δ takes
    that seed at the last step both evaluated (a seed where ``reference`` itself stopped before its other
    seeds is left to ``reference``'s own line). ``[]`` when every run ends at the same step."""
    rows = list(rows)
    last: dict[str, dict[int, int]] = {}
    for row in rows:
        seeds = last.setdefault(row["method"], {})
        seeds[row["seed"]] = max(seeds.get(row["seed"], row["step"]), row["step"])
    lines = []
    for method, by_seed in last.items():
        steps = sorted(set(by_seed.values()))
        if len(steps) > 1:
            ends = "; ".join(
                f"step {step}: seed{'s' if n > 1 else ''} {', '.join(map(str, ss))}"
                for step in steps
                for ss in [sorted(s for s, e in by_seed.items() if e == step)]
                for n in [len(ss)]
            )
            lines.append(
                f"{method}: its seeds' last evaluations fall at different steps ({ends}), so its final accuracy "
                "and paired Δ mix steps; the step-by-step table pairs at each step"
            )
    ends_of_reference = last.get(reference, {})
    reference_end = max(ends_of_reference.values(), default=None)
    for method, by_seed in last.items():
        if method == reference:
            continue
        apart = [  # a reference seed that itself stopped early is named by the reference's own line above
            f"seed {seed}: step {step} against {ends_of_reference[seed]}"
            for seed, step in sorted(by_seed.items())
            if seed in ends_of_reference
            and step != ends_of_reference[seed]
            and ends_of_reference[seed] == reference_end
        ]
        if apart:
            lines.append(
                f"{method}: for some seeds its last evaluation is not {reference}'s ({'; '.join(apart)}), so "
                f"its paired Δ takes each such seed at the last step both evaluated"
            )
    return lines


@dataclass(frozen=True)
class CurvePoint:
    """One evaluation step of a method, aggregated over seeds (``n`` = seeds with a value there).

    ``low``/``high``: the 95% confidence interval of the mean over seeds (min–max with one seed).
    ``x``: the mean over seeds of the x-axis column (the step itself, or e.g. completion tokens).
    """

    step: int
    mean: float
    low: float
    high: float
    n: int
    x: float = math.nan


def seed_curve(rows: Iterable[dict[str, Any]], method: str, column: str, x: str = "step") -> list[CurvePoint]:
    """Seed mean and 95% interval of ``column`` for ``method`` at each step (sorted), with the mean of ``x``."""
    by_step: dict[int, list[tuple[float, float]]] = {}
    for row in rows:
        if row["method"] == method and row.get(column) is not None and row.get(x) is not None:
            by_step.setdefault(int(row["step"]), []).append((float(row[column]), float(row[x])))
    points = []
    for step, pairs in sorted(by_step.items()):
        values = [v for v, _ in pairs]
        interval = mean_interval(values)
        low, high = (min(values), max(values)) if interval.n < 2 else (interval.low, interval.high)
        points.append(
            CurvePoint(step, interval.mean, low, high, len(values), statistics.fmean(w for _, w in pairs))
        )
    return points


def steps_to_reach(curve: Sequence[CurvePoint], target: float) -> int | None:
    """First step whose mean is ≥ ``target`` (1e-9 slack for float noise); ``None`` if never."""
    return next((point.step for point in curve if point.mean >= target - 1e-9), None)


def final_values(rows: Iterable[dict[str, Any]], method: str, column: str) -> list[float]:
    """``column`` at each seed's last evaluation step, in seed order (seeds lacking it are left out)."""
    finals = _final_by_seed(rows, method, column)
    return [finals[seed] for seed in sorted(finals)]


@dataclass(frozen=True)
class MethodSummary:
    """One row of the comparison table (means are over seeds; ``None`` = not measured).

    Attributes:
        final_accuracy: mean and 95% interval over seeds of the final held-out accuracy.
        paired_difference: per-seed accuracy minus the reference method's at the last step both
            evaluated, mean and 95% interval over the seeds both ran (``None`` for the reference itself
            or without it).
        steps_to_reference: first step whose seed-mean accuracy reaches the reference's final one.
        steps_ratio: ``steps_to_reference`` over the reference's own steps to its final accuracy.
    """

    method: str
    seeds: int
    start_accuracy: float | None
    final_accuracy: Interval
    paired_difference: Interval | None
    steps_to_reference: int | None
    steps_ratio: float | None
    final_mean_tokens: float | None
    completion_tokens: float | None
    train_seconds: float | None


def _mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def reference_accuracy(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> float | None:
    """Seed-mean final accuracy of the ``reference`` method, or ``None`` when it was not run."""
    return _mean_or_none(final_values(rows, reference, "accuracy"))


def summarize(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[MethodSummary]:
    """One :class:`MethodSummary` per method, in order of first appearance in ``rows``."""
    target = reference_accuracy(rows, reference)
    reference_steps = (
        None if target is None else steps_to_reach(seed_curve(rows, reference, "accuracy"), target)
    )
    summaries = []
    for method in dict.fromkeys(row["method"] for row in rows):
        curve = seed_curve(rows, method, "accuracy")
        differences = (
            list(paired_differences(rows, method, reference).values()) if method != reference else []
        )
        steps = None if target is None else steps_to_reach(curve, target)
        summaries.append(
            MethodSummary(
                method=method,
                seeds=len(final_values(rows, method, "accuracy")),
                start_accuracy=curve[0].mean if curve and curve[0].step == 0 else None,
                final_accuracy=mean_interval(final_values(rows, method, "accuracy")),
                paired_difference=mean_interval(differences) if differences else None,
                steps_to_reference=steps,
                steps_ratio=steps / reference_steps if steps is not None and reference_steps else None,
                final_mean_tokens=_mean_or_none(final_values(rows, method, "mean_tokens")),
                completion_tokens=_mean_or_none(final_values(rows, method, "completion_tokens")),
                train_seconds=_mean_or_none(final_values(rows, method, "train_seconds")),
            )
        )
    return summaries


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def difference_cell(difference: Interval | None, spec: str = ".3f", unit: str = "") -> str:
    if difference is None:
        return "—"
    text = f"{difference.mean:+{spec}}{unit}"
    if not math.isnan(difference.half_width):
        text += f" [{difference.low:+{spec}}, {difference.high:+{spec}}]"
    return text + (" *" if difference.excludes_zero() else "")


def markdown_report(
    summaries: Sequence[MethodSummary],
    command: str,
    reference_target: float | None,
    reference: str = REFERENCE_METHOD,
    heldout_problems: int | None = None,
    sections: Sequence[str] = (),
) -> str:
    """``compare.md``: the table (one row per method), how to read it, further ``sections`` (Markdown
    lines, e.g. :func:`error_table`'s) and the command that made it."""
    header = ["method", "seeds", "held-out acc at step 0", "final acc (mean ± 95% CI)"]
    if reference_target is not None:
        header += [
            f"paired Δ vs {reference} (95% CI)",
            f"steps to reach {reference} final ({reference_target:.3f})",
        ]
    header += ["final mean tokens", "completion tokens / run", "train wall / run (s)"]
    lines = ["# psgrpo compare", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in summaries:
        cells = [s.method, str(s.seeds), _fmt(s.start_accuracy, ".3f"), str(s.final_accuracy)]
        if reference_target is not None:
            reach = "not reached" if s.steps_to_reference is None else str(s.steps_to_reference)
            if s.steps_ratio is not None and s.method != reference:
                reach += f" ({s.steps_ratio:.2f}×)"
            cells += [difference_cell(s.paired_difference), reach]
        cells += [
            _fmt(s.final_mean_tokens, ".1f"),
            _fmt(s.completion_tokens, ".0f"),
            _fmt(s.train_seconds, ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    binomial = (
        f" One run's accuracy on {heldout_problems} problems has a binomial 95% half-width of at most "
        f"{1.96 * math.sqrt(0.25 / heldout_problems):.3f}."
        if heldout_problems
        else ""
    )
    lines += [
        "",
        "Held-out accuracy is greedy, exact-match, on the same held-out rows for every run."
        + binomial
        + " ± is "
        "the 95% confidence interval of the mean over seeds (Student's t, n − 1 degrees of freedom). "
        + (
            f"Paired Δ: each seed's accuracy minus outcome GRPO's (`{reference}`) with the same seed, at the last "
            "step both evaluated (the final one when both ran to the end), mean and 95% t interval over seeds; * "
            "marks an interval that excludes 0. 'Steps to reach': the first "
            f"evaluation step where the method's seed-mean accuracy is ≥ `{reference}`'s seed-mean final accuracy; "
            f"(×) is that step over the step where `{reference}` itself first reaches it. "
            if reference_target is not None
            else ""
        )
        + "Completion tokens / run: training completion tokens generated per run (mean over seeds). Train "
        "wall / run: training wall-clock seconds per run, held-out evaluations excluded (mean over seeds). "
        "Curves: `curves.csv` (raw numbers), `compare.png` (seed mean, shaded 95% interval over seeds; "
        "accuracy against steps, completion tokens and training seconds).",
        "",
        *sections,
        "Command:",
        "",
        "```bash",
        command,
        "```",
        "",
    ]
    return "\n".join(lines)


def familywise_table(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """Markdown lines: each arm's paired Δ in final accuracy against ``reference`` at 95% and at the
    Bonferroni level 1 − 0.05/k over the k arms with two or more paired seeds; empty when k < 2."""
    differences = {
        method: list(paired_differences(rows, method, reference).values())
        for method in dict.fromkeys(row["method"] for row in rows)
        if method != reference
    }
    differences = {method: d for method, d in differences.items() if len(d) >= 2}
    k = len(differences)
    if k < 2:
        return []
    level = 1 - 0.05 / k
    lines = [
        f"## Several arms against `{reference}`: family-wise intervals",
        "",
        f"| method | paired Δ, 95% CI | paired Δ, {100 * level:.2f}% CI (Bonferroni, {k} arms) |",
        "|---|---|---|",
    ]
    for method, d in differences.items():
        lines.append(
            f"| {method} | {difference_cell(mean_interval(d))} | {difference_cell(mean_interval(d, level))} |"
        )
    note = (
        f"With {k} arms compared against `{reference}`, some 95% interval excludes 0 by chance more often than "
        f"5% of the time. Each interval at level 1 − 0.05/{k} keeps that family-wise error at most 5%: claim a "
        "win from the last column when the arm was chosen after seeing results."
    )
    return [*lines, "", note, ""]
