"""The outputs of ``psgrpo compare``: held-out curves → CSV rows → per-method table, Markdown and plot.

Everything here except :func:`plot_curves` is a pure function over plain rows, one row per
(method, seed, evaluation step)::

    {"method": "vps", "seed": 0, "step": 20, "accuracy": 0.55, "mean_tokens": 77.1,
     "wall_seconds": 41.0, "train_seconds": 38.2, "completion_tokens": 98304.0, ...}

Conventions (stated again in the report): spread over seeds is the sample standard deviation
(n − 1; 0 with one seed) in the table and the min–max band in the plot; a method "reaches"
a target accuracy at the first evaluation step where its seed-mean accuracy is ≥ the target.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
METHOD_COLOURS = {"grpo": "C0", "ps": "C1", "vps": "C2"}  # the same colour for a method in every plot


def heldout_points(records: Iterable[dict[str, Any]]) -> list[dict[str, float]]:
    """``metrics.jsonl`` records → one ``{"step": s, <metric>: value, ...}`` per held-out evaluation.

    Keeps records with ``heldout/accuracy``, strips the ``heldout/`` prefix, sorts by step; a step
    logged twice keeps its last record.
    """
    by_step: dict[int, dict[str, float]] = {}
    for record in records:
        if PREFIX + "accuracy" not in record:
            continue
        point = {key.removeprefix(PREFIX): value for key, value in record.items() if key.startswith(PREFIX)}
        by_step[int(record["step"])] = {"step": int(record["step"]), **point}
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
    """Inverse of :func:`write_curves_csv`: ``seed`` and ``step`` as int, metrics as float, empty → absent."""
    rows = []
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
            rows.append(row)
    return rows


@dataclass(frozen=True)
class CurvePoint:
    """One evaluation step of a method, aggregated over seeds (``n`` = seeds with a value there)."""

    step: int
    mean: float
    low: float
    high: float
    n: int


def seed_curve(rows: Iterable[dict[str, Any]], method: str, column: str) -> list[CurvePoint]:
    """Mean, min and max of ``column`` over the seeds of ``method`` at each step (sorted by step)."""
    by_step: dict[int, list[float]] = {}
    for row in rows:
        if row["method"] == method and row.get(column) is not None:
            by_step.setdefault(int(row["step"]), []).append(float(row[column]))
    return [
        CurvePoint(step, statistics.fmean(values), min(values), max(values), len(values))
        for step, values in sorted(by_step.items())
    ]


def steps_to_reach(curve: Sequence[CurvePoint], target: float) -> int | None:
    """First step whose mean is ≥ ``target`` (1e-9 slack for float noise); ``None`` if never."""
    return next((point.step for point in curve if point.mean >= target - 1e-9), None)


def final_values(rows: Iterable[dict[str, Any]], method: str, column: str) -> list[float]:
    """``column`` at each seed's last evaluation step, in seed order (seeds lacking it are left out)."""
    last: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row["method"] == method and (row["seed"] not in last or row["step"] > last[row["seed"]]["step"]):
            last[row["seed"]] = row
    return [float(last[s][column]) for s in sorted(last) if last[s].get(column) is not None]


@dataclass(frozen=True)
class MethodSummary:
    """One row of the comparison table (means are over seeds; ``None`` = not measured)."""

    method: str
    seeds: int
    start_accuracy: float | None
    final_accuracy: float
    final_accuracy_std: float
    steps_to_reference: int | None
    final_mean_tokens: float | None
    completion_tokens: float | None
    train_seconds: float | None


def _mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def reference_accuracy(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> float | None:
    """Seed-mean final accuracy of the ``reference`` method, or ``None`` when it was not run."""
    return _mean_or_none(final_values(rows, reference, "accuracy"))


def summarize(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[MethodSummary]:
    """One :class:`MethodSummary` per method, in order of first appearance in ``rows``.

    ``steps_to_reference`` is the first step where the method's seed-mean accuracy reaches the
    reference method's final seed-mean accuracy (``None``: not reached, or no reference run).
    """
    target = reference_accuracy(rows, reference)
    summaries = []
    for method in dict.fromkeys(row["method"] for row in rows):
        final = final_values(rows, method, "accuracy")
        curve = seed_curve(rows, method, "accuracy")
        summaries.append(
            MethodSummary(
                method=method,
                seeds=len(final),
                start_accuracy=curve[0].mean if curve and curve[0].step == 0 else None,
                final_accuracy=statistics.fmean(final),
                final_accuracy_std=statistics.stdev(final) if len(final) > 1 else 0.0,
                steps_to_reference=None if target is None else steps_to_reach(curve, target),
                final_mean_tokens=_mean_or_none(final_values(rows, method, "mean_tokens")),
                completion_tokens=_mean_or_none(final_values(rows, method, "completion_tokens")),
                train_seconds=_mean_or_none(final_values(rows, method, "train_seconds")),
            )
        )
    return summaries


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown_report(
    summaries: Sequence[MethodSummary],
    command: str,
    reference_target: float | None,
    reference: str = REFERENCE_METHOD,
) -> str:
    """``compare.md``: the table (one row per method), how to read it, and the command that made it."""
    header = ["method", "seeds", "held-out acc at step 0", "final acc (mean ± std)"]
    if reference_target is not None:
        header.append(f"steps to reach {reference} final ({reference_target:.3f})")
    header += ["final mean tokens", "completion tokens / run", "train wall / run (s)"]
    lines = ["# psgrpo compare", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in summaries:
        cells = [
            s.method,
            str(s.seeds),
            _fmt(s.start_accuracy, ".3f"),
            f"{s.final_accuracy:.3f} ± {s.final_accuracy_std:.3f}",
        ]
        if reference_target is not None:
            cells.append("not reached" if s.steps_to_reference is None else str(s.steps_to_reference))
        cells += [
            _fmt(s.final_mean_tokens, ".1f"),
            _fmt(s.completion_tokens, ".0f"),
            _fmt(s.train_seconds, ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Held-out accuracy is greedy, exact-match, on the same held-out rows for every run. ± is the sample "
        "standard deviation over seeds (n − 1). "
        + (
            f"'Steps to reach' is the first evaluation step where the method's seed-mean accuracy is ≥ the "
            f"seed-mean final accuracy of outcome GRPO (`{reference}`). "
            if reference_target is not None
            else ""
        )
        + "Completion tokens / run: training completion tokens generated per run (mean over seeds). Train "
        "wall / run: training wall-clock seconds per run, held-out evaluations excluded (mean over seeds). "
        "Curves: `curves.csv` (raw numbers), `compare.png` (seed mean, shaded min–max over seeds).",
        "",
        "Command:",
        "",
        "```bash",
        command,
        "```",
        "",
    ]
    return "\n".join(lines)


def load_pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend.

    Raises:
        ImportError with the install command when matplotlib (the ``plot`` extra) is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "psgrpo compare draws compare.png with matplotlib, which is not installed: "
            "pip install 'psgrpo[plot]' (or pip install matplotlib)"
        ) from err
    return plt


def plot_curves(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """``compare.png``: held-out accuracy and mean completion tokens vs step, seed mean ± min–max band."""
    plt = load_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    panels = [
        ("accuracy", "held-out accuracy (greedy)"),
        ("mean_tokens", "mean completion tokens (held-out)"),
    ]
    for i, method in enumerate(dict.fromkeys(row["method"] for row in rows)):
        colour = METHOD_COLOURS.get(method, f"C{3 + i}")
        for ax, (column, _) in zip(axes, panels, strict=True):
            curve = seed_curve(rows, method, column)
            steps = [p.step for p in curve]
            n_seeds = max((p.n for p in curve), default=0)
            ax.plot(
                steps, [p.mean for p in curve], color=colour, marker="o", label=f"{method} ({n_seeds} seeds)"
            )
            ax.fill_between(steps, [p.low for p in curve], [p.high for p in curve], color=colour, alpha=0.2)
    for ax, (_, label) in zip(axes, panels, strict=True):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(title="line: seed mean; band: min–max")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
