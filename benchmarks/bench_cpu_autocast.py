"""CPU autocast cost: a linear layer's forward under fp32, bf16 and fp16 autocast, as ratios to fp32.

Why: psgrpo picks bf16 on a CPU only where bf16 is native (psgrpo/config/precision.py) and warns for
``--fp16 true`` on a CPU without native fp16, where every fp16 matmul is emulated. This measures what that
costs on the machine it runs on (one thread, the tiny model's width by default)::

    python benchmarks/bench_cpu_autocast.py                 # 128-wide, 512 rows, 300 calls, 2 rounds
    python benchmarks/bench_cpu_autocast.py --width 896     # Qwen2.5-0.5B's hidden size

Prints one JSON object: the CPU's fp16/bf16 flags and, per round, each precision's time per call over fp32's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch

from psgrpo.config.precision import FP16_FLAGS, X86_BF16_FLAGS, cpu_flags

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def seconds_per_call(layer: torch.nn.Linear, x: torch.Tensor, dtype: torch.dtype | None, calls: int) -> float:
    """Mean seconds of one ``layer(x)`` under CPU autocast to ``dtype`` (``None``: plain fp32), after 3 warm-up calls."""
    with torch.no_grad(), torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        for _ in range(3):
            layer(x)
        start = time.perf_counter()
        for _ in range(calls):
            layer(x)
        return (time.perf_counter() - start) / calls


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--width", type=int, default=128, help="input features; the output has 4x (default 128)"
    )
    parser.add_argument("--rows", type=int, default=512, help="rows of the input (default 512)")
    parser.add_argument(
        "--calls", type=int, default=300, help="timed calls per precision and round (default 300)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds, each timing every precision (default 2)"
    )
    args = parser.parse_args(argv)
    for name in ("width", "rows", "calls", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layer = torch.nn.Linear(args.width, 4 * args.width)
    x = torch.randn(args.rows, args.width)
    rounds = []
    for _ in range(args.rounds):
        times = {name: seconds_per_call(layer, x, dtype, args.calls) for name, dtype in PRECISIONS.items()}
        rounds.append({name: round(t / times["fp32"], 2) for name, t in times.items()})
    flags = cpu_flags()
    report = {
        "shape": {"rows": args.rows, "in": args.width, "out": 4 * args.width},
        "cpu_flags": sorted(f for f in flags if f in (*FP16_FLAGS, *X86_BF16_FLAGS)),
        "ratio_to_fp32": rounds,
    }
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
    sys.exit(0)
