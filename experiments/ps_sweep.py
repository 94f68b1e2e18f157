"""PS-GRPO's sweep: ``ps_advantage_mode`` × λ, and pure process supervision, each paired against grpo.

    python experiments/ps_sweep.py --output_dir outputs/ps-sweep [--modes reward_to_go step min]
        [--lambdas 0.5 1 2] [--arm_flags '--step_scorer reference'] [--no_pure] [--prefix ps]
        [--seeds 0 1 2] [any psgrpo compare / train flag, e.g. --config configs/arith_hard.yaml --max_steps 60]

One ``psgrpo compare`` with a ``grpo`` arm, one arm per cell (``ps-<mode>-l<λ>=--method ps
ARM_FLAGS --ps_advantage_mode <mode> --ps_lambda <λ>``; ``rtg`` stands for reward_to_go) and
``ps-pure`` (``--ps_outcome_weight 0``: DeepSeekMath's pure process supervision, at the default
mode and λ). Finished runs are skipped, so the sweep can be run in pieces; ``--report_only true``
draws the report from the finished runs alone.

The report places every ps arm of ``curves.csv`` by the flags it was trained with (read back from
``runs/<label>-seed<N>/compare_run.json``), not by its label, so arms named by hand in the same
``--output_dir`` (``ps-ref-end=--method ps --step_scorer reference``) land in their cell, with
``auto`` resolved to the mode it trains with. ``ps_sweep.md``: one row per arm (mode, λ, outcome
weight, final held-out accuracy mean ± 95% CI over seeds, the paired difference against grpo with
its 95% CI), one table per set of other flags. ``ps_sweep.png``: the paired difference against λ,
one line per mode. ``--plot_only`` redraws from ``curves.csv``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from _sweeps import (
    ArmResult,
    TrainedArm,
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
from psgrpo.config.options import ProcessMode
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.signal import resolve_process_mode

MODES = ("reward_to_go", "step", "min")
LAMBDAS = (0.5, 1.0, 2.0)
SHORT = {"reward_to_go": "rtg", "pure_min": "pmin"}
"""Mode names shortened in arm labels (the others are short already)."""
SWEPT = ("ps_advantage_mode", "ps_lambda", "ps_outcome_weight")


def arm_label(mode: str, lam: float, prefix: str = "ps") -> str:
    """``ps-rtg-l0.5`` for reward_to_go at λ = 0.5 (the compare arm, its rows and run directories)."""
    return f"{prefix}-{SHORT.get(mode, mode)}-l{lam:g}"


def sweep_arms(
    modes: Sequence[str], lambdas: Sequence[float], arm_flags: str = "", pure: bool = True, prefix: str = "ps"
) -> list[str]:
    """``--arms`` entries: grpo, one ps arm per (mode, λ), then ``<prefix>-pure`` unless ``pure`` is False."""
    base = f"--method ps {arm_flags}".strip()
    arms = [f"{REFERENCE_METHOD}=--method {REFERENCE_METHOD}"]
    arms += [
        f"{arm_label(m, lam, prefix)}={base} --ps_advantage_mode {m} --ps_lambda {lam:g}"
        for m in modes
        for lam in lambdas
    ]
    if pure:
        arms.append(f"{prefix}-pure={base} --ps_outcome_weight 0")
    return arms


@dataclass(frozen=True)
class Cell:
    """Where a ps arm sits in the sweep: its resolved mode, λ and outcome weight, and ``others``, the
    arm's remaining flags that set it apart (``--step_scorer reference``), as a command-line string."""

    mode: str
    lam: float
    outcome_weight: float
    others: str


def arm_cell(arm: TrainedArm) -> Cell | None:
    """The :class:`Cell` of a trained arm, ``auto`` resolved as training resolves it; ``None`` for a non-ps arm."""
    settings = arm.settings
    if settings.get("method") != "ps":
        return None
    name = settings["step_scorer"]
    scorer = STEP_SCORERS.get(name) if isinstance(name, str) and name in STEP_SCORERS else None
    return Cell(
        mode=resolve_process_mode(str(settings["ps_advantage_mode"]), scorer),
        lam=float(settings["ps_lambda"]),
        outcome_weight=float(settings["ps_outcome_weight"]),
        others=arm.others,
    )


def sweep_results(rows: Sequence[dict[str, Any]], output_dir: Path) -> list[tuple[Cell, ArmResult]]:
    """Every ps arm in compare's curve ``rows`` with its cell, sorted by other flags, outcome weight
    (1 before pure), mode and λ."""
    arms = [(arm, cell) for arm in trained_arms(rows, output_dir, SWEPT) if (cell := arm_cell(arm))]
    cells = {arm.label: cell for arm, cell in arms}
    placed = [(cells[r.arm.label], r) for r in arm_results(rows, [arm for arm, _ in arms])]
    return sorted(placed, key=lambda p: (p[0].others, -p[0].outcome_weight, p[0].mode, p[0].lam))


def markdown_tables(results: Sequence[tuple[Cell, ArmResult]], grpo: Interval | None) -> str:
    """One table per set of other flags: mode, λ, outcome weight, arm, seeds, accuracy, paired Δ."""
    header = (
        "| mode | λ | outcome weight | arm | seeds | final held-out accuracy (mean ± 95% CI) "
        "| paired Δ vs grpo [95% CI] |\n|---|---|---|---|---|---|---|"
    )
    out = []
    if grpo is not None:
        out.append(f"grpo: {grpo} over {grpo.n} seeds.\n")
    for others in dict.fromkeys(cell.others for cell, _ in results):
        out.append(f"## ps {others or '(no other flags)'}\n\n{header}")
        for cell, r in results:
            if cell.others == others:
                out.append(
                    f"| {cell.mode} | {cell.lam:g} | {cell.outcome_weight:g} | {r.arm.label} | {r.accuracy.n} "
                    f"| {r.accuracy} | {difference_text(r.difference)} |"
                )
        out.append("")
    return "\n".join(out)


MODE_COLOURS = {"reward_to_go": "C1", "step": "C2", "min": "C3", "pure_min": "C4"}
"""One colour per mode in every panel (C0 is grpo's, as in compare.png)."""


def plot(results: Sequence[tuple[Cell, ArmResult]], grpo: Interval | None, path: Path) -> None:
    """Paired Δ vs grpo against λ with 95% CI bars: one panel per set of other flags, one line per
    mode at outcome weight 1, and a hollow marker per mode for pure process supervision. Modes are
    nudged apart along λ so that their bars do not hide each other. grpo is the line at 0."""
    plt = load_pyplot()
    groups = list(dict.fromkeys(cell.others for cell, _ in results))
    modes = list(dict.fromkeys(cell.mode for cell, _ in results))
    fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 4.5), squeeze=False)
    for ax, others in zip(axes[0], groups, strict=True):
        mine = [
            (cell, r.difference) for cell, r in results if cell.others == others and r.difference is not None
        ]
        for i, mode in enumerate(modes):
            nudge = 2 ** (0.04 * (i - (len(modes) - 1) / 2))
            for weight, style in ((1.0, "-o"), (0.0, "s")):
                points = sorted((cell.lam, d) for cell, d in mine
                                if cell.mode == mode and cell.outcome_weight == weight)  # fmt: skip
                if not points:
                    continue
                errors = [0.0 if d.n < 2 else d.half_width for _, d in points]
                label = mode if weight == 1.0 else f"{mode}, pure (outcome weight 0)"
                ax.errorbar([lam * nudge * (1 if weight else 2**0.03) for lam, _ in points], [d.mean for _, d in points], yerr=errors, fmt=style,
                            capsize=3, color=MODE_COLOURS.get(mode, "C5"), label=label,
                            fillstyle="full" if weight else "none")  # fmt: skip
        ax.axhline(
            0.0, color="C0", linestyle="--", label="grpo" if grpo is None else f"grpo ({grpo.n} seeds)"
        )
        ax.set_xscale("log", base=2)
        lambdas = sorted({cell.lam for cell, _ in mine})
        ax.set_xticks(lambdas, [f"{lam:g}" for lam in lambdas])
        ax.minorticks_off()
        ax.set_xlabel("λ (weight of the process advantage)")
        ax.set_ylabel("paired Δ held-out accuracy vs grpo (95% CI)")
        ax.set_title(f"ps {others}".strip(), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


def report(output_dir: Path) -> str:
    """Write ps_sweep.md and ps_sweep.png from ``output_dir/curves.csv``; return the tables."""
    title = "PS-GRPO sweep: advantage mode × λ, and pure process supervision"
    return write_report(output_dir, "ps_sweep", "ps", title, sweep_results, markdown_tables, plot)


def main(argv: Sequence[str]) -> str:
    parser = sweep_parser(__doc__, "ps", "ps", "--step_scorer reference")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=get_args(ProcessMode))
    parser.add_argument("--lambdas", type=float, nargs="+", default=list(LAMBDAS))
    parser.add_argument("--no_pure", action="store_true", help="leave out the pure process supervision arm")

    def arms_of(args: argparse.Namespace) -> list[str]:
        return sweep_arms(args.modes, args.lambdas, args.arm_flags, pure=not args.no_pure, prefix=args.prefix)

    return sweep_main(parser, argv, arms_of, report)


if __name__ == "__main__":
    run_cli(main)
