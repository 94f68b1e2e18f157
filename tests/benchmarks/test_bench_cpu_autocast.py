"""benchmarks/bench_cpu_autocast.py: fp32 / bf16 / fp16 autocast on the CPU, as ratios to fp32."""

from __future__ import annotations

import pytest


def test_every_precision_is_timed_against_fp32(import_benchmark, capsys):
    report = import_benchmark("bench_cpu_autocast").main(
        ["--width", "8", "--rows", "4", "--calls", "2", "--rounds", "2"]
    )
    assert report["shape"] == {"rows": 4, "in": 8, "out": 32}
    assert len(report["ratio_to_fp32"]) == 2
    for ratios in report["ratio_to_fp32"]:
        assert ratios.keys() == {"fp32", "bf16", "fp16"} and ratios["fp32"] == 1.0
        assert ratios["bf16"] > 0 and ratios["fp16"] > 0
    assert '"ratio_to_fp32"' in capsys.readouterr().out


def test_a_zero_count_is_a_usage_error(import_benchmark, capsys):
    with pytest.raises(SystemExit):
        import_benchmark("bench_cpu_autocast").main(["--calls", "0"])
    assert "--calls must be >= 1" in capsys.readouterr().err
