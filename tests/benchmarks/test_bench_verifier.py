"""benchmarks/bench_verifier.py --scaling at toy size: the linear-time table and the hostile-input timings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from psgrpo.ps.credit_gaming import HOSTILE_STEPS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_verifier_scaling_tiny():
    command = [
        sys.executable,
        "benchmarks/bench_verifier.py",
        "--scaling",
        "--max-chars",
        "2048",
        "--repeats",
        "1",
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert sum(line.startswith("| honest steps") for line in lines) == 3  # 1 KiB, 2 KiB, and the ratio
    hostile = {line.split(" | ")[0][2:]: line.split(" | ") for line in lines if line.startswith("| ")}
    for name in HOSTILE_STEPS:
        assert int(hostile[name][-1].rstrip(" |")) >= 1, name  # counted as unparsed, not raised


def test_logic_corruption_keeps_the_arithmetic_true_and_leaves_the_gold_path(import_benchmark):
    import random

    from psgrpo.ps.scorers.reference import ReferenceVerifier

    bench = import_benchmark("bench_verifier")
    solution = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nShe sold 48+24 = <<48+24=72>>72 clips in all.\n#### 72"
    step = solution.splitlines()[0]
    changed = bench.logic_corrupt_step(step, random.Random(0))
    assert changed is not None and changed != step
    assert bench.all_hold(changed) is True  # the arithmetic verifier sees nothing wrong
    scores = ReferenceVerifier()(
        [""], [[changed, solution.splitlines()[1]]], solution=[solution], answer=["72"]
    )[0]
    assert scores[0] < 1.0 == scores[1]  # the reference verifier does
    assert bench.logic_corrupt_step("It costs <<x=2>>2 dollars.", random.Random(0)) is None
