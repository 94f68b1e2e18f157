"""benchmarks/bench_verifier.py --scaling at toy size: the linear-time table and the hostile-input timings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from psgrpo.ps.credit_gaming import HOSTILE_STEPS

ROOT = Path(__file__).resolve().parents[2]


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
