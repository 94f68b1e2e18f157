"""benchmarks/bench_cpu_memory.py: RSS and time per step of `psgrpo train` under oneDNN and allocator settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "configs" / "demo.yaml")


@pytest.mark.slow
def test_each_variant_trains_in_its_own_process_with_its_variables(import_benchmark, tmp_path, capsys):
    output = tmp_path / "memory.json"
    report = import_benchmark("bench_cpu_memory").main(
        ["--config", DEMO, "--steps", "2", "--variants", "fp32-torch", "fp32", "--output", str(output)]
    )
    assert list(report["variants"]) == ["fp32-torch", "fp32"]
    torch_sizes, psgrpo_sizes = report["variants"].values()
    # PyTorch's sizes reach the training process; the plain variant starts with neither (psgrpo sets 128)
    assert torch_sizes["env_seen_by_run"] == {
        "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024",
        "LRU_CACHE_CAPACITY": "1024",
    }
    assert psgrpo_sizes["env_seen_by_run"] == {}
    for result in (torch_sizes, psgrpo_sizes):
        assert set(result["rss_mib_at_step"]) == {1, 2}
        assert 100 < min(result["rss_mib_at_step"].values()) <= result["peak_rss_mib"]
        assert result["median_step_seconds"] > 0 and result["bf16"] is False
    table = capsys.readouterr().out
    assert "| fp32-torch |" in table and "| fp32 |" in table and "| 1.00 |" in table
    assert json.loads(output.read_text())["variants"]["fp32-torch"]["env"]["LRU_CACHE_CAPACITY"] == "1024"


def test_a_failed_run_names_the_variant_and_shows_trains_own_line(import_benchmark, monkeypatch):
    monkeypatch.setenv(
        "PSGRPO_DEBUG", "0"
    )  # the user's one line, not the tests' tracebacks (tests/conftest.py)
    with pytest.raises(
        SystemExit, match=r"variant fp32: psgrpo train exited 2:\npsgrpo: error: unknown option"
    ):
        import_benchmark("bench_cpu_memory").main(
            ["--config", DEMO, "--steps", "1", "--variants", "fp32", "--", "--no_such_flag", "1"]
        )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--config", "no/such.yaml"], "--config: no file no/such.yaml"),
        (["--steps", "0"], "argument --steps: expected an integer >= 1, got 0"),
        (["--variants", "fp64"], "argument --variants: invalid choice: 'fp64'"),
        (["--output", "/no/such/folder/x.json"], "--output: folder /no/such/folder does not exist"),
    ],
)
def test_bad_flags_are_one_line_before_anything_runs(import_benchmark, capsys, argv, line):
    with pytest.raises(SystemExit) as exit_info:
        import_benchmark("bench_cpu_memory").main(["--config", DEMO, *argv])
    assert exit_info.value.code == 2
    assert line in capsys.readouterr().err
