"""Does PS-GRPO training drift towards gamed steps? Step shape and verifier counts over a long ps run.

    python experiments/bench_ps_drift.py [--modes auto reward_to_go] [--max_steps 300]
                                         [--output_root outputs/bench-ps-drift] [extra psgrpo train flags]

For each ``ps_advantage_mode`` in ``--modes``, runs ``python -m psgrpo.commands.cli train --method ps`` on the
embedded demo recipe (same seed, data and steps; ``--logging_steps 1``, no checkpoints, fp32 with
``--bf16 false``) unless ``OUTPUT_ROOT/<mode>/report.json`` already exists, then reads every
run's ``metrics.jsonl`` and reports, per mode, the mean of each metric in :data:`DRIFT_METRICS` over
the first, middle and last tenth of the steps (a policy learning to pad or split steps shows as
rising steps per completion, falling tokens per step, or rising no-op / unnecessary shares).
Writes ``OUTPUT_ROOT/drift.csv`` (one row per mode and step) and ``OUTPUT_ROOT/summary.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRIFT_METRICS = {
    "ps/steps_per_completion": "steps / completion",
    "ps/tokens_per_step": "tokens / step",
    "ps/frac_steps_noop": "no-op steps",
    "ps/frac_steps_unnecessary": "unnecessary steps",
    "ps/frac_steps_no_equation": "steps w/o equation",
    "ps/unparsed_equations": "unparsed runs / batch",
    "ps/step_score_mean": "step score",
    "completions/mean_length": "completion tokens",
    "reward": "reward",
}
"""Metric key in metrics.jsonl → column name in the tables."""


def run_mode(mode: str, flags: list[str], output_dir: Path) -> None:
    """One ``psgrpo train --method ps`` run in a subprocess (skipped when its report exists)."""
    if (output_dir / "report.json").exists():
        return
    shutil.rmtree(
        output_dir, ignore_errors=True
    )  # what a stopped run left: psgrpo train refuses to mix with it
    command = [
        sys.executable, "-m", "psgrpo.commands.cli", "train", "--method", "ps", "--ps_advantage_mode", mode, *flags,
        "--output_dir", str(output_dir), "--logging_steps", "1", "--save_strategy", "no", "--report_to", "none",
    ]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True)


def per_step(output_dir: Path) -> list[dict[str, float]]:
    """The training records of a run's metrics.jsonl (those with a loss), one per optimizer step."""
    records = [json.loads(line) for line in (output_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in records if "loss" in r]


def windows(steps: list[dict[str, float]], fraction: float = 0.1) -> dict[str, dict[str, float]]:
    """Mean of each drift metric over the first, middle and last ``fraction`` of the steps."""
    width = max(1, round(len(steps) * fraction))
    middle = max(0, len(steps) // 2 - width // 2)
    parts = {"first": steps[:width], "middle": steps[middle : middle + width], "last": steps[-width:]}
    out: dict[str, dict[str, float]] = {}
    for key in DRIFT_METRICS:
        out[key] = {}
        for name, part in parts.items():
            values = [r[key] for r in part if key in r and r[key] == r[key]]  # NaN-free
            out[key][name] = sum(values) / len(values) if values else float("nan")
    return out


def main(argv: list[str]) -> dict[str, dict]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--modes", nargs="+", default=["auto", "reward_to_go"], help="ps_advantage_mode values"
    )
    parser.add_argument("--max_steps", type=int, default=300, help="training steps of each run (default 300)")
    parser.add_argument("--output_root", type=Path, default=ROOT / "outputs" / "bench-ps-drift")
    args, extra = parser.parse_known_args(argv)
    flags = ["--max_steps", str(args.max_steps), "--bf16", "false", *extra]
    summary: dict[str, dict] = {}
    rows = []
    for mode in args.modes:
        run_mode(mode, flags, args.output_root / mode)
        steps = per_step(args.output_root / mode)
        report = json.loads((args.output_root / mode / "report.json").read_text())
        summary[mode] = {
            "steps": len(steps),
            "acc_before": report["before"]["accuracy"],
            "acc_after": report["after"]["accuracy"],
            "train_seconds": report["train_seconds"],
            "windows": windows(steps),
        }
        rows += [{"mode": mode, "step": r["step"], **{k: r.get(k, "") for k in DRIFT_METRICS}} for r in steps]
    args.output_root.mkdir(parents=True, exist_ok=True)
    with (args.output_root / "drift.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["mode", "step", *DRIFT_METRICS])
        writer.writeheader()
        writer.writerows(rows)
    (args.output_root / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\nps drift on the embedded demo, {args.max_steps} steps, flags `{' '.join(flags)}`\n")
    print("| mode | steps | held-out acc before → after | train s |")
    print("|---|---:|---|---:|")
    for mode, s in summary.items():
        print(
            f"| `{mode}` | {s['steps']} | {s['acc_before']:.3f} → {s['acc_after']:.3f} | {s['train_seconds']:.0f} |"
        )
    print("\nmean over the first / middle / last tenth of the steps\n")
    print("| metric | " + " | ".join(f"`{mode}`" for mode in summary) + " |")
    print("|---|" + "---|" * len(summary))
    for key, name in DRIFT_METRICS.items():
        cells = []
        for s in summary.values():
            w = s["windows"][key]
            cells.append(f"{w['first']:.3f} / {w['middle']:.3f} / {w['last']:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
