"""GRPO-VPS's α sweep beside the paper's: held-out accuracy against α, mean and 95% CI over seeds.

    python benchmarks/alpha_sweep.py --output_dir outputs/alpha-sweep [--alphas 0 0.4 0.8 1.0 1.2 1.4 1.6 2.0]
        [--seeds 0 1 2] [any psgrpo compare / train flag, e.g. --config configs/arith_hard.yaml --max_steps 100]

One ``psgrpo compare`` with an arm per α (``vps-a<α>=--method vps --vps_alpha <α>``; α = 0 is
outcome GRPO's advantage through vps's code path) plus a ``grpo`` arm, so ``compare.md`` holds each
α's paired difference against grpo. Finished runs are skipped, so the sweep can be run in pieces.
Then ``alpha_sweep.png`` (ours, left axis; the paper's MATH accuracies, right axis) and
``alpha_sweep.md`` (the table) in ``--output_dir``. ``--plot_only`` redraws from ``curves.csv``.

GRPO-VPS (arXiv 2604.20659) reports on MATH, α = 0 / 0.8 / 1.0 / 1.2 / 1.4 / 1.6 → 68.8 / 71.7 /
72.0 / 72.2 / 71.9 / 69.7 (%): an inverted U peaking at 1.2 (:data:`PAPER_MATH`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _sweeps import sweep_curves

from psgrpo.commands.compare import compare
from psgrpo.commands.compare_plot import load_pyplot, save_figure
from psgrpo.commands.compare_report import Interval, final_values, mean_interval

ALPHAS = (0.0, 0.4, 0.8, 1.0, 1.2, 1.4, 1.6, 2.0)
PAPER_MATH = {0.0: 68.8, 0.8: 71.7, 1.0: 72.0, 1.2: 72.2, 1.4: 71.9, 1.6: 69.7}
"""GRPO-VPS's MATH accuracy (%) by α, as the paper reports it."""
ARM = re.compile(r"vps-a(?P<alpha>\d+(?:\.\d+)?)")


def arm_label(alpha: float) -> str:
    """``vps-a1.2`` for α = 1.2 (the compare arm, the row and the run directories)."""
    return f"vps-a{alpha:g}"


def sweep_arms(alphas: Sequence[float]) -> list[str]:
    """``--arms`` entries: grpo, then one vps arm per α."""
    return ["grpo=--method grpo", *(f"{arm_label(a)}=--method vps --vps_alpha {a:g}" for a in alphas)]


def accuracy_by_alpha(rows: Sequence[dict[str, Any]]) -> dict[float, Interval]:
    """α → mean and 95% CI over seeds of the final held-out accuracy, from compare's curve rows."""
    result = {}
    for label in dict.fromkeys(row["method"] for row in rows):
        match = ARM.fullmatch(label)
        if match and (values := final_values(rows, label, "accuracy")):
            result[float(match["alpha"])] = mean_interval(values)
    return dict(sorted(result.items()))


def markdown_table(ours: dict[float, Interval], grpo: Interval | None) -> str:
    """One row per α: ours (mean ± 95% CI, seeds) and the paper's MATH figure where it has one."""
    lines = ["| α | final held-out accuracy (mean ± 95% CI) | seeds | paper, MATH (%) |", "|---|---|---|---|"]
    for alpha, interval in ours.items():
        paper = PAPER_MATH.get(alpha)
        lines.append(f"| {alpha:g} | {interval} | {interval.n} | {'—' if paper is None else paper} |")
    if grpo is not None:
        lines.append(f"| grpo | {grpo} | {grpo.n} | — |")
    return "\n".join(lines) + "\n"


def plot(ours: dict[float, Interval], grpo: Interval | None, path: Path) -> None:
    """Ours with 95% CI error bars (left axis) and the paper's MATH curve (right axis)."""
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    alphas = list(ours)
    means = [ours[a].mean for a in alphas]
    errors = [0.0 if ours[a].n < 2 else ours[a].half_width for a in alphas]
    ax.errorbar(alphas, means, yerr=errors, marker="o", capsize=3, color="C2", label="psgrpo vps (95% CI)")
    if grpo is not None:
        ax.axhline(grpo.mean, color="C0", linestyle="--", label=f"psgrpo grpo ({grpo.n} seeds)")
    ax.set_xlabel("α (weight of ΔC)")
    ax.set_ylabel("held-out accuracy (ours)")
    paper = ax.twinx()
    paper.plot(
        list(PAPER_MATH), list(PAPER_MATH.values()), marker="s", color="grey", label="GRPO-VPS paper, MATH"
    )
    paper.set_ylabel("paper: MATH accuracy (%)")
    handles = ax.get_legend_handles_labels()
    extra = paper.get_legend_handles_labels()
    ax.legend(handles[0] + extra[0], handles[1] + extra[1], loc="lower center")
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def report(output_dir: Path) -> str:
    """Write alpha_sweep.md and alpha_sweep.png from ``output_dir/curves.csv``; return the table."""
    rows, grpo = sweep_curves(output_dir)
    ours = accuracy_by_alpha(rows)
    if not ours:
        raise ValueError(f"{output_dir / 'curves.csv'} has no vps-a<α> rows: is this an alpha_sweep output?")
    table = markdown_table(ours, grpo)
    (output_dir / "alpha_sweep.md").write_text("# GRPO-VPS α sweep\n\n" + table)
    plot(ours, grpo, output_dir / "alpha_sweep.png")
    return table


def main(argv: Sequence[str]) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--alphas", type=float, nargs="+", default=list(ALPHAS))
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--plot_only", action="store_true", help="redraw from OUTPUT_DIR/curves.csv")
    args, rest = parser.parse_known_args(list(argv))
    if not args.plot_only:
        compare([*rest, "--output_dir", args.output_dir, "--arms", *sweep_arms(args.alphas)])
    table = report(Path(args.output_dir))
    print(table)
    return table


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except ValueError as err:  # bad input: the message says what to fix, a traceback would bury it
        sys.exit(f"error: {err}")
