"""benchmarks/bench_cpu_memory.py: RSS and time per step of `psgrpo train` under oneDNN and allocator settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "configs" / "demo.yaml")
SMALL = ["--", "--per_device_train_batch_size", "16"]
"""The runs' batch: 2 prompts × 8 completions, not the demo's 64 (a quarter of the time; what is measured is the same)."""


@pytest.mark.slow
def test_each_variant_trains_in_its_own_process_with_its_variables(import_benchmark, tmp_path, capsys):
    output = tmp_path / "memory.json"
    report = import_benchmark("bench_cpu_memory").main(
        [
            "--config",
            DEMO,
            "--steps",
            "2",
            "--variants",
            "fp32-torch",
            "fp32",
            "--output",
            str(output),
            *SMALL,
        ]
    )
    assert report["train_args"] == SMALL[1:]
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
        (["--runs", "0"], "argument --runs: expected an integer >= 1, got 0"),
        (["--variants", "fp64"], "argument --variants: invalid choice: 'fp64'"),
        (["--output", "/no/such/folder/x.json"], "--output: folder /no/such/folder does not exist"),
    ],
)
def test_bad_flags_are_one_line_before_anything_runs(import_benchmark, capsys, argv, line):
    with pytest.raises(SystemExit) as exit_info:
        import_benchmark("bench_cpu_memory").main(["--config", DEMO, *argv])
    assert exit_info.value.code == 2
    assert line in capsys.readouterr().err


@pytest.mark.slow
def test_several_runs_train_one_after_another_in_one_compare_process(import_benchmark, tmp_path, capsys):
    report = import_benchmark("bench_cpu_memory").main(
        ["--config", DEMO, "--steps", "2", "--runs", "2", "--variants", "fp32-torch", *SMALL]
    )
    result = report["variants"]["fp32-torch"]
    assert report["runs"] == 2 and len(result["rss_mib_per_run"]) == 2
    assert 100 < min(result["rss_mib_per_run"]) <= max(result["rss_mib_per_run"]) <= result["peak_rss_mib"]
    assert [set(steps) for steps in result["rss_mib_at_step_per_run"]] == [{1, 2}, {1, 2}]
    assert result["env_seen_by_run"]["LRU_CACHE_CAPACITY"] == "1024"
    assert "| variant | highest RSS in run 1 (MiB) | highest RSS in run 2 (MiB) |" in capsys.readouterr().out


def test_one_run_is_psgrpo_train_and_several_are_one_compare_of_identical_arms(import_benchmark, tmp_path):
    bench = import_benchmark("bench_cpu_memory")
    command, metrics = bench._command(True, DEMO, 5, 1, tmp_path, ["--method", "grpo"])
    assert command[1:4] == ["-m", "psgrpo", "train"] and command[-2:] == ["--method", "grpo"]
    assert metrics == [tmp_path / "run" / "metrics.jsonl"]
    command, metrics = bench._command(False, DEMO, 5, 3, tmp_path, ["--method", "grpo"])
    assert command[1:4] == ["-m", "psgrpo", "compare"]
    assert command[-4:] == ["--arms", "run1=", "run2=", "run3="]  # no flags: the same run three times
    assert command[command.index("--seeds") + 1] == "0" and "--eval_before_after" not in command
    assert metrics == [tmp_path / "compare" / "runs" / f"run{i}-seed0" / "metrics.jsonl" for i in (1, 2, 3)]
    assert bench._active_run(metrics) == 0  # nothing started yet
    (tmp_path / "compare" / "runs" / "run1-seed0").mkdir(parents=True)
    (tmp_path / "compare" / "runs" / "run2-seed0").mkdir()
    assert bench._active_run(metrics) == 1
