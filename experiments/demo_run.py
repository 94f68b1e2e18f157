"""Time the embedded demo end to end and print a markdown row for docs/benchmarks.md.

    python experiments/demo_run.py [extra psgrpo train flags, e.g. --method grpo --max_steps 150]

Runs ``psgrpo train`` in-process with the embedded recipe (output in a new outputs/bench-demo/<UTC time> unless
--output_dir is given: train refuses a folder that holds an earlier run) and reports held-out accuracy before/after, training time and total wall time.
"""

from __future__ import annotations

import os
import sys
import time

from psgrpo.commands.train import train


def main(argv: list[str]) -> None:
    if "--output_dir" not in argv:
        argv = [
            "--output_dir",
            time.strftime("outputs/bench-demo/%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.getpid()}",
            *argv,
        ]
    start = time.perf_counter()
    report = train(argv)
    wall = time.perf_counter() - start
    before, after = report["before"], report["after"]
    print("\n| method | flags | acc before | acc after | Δ (points) | format after | train s | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {report['method']} | `{' '.join(argv)}` | {before['accuracy']:.3f} | {after['accuracy']:.3f} | "
        f"{100 * (after['accuracy'] - before['accuracy']):+.1f} | {after['format_rate']:.3f} | "
        f"{report['train_seconds']:.0f} | {wall:.0f} |"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
