"""Memory bank on the embedded demo: held-out accuracy and groups rescued, with and without the bank.

    python experiments/bench_memory_bank.py [--max_steps 200] [--output_root outputs/bench-memory-bank]
                                            [extra psgrpo train flags, e.g. --method grpo]

Runs ``python -m psgrpo train`` (the embedded demo recipe, same seed and steps) twice, with
``--memory_bank false`` and ``--memory_bank true``, and prints one markdown row per run: held-out
accuracy before/after, the share of groups without reward variance (no learning signal), groups
rescued by the bank and its final size. Each run logs every step (``--logging_steps 1``) so the
rescued counts add up exactly. Results also go to ``OUTPUT_ROOT/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_demo(flags: list[str], output_dir: Path) -> dict:
    """One ``psgrpo train`` run in a subprocess, into a fresh ``output_dir`` (a rerun replaces the last one's); its
    report plus a summary of its per-step metrics."""
    shutil.rmtree(output_dir, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "psgrpo",
        "train",
        *flags,
        "--output_dir",
        str(output_dir),
        "--logging_steps",
        "1",
        "--save_strategy",
        "no",
        "--report_to",
        "none",
    ]
    subprocess.run(command, cwd=ROOT, check=True)
    report = json.loads((output_dir / "report.json").read_text())
    records = [json.loads(line) for line in (output_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    return {
        "before": report["before"]["accuracy"],
        "after": report["after"]["accuracy"],
        "train_seconds": report["train_seconds"],
        "frac_reward_zero_std": sum(r["frac_reward_zero_std"] for r in steps) / max(len(steps), 1),
        "groups_rescued": sum(r.get("memory/groups_rescued", 0.0) for r in steps),
        "bank_size": steps[-1].get("memory/bank_size", 0.0) if steps else 0.0,
    }


def main(argv: list[str]) -> dict[str, dict]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max_steps", type=int, default=200, help="training steps of each run (default 200)")
    parser.add_argument("--output_root", type=Path, default=ROOT / "outputs" / "bench-memory-bank")
    args, extra = parser.parse_known_args(argv)
    flags = ["--max_steps", str(args.max_steps), *extra]
    results = {
        name: run_demo([*flags, "--memory_bank", str(on).lower()], args.output_root / name)
        for name, on in (("without", False), ("with", True))
    }
    print(
        f"\nmemory bank on the embedded demo, {args.max_steps} steps, flags `{' '.join(extra) or '(none)'}`"
    )
    print(
        "| memory bank | acc before | acc after | Δ (points) | groups w/o signal | groups rescued | bank size |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['before']:.3f} | {r['after']:.3f} | {100 * (r['after'] - r['before']):+.1f} | "
            f"{r['frac_reward_zero_std']:.2f} | {r['groups_rescued']:.0f} | {r['bank_size']:.0f} |"
        )
    args.output_root.mkdir(parents=True, exist_ok=True)
    (args.output_root / "summary.json").write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
