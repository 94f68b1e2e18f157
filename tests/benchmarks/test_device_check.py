"""benchmarks/device_check.py and device_check.sh: the one prepared device check, run here with --cpu-smoke."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="7" time="12.5">
<testcase classname="tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a" name="test_bad" time="0.1"><failure message="boom"/></testcase>
<testcase classname="tests.test_b" name="test_broken" time="0.1"><error message="fixture"/></testcase>
</testsuite></testsuites>
"""


@pytest.fixture(scope="module")
def device_check(import_benchmark):
    return import_benchmark("device_check")


def test_a_junit_report_gives_the_counts_and_the_failed_tests(device_check, tmp_path):
    path = tmp_path / "tests.xml"
    path.write_text(JUNIT)
    counts = device_check.parse_junit(path)
    assert counts == {
        "tests": 7,
        "failures": 1,
        "errors": 1,
        "skipped": 2,
        "passed": 3,
        "seconds": 12.5,
        "failed": ["tests.test_a::test_bad", "tests.test_b::test_broken"],
    }


def test_the_targets_are_checked_per_cache_and_unmeasured_ones_say_so(device_check):
    summary = {
        "grpo-static": {"step_s": 4.0, "vs_trl": 1.01},
        "vps-static": {"step_s": 4.8, "vs_trl": 1.02, "vs_grpo": 1.2},
        "grpo": {"step_s": 20.0},
    }
    rows = {(r["target"], r["cache"]): r for r in device_check.target_rows(summary)}
    assert rows[("grpo step ≤ 5 s", "static")]["met"] is True
    assert rows[("grpo step ≤ 5 s", "dynamic")] | {} == {
        "target": "grpo step ≤ 5 s",
        "cache": "dynamic",
        "value": 20.0,
        "bound": 5.0,
        "met": False,
    }
    assert rows[("vps ≤ 1.10 × grpo", "static")]["met"] is False
    assert rows[("vps ≤ 1.05 × stock TRL", "static")]["met"] is True
    assert rows[("tree ≤ 1.10 × grpo", "static")]["met"] is None  # tree did not run
    assert len(rows) == 2 * len(device_check.TARGETS)


def test_the_gpu_defaults_fit_the_device(device_check, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    cli = device_check.parse_args([])
    assert cli.workers == 14 and cli.steps == 2 and cli.budget_s == 480
    assert cli.sections[:5] == ["grpo-static", "grpo", "ps-static", "vps-static", "tree-static"]
    assert cli.sections[5:] == ["trl-static", "trl"] and cli.optional == ["liger"]
    smoke = device_check.parse_args(["--cpu-smoke"])
    assert smoke.workers == 2 and smoke.steps == 1


def test_without_trl_and_without_wheels_the_script_says_how_to_get_them(tmp_path):
    """A Python that lacks trl (a stand-in that fails the import check) and an empty wheel folder."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "PSGRPO_WHEELS": str(tmp_path / "none")}
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks/device_check.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "run 'bash benchmarks/device_wheels.sh' where PyPI is reachable" in done.stderr


@pytest.mark.slow
def test_cpu_smoke_runs_every_part_and_writes_one_json_and_one_table(tmp_path, qwen_tokenizer):
    """``bash benchmarks/device_check.sh --cpu-smoke`` end to end (2 min 15 s on the shared 2 cores)."""
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    out, report_dir = tmp_path / "work", tmp_path / "out"
    command = ["bash", str(REPO / "benchmarks/device_check.sh"), "--cpu-smoke", "--output_dir", str(out)]
    done = subprocess.run(
        [*command, "--report_dir", str(report_dir)], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((report_dir / "device_check.json").read_text())
    tests = report["parts"]["tests"]
    assert tests["xdist"] and tests["failures"] == 0 and tests["passed"] > 0
    sections = report["parts"]["gpu_check"]["report"]["sections"]
    for name in ("grpo-static", "ps-static", "vps-static", "tree-static", "trl-static", "grpo", "trl"):
        assert sections[name]["status"] == "ok", name
        assert set(sections[name]["phases_s"][0]) >= {"generation", "loss_forward", "backward", "optimizer"}
    generation = report["parts"]["generation"]
    log = (
        (report_dir / "generation.log").read_text()[-2000:]
        if (report_dir / "generation.log").is_file()
        else ""
    )
    assert "report" in generation, f"{generation}\n{log}"
    assert generation["report"]["caches"].keys() == {"dynamic", "static"}
    table = (report_dir / "device_check.md").read_text()
    assert "Where the last step's time goes" in table and "| grpo step ≤ 5 s | static |" in table
    assert sorted(p.name for p in report_dir.iterdir()) == sorted(
        [
            "device_check.json",
            "device_check.md",
            "gpu_check.json",
            "tests.log",
            "gpu_check.log",
            "generation.log",
        ]
    )
