"""GRPO-VPS's α sweep beside the paper's: held-out accuracy against α, mean and 95% CI over seeds.

    python experiments/alpha_sweep.py --output_dir outputs/alpha-sweep [--alphas 0 0.4 0.8 1.0 1.2 1.4 1.6 2.0]
        [--arm_flags '--vps_probe gold_suffix --vps_boundaries markers'] [--prefix vps]
        [--seeds 0 1 2] [any psgrpo compare / train flag, e.g. --config configs/arith_hard.yaml --max_steps 100]

One ``psgrpo compare`` with an arm per α (``vps-a<α>=--method vps ARM_FLAGS --vps_alpha <α>``; α = 0
is outcome GRPO's advantage through vps's code path) plus a ``grpo`` arm. Finished runs are
skipped, so the sweep can be run in pieces, and sweeps with other ``--arm_flags`` (under another
``--prefix``) can share one ``--output_dir`` and its grpo runs; ``--report_only true`` draws the
report from the finished runs alone. The report places every vps arm by the settings it trained
with (``_sweeps.py``), so a hand-named arm (``vps-gs=--method vps --vps_probe gold_suffix ...``, α
1.2 by default) joins its line. ``alpha_sweep.md``: per set of other flags, one row per arm (α,
final accuracy mean ± 95% CI, the paired difference against grpo, the paper's figure).
``alpha_sweep.png``: ours (left axis, one line per set of other flags) and the paper's MATH
accuracies (right axis). ``--plot_only`` redraws from ``curves.csv``.

GRPO-VPS (arXiv 2604.20659) reports on MATH, α = 0 / 0.8 / 1.0 / 1.2 / 1.4 / 1.6 → 68.8 / 71.7 /
72.0 / 72.2 / 71.9 / 69.7 (%): an inverted U peaking at 1.2 (:data:`PAPER_MATH`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _sweeps import (
    ArmResult,
    arm_results,
    difference_text,
    run_cli,
    sweep_main,
    sweep_parser,
    trained_arms,
    write_report,
)

from psgrpo.compare.intervals import Interval
from psgrpo.compare.plot import load_pyplot, save_figure
from psgrpo.compare.report import REFERENCE_METHOD

ALPHAS = (0.0, 0.4, 0.8, 1.0, 1.2, 1.4, 1.6, 2.0)
PAPER_MATH = {0.0: 68.8, 0.8: 71.7, 1.0: 72.0, 1.2: 72.2, 1.4: 71.9, 1.6: 69.7}
"""GRPO-VPS's MATH accuracy (%) by α, as the paper reports it."""
SWEPT = ("vps_alpha",)


def arm_label(alpha: float, prefix: str = "vps") -> str:
    """``vps-a1.2`` for α = 1.2 (the compare arm, the row and the run directories)."""
    return f"{prefix}-a{alpha:g}"


def sweep_arms(alphas: Sequence[float], arm_flags: str = "", prefix: str = "vps") -> list[str]:
    """``--arms`` entries: grpo, then one vps arm per α."""
    base = f"--method vps {arm_flags}".strip()
    arms = [f"{REFERENCE_METHOD}=--method {REFERENCE_METHOD}"]
    return arms + [f"{arm_label(a, prefix)}={base} --vps_alpha {a:g}" for a in alphas]


def alpha_results(rows: Sequence[dict[str, Any]], output_dir: Path) -> list[tuple[float, ArmResult]]:
    """``(α, result)`` of every vps arm in compare's curve ``rows``, sorted by other flags, then α."""
    arms = [arm for arm in trained_arms(rows, output_dir, SWEPT) if arm.settings.get("method") == "vps"]
    placed = [(float(r.arm.settings["vps_alpha"]), r) for r in arm_results(rows, arms)]
    return sorted(placed, key=lambda p: (p[1].arm.others, p[0]))


def markdown_table(results: Sequence[tuple[float, ArmResult]], grpo: Interval | None) -> str:
    """Per set of other flags, one row per arm: α, accuracy (mean ± 95% CI), seeds, paired Δ, the paper's figure."""
    header = (
        "| α | arm | seeds | final held-out accuracy (mean ± 95% CI) | paired Δ vs grpo [95% CI] "
        "| paper, MATH (%) |\n|---|---|---|---|---|---|"
    )
    out = [f"grpo: {grpo} over {grpo.n} seeds.\n"] if grpo is not None else []
    for others in dict.fromkeys(r.arm.others for _, r in results):
        out.append(f"## vps {others or '(no other flags)'}\n\n{header}")
        for alpha, r in results:
            if r.arm.others == others:
                paper = PAPER_MATH.get(alpha, "—")
                out.append(
                    f"| {alpha:g} | {r.arm.label} | {r.accuracy.n} | {r.accuracy} | {difference_text(r.difference)} "
                    f"| {paper} |"
                )
        out.append("")
    return "\n".join(out)


def plot(results: Sequence[tuple[float, ArmResult]], grpo: Interval | None, path: Path) -> None:
    """Ours with 95% CI error bars (left axis, a line per set of other flags) and the paper's MATH
    curve (right axis)."""
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, others in enumerate(dict.fromkeys(r.arm.others for _, r in results)):
        points = [(alpha, r.accuracy) for alpha, r in results if r.arm.others == others]
        errors = [0.0 if acc.n < 2 else acc.half_width for _, acc in points]
        ax.errorbar([a for a, _ in points], [acc.mean for _, acc in points], yerr=errors, marker="o", capsize=3,
                    color=f"C{i + 2}", label=f"psgrpo vps {others}".strip() + " (95% CI)")  # fmt: skip
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
    ax.legend(handles[0] + extra[0], handles[1] + extra[1], loc="lower center", fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def report(output_dir: Path) -> str:
    """Write alpha_sweep.md and alpha_sweep.png from ``output_dir/curves.csv``; return the table."""
    return write_report(
        output_dir, "alpha_sweep", "vps", "GRPO-VPS α sweep", alpha_results, markdown_table, plot
    )


def main(argv: Sequence[str]) -> str:
    parser = sweep_parser(__doc__, "vps", "vps", "--vps_probe gold_suffix --vps_boundaries markers")
    parser.add_argument("--alphas", type=float, nargs="+", default=list(ALPHAS))

    def arms_of(args: argparse.Namespace) -> list[str]:
        return sweep_arms(args.alphas, args.arm_flags, args.prefix)

    return sweep_main(parser, argv, arms_of, report)


if __name__ == "__main__":
    run_cli(main)
