"""benchmarks/device_check.py and device_check.sh: the one prepared device check, run here with --cpu-smoke."""

from __future__ import annotations

import importlib.metadata
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
    assert cli.sections[:2] == ["grpo-static", "trl-static"]  # the step target and its stock ratio, first
    assert cli.sections[2:] == ["vps-static", "ps-static", "tree-static", "grpo", "trl"] and cli.optional == [
        "liger"
    ]
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


def test_a_python_without_trl_gets_the_one_line_not_an_import_error(tmp_path):
    """device_check.py itself, on a Python where trl is not installed (hidden from import and from metadata):
    the one line naming what to carry, exit status 2, and no output folder."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import importlib.metadata, sys\n"
        "sys.modules['trl'] = None  # import trl -> ImportError\n"
        "_distribution = importlib.metadata.distribution\n"
        "def distribution(name):\n"
        "    if name.lower() == 'trl':\n"
        "        raise importlib.metadata.PackageNotFoundError(name)\n"
        "    return _distribution(name)\n"
        "importlib.metadata.distribution = distribution\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"}
    out = tmp_path / "work"
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/device_check.py"), "--output_dir", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("device_check: trl")]
    assert lines and "is not installed" in lines[0] and "device_wheels.sh" in lines[0]
    assert not out.exists()


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
        # -static: decoding compiled (dynamo, eager backend on the CPU); dynamic: nothing compiled
        assert (sections[name]["compiled_graphs"] >= 1) == name.endswith("-static"), (name, sections[name])
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


def _fake_distribution(site: Path, name: str, version: str, requires: list[str] = ()) -> None:
    """A ``<name>-<version>.dist-info`` folder that importlib.metadata reads as an installed distribution."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_the_requirements_of_carried_packages_are_walked_with_their_extras(
    device_check, tmp_path, monkeypatch
):
    """psgrpo → carried-a[x] → carried-b (extra x only) → image-c; image packages are checked, not walked."""
    site = tmp_path / "site"
    _fake_distribution(
        site,
        "zz-carried-a",
        "1.0",
        ["zz-image-c>=2", 'zz-carried-b==3.0; extra == "x"', 'zz-nowhere; extra == "y"'],
    )
    _fake_distribution(site, "zz-carried-b", "2.0", ["zz-gone>=1", 'zz-old; python_version < "3.0"'])
    _fake_distribution(site, "zz-image-c", "1.5", ["zz-image-only-needs"])
    monkeypatch.syspath_prepend(str(site))
    carried = {"zz-carried-a", "zz-carried-b"}
    missing, mismatched = device_check.requirement_problems(["zz-carried-a[x]>=1"], carried)
    assert missing == ["zz-gone>=1 (needed by zz-carried-b)"]
    assert mismatched == [
        "zz-image-c>=2 (needed by zz-carried-a): 1.5 installed",
        "zz-carried-b==3.0 (needed by zz-carried-a): 2.0 installed",
    ]
    # carried-a reached twice (with and without its extra): each problem is still one line
    twice = device_check.requirement_problems(["zz-carried-a[x]>=1", "zz-carried-a"], carried)
    assert twice == (missing, mismatched)
    # without the extra, carried-b is not needed; a missing top-level requirement is named as psgrpo's
    missing, mismatched = device_check.requirement_problems(["zz-carried-a", "zz-absent"], carried)
    assert missing == ["zz-absent (needed by psgrpo)"]
    assert mismatched == ["zz-image-c>=2 (needed by zz-carried-a): 1.5 installed"]


def test_this_environment_meets_psgrpo_and_the_carried_packages_requirements(device_check):
    """The check the device run starts with, on the Python running the tests: nothing missing, and where pip
    finds no broken requirement (a pip-resolved venv, as `make test` builds), no version mismatch either."""
    problems = device_check.check_requirements()
    assert problems["missing"] == []
    try:  # pip check sees psgrpo's own floors only where psgrpo is installed (not on the device's PYTHONPATH)
        importlib.metadata.distribution("psgrpo")
    except importlib.metadata.PackageNotFoundError:
        return
    pip = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    if pip.returncode == 0 and "DEVICE_CHECK_STARTED" not in os.environ:
        assert problems["mismatched"] == []


def test_the_wheel_list_and_the_image_list_split_the_packages_between_them(device_check):
    """Every carried package pinned once; the image stand-in never holds what must travel as a wheel."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    text = (REPO / "benchmarks/device_wheels.txt").read_text()
    pins = [Requirement(line.split("#")[0]) for line in text.splitlines() if line.split("#")[0].strip()]
    assert all(len(p.specifier) == 1 and next(iter(p.specifier)).operator == "==" for p in pins)
    carried = device_check.carried_names()
    assert len(set(carried)) == len(carried) == len(pins)
    assert {"trl", "datasets", "math-verify"} <= set(carried)
    image_lines = (REPO / "benchmarks/device_image.txt").read_text().splitlines()
    image = {canonicalize_name(line) for line in image_lines if line.strip() and not line.startswith("#")}
    assert {"torch", "transformers", "accelerate"} <= image
    assert not image & set(carried)


def test_a_missing_requirement_stops_the_check_with_one_line_per_package(
    device_check, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(
        device_check,
        "check_requirements",
        lambda: {"missing": ["dill>=0.3 (needed by datasets)"], "mismatched": []},
    )
    with pytest.raises(SystemExit) as stop:
        device_check.main(["--cpu-smoke", "--output_dir", str(tmp_path / "work")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert (
        "device_check: dill>=0.3 (needed by datasets) is not installed: add it to benchmarks/device_wheels.txt"
        in err
    )
    assert not (tmp_path / "work").exists()


def _report(**parts):
    base = {
        "requirements": {"missing": [], "mismatched": []},
        "parts": {
            "tests": {"tests": 10, "failures": 0, "errors": 0, "skipped": 1, "passed": 9, "timed_out": False},
            "gpu_check": {
                "report": {
                    "sections": {
                        "grpo-static": {"status": "ok"},
                        "liger-grpo": {"status": "skipped: needs CUDA (--cpu-smoke)"},
                    }
                }
            },
            "generation": {"report": {"caches": {}}},
        },
    }
    base["parts"] |= parts
    return base


def test_the_verdict_separates_failed_parts_from_skipped_ones(device_check, tmp_path, capsys):
    problems, notes = device_check.verdict(_report())
    assert problems == [] and notes == ["gpu_check liger-grpo: skipped: needs CUDA (--cpu-smoke)"]
    broken = _report(
        tests={
            "tests": 10,
            "failures": 2,
            "errors": 0,
            "skipped": 0,
            "passed": 8,
            "timed_out": True,
            "failed": ["a::x", "a::y"],
        },
        gpu_check={"report": {"sections": {"vps-static": {"status": "failed (exit 1): boom"}}}},
        generation={"exit_status": 1},
    )
    broken["requirements"]["mismatched"] = ["fsspec<=2026.9.0 (needed by datasets): 2026.10.0 installed"]
    problems, notes = device_check.verdict(broken)
    assert problems == [
        "tests: 2 failed, 0 errors: ['a::x', 'a::y']",
        "tests: timed out",
        "gpu_check vps-static: failed (exit 1): boom",
        "generation: exit status 1 (finished: none)",
    ]
    assert notes == ["requirement not met: fsspec<=2026.9.0 (needed by datasets): 2026.10.0 installed"]
    skipped_generation = _report(generation={"status": "skipped: time budget (40 s left)"})
    assert device_check.verdict(skipped_generation)[0] == []
    path = tmp_path / "device_check.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(SystemExit) as stop:
        device_check.main(["--verify", str(path)])
    assert stop.value.code == 1
    assert "device_check: FAILED: gpu_check vps-static: failed (exit 1): boom" in capsys.readouterr().err
    path.write_text(json.dumps(_report()))
    with pytest.raises(SystemExit) as stop:
        device_check.main(["--verify", str(path)])
    assert stop.value.code == 0 and "every part that ran passed" in capsys.readouterr().out


def test_the_rehearsal_script_refuses_an_unknown_argument_in_one_line():
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks/device_rehearsal.sh"), "--full"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "device_rehearsal: unknown argument '--full': expected --full_tests or --help"
    ]


def test_a_gpu_check_killed_or_failing_midway_is_a_problem_and_unrun_sections_are_named(device_check):
    killed = _report(
        gpu_check={
            "exit_status": None,
            "timed_out": True,
            "requested": ["grpo-static", "grpo", "vps-static"],
            "report": {"sections": {"grpo-static": {"status": "ok"}}},
        },
        tests={
            "tests": 3,
            "failures": 0,
            "errors": 0,
            "skipped": 0,
            "passed": 3,
            "timed_out": False,
            "exit_status": 4,
        },
        generation={"timed_out": True},
    )
    problems, notes = device_check.verdict(killed)
    assert problems == [
        "tests: exit status 4 with no failed test",
        "gpu_check: stopped at the time budget during grpo; its report holds the sections that finished",
    ]
    assert notes == [
        "gpu_check grpo: not run",
        "gpu_check vps-static: not run",
        "generation: stopped at the time budget (finished: none)",  # a benchmark of transformers: a note
    ]
    crashed = _report(gpu_check={"exit_status": 1, "report": {"sections": {"grpo-static": {"status": "ok"}}}})
    assert device_check.verdict(crashed)[0] == ["gpu_check: exit status 1"]


def _wheel(folder: Path, name: str, version: str) -> None:
    (folder / f"{name}-{version}-py3-none-any.whl").write_bytes(b"")


def test_stale_wheels_names_each_difference_from_the_pins(device_check, tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text(
        "# carried\ntrl==1.16.0\nmath-verify==0.9.0  # the verifier\nlatex2sympy2_extended==1.11.0\n"
    )
    folder = tmp_path / "wheels"
    folder.mkdir()
    _wheel(folder, "trl", "1.16.0")
    _wheel(folder, "math_verify", "0.9.0")
    _wheel(folder, "latex2sympy2_extended", "1.11.0")
    assert device_check.stale_wheels(folder, pins) == []
    (folder / "trl-1.16.0-py3-none-any.whl").unlink()
    _wheel(folder, "trl", "1.17.0")
    (folder / "latex2sympy2_extended-1.11.0-py3-none-any.whl").unlink()
    _wheel(folder, "dill", "0.4.1")
    assert device_check.stale_wheels(folder, pins) == [
        "latex2sympy2-extended==1.11.0: no wheel",
        "trl==1.16.0: the wheel is 1.17.0",
        "dill 0.4.1: a wheel nobody pinned",
    ]


def test_the_wheels_that_travel_are_the_pinned_ones(device_check):
    """``.cache/wheels`` (an ignored path, filled by `make device-wheels`) is what the GPU run installs."""
    folder = REPO / ".cache" / "wheels"
    if not any(folder.glob("*.whl")):
        pytest.skip(".cache/wheels holds no wheels here (`make device-wheels` fills it)")
    assert device_check.stale_wheels(folder) == []


@pytest.mark.parametrize("flag", ["--verify", "--check_wheels"])
def test_a_missing_or_unreadable_report_or_folder_is_one_line(device_check, tmp_path, capsys, flag):
    with pytest.raises(SystemExit) as stop:
        device_check.main([flag, str(tmp_path / "nowhere")])
    assert stop.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
    if flag == "--verify":
        (tmp_path / "bad.json").write_text("{}")
        with pytest.raises(SystemExit) as stop:
            device_check.main([flag, str(tmp_path / "bad.json")])
        assert stop.value.code == 2 and "not a device_check.json (KeyError" in capsys.readouterr().err


def test_a_part_at_its_time_limit_gets_sigint_first_so_it_can_still_write_its_report(tmp_path):
    """pytest writes its JUnit report on KeyboardInterrupt; a SIGKILL at the limit lost every test count. The
    check runs here from a parent that ignores and blocks SIGINT (a shell's background job; the full suite's
    pytest process, where this test first failed in CI): the part must get it all the same."""
    part = (
        "import sys, time\n"
        "print('started', flush=True)\n"
        "try:\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    print('interrupted: report written', flush=True)\n    sys.exit(2)\n"
    )
    log = tmp_path / "part.log"
    parent = (
        "import json, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
        f"sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
        "import device_check\n"
        f"print(json.dumps(device_check.run_logged([sys.executable, '-c', {part!r}], device_check.Path({str(log)!r}), 2.0)))\n"
    )
    done = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout)
    assert (
        result["timed_out"] and result["exit_status"] is None and result["wall_s"] < 15
    )  # not the 20 s grace
    assert log.read_text().splitlines() == ["started", "interrupted: report written"]


def test_a_part_that_ignores_sigint_is_killed_after_the_grace(device_check, tmp_path, monkeypatch):
    monkeypatch.setattr(device_check, "STOP_GRACE_S", 1.0)
    script = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)\n"
    result = device_check.run_logged([sys.executable, "-c", script], tmp_path / "part.log", timeout_s=1.0)
    assert result["timed_out"] and result["wall_s"] < 30


def test_each_finished_part_reaches_the_report_dir_before_the_next_starts(
    device_check, tmp_path, monkeypatch, capsys
):
    """The tests' figures are in $OUT before gpu_check starts; a part that raises is recorded as failed and the
    next part still runs; a check stopped from outside names the part it stopped in and those never reached;
    a part left out with --parts is a note."""
    out = tmp_path / "out"
    tests = {"tests": 3, "failures": 0, "errors": 0, "skipped": 0, "passed": 3, "timed_out": False}
    tests |= {"exit_status": 0, "failed": [], "command": "pytest", "wall_s": 1.0}
    monkeypatch.setattr(device_check, "run_tests", lambda cli, work: dict(tests))
    seen = {}

    def crash(cli, work):
        seen["before gpu_check"] = json.loads((out / "device_check.json").read_text())
        raise RuntimeError("the machine went away")

    monkeypatch.setattr(device_check, "run_gpu_check", crash)
    monkeypatch.setattr(
        device_check, "run_generation", lambda cli, work: {"status": "skipped: time budget (9 s left)"}
    )
    argv = ["--cpu-smoke", "--output_dir", str(tmp_path / "work"), "--report_dir", str(out)]
    report = device_check.main(argv)
    assert seen["before gpu_check"]["parts"]["tests"]["passed"] == 3
    assert seen["before gpu_check"]["parts"]["gpu_check"] == {"status": "started, did not finish"}
    assert json.loads((out / "device_check.json").read_text()) == report
    assert "Traceback" in capsys.readouterr().err
    assert device_check.verdict(report) == (
        ["gpu_check: failed: RuntimeError: the machine went away"],
        ["generation: skipped: time budget (9 s left)"],
    )
    assert "**Tests** (" in (out / "device_check.md").read_text()

    def stopped(cli, work):
        raise KeyboardInterrupt  # what SIGINT or the SIGTERM handler's SystemExit do in the middle of a part

    monkeypatch.setattr(device_check, "run_gpu_check", stopped)
    with pytest.raises(KeyboardInterrupt):
        device_check.main(argv)
    report = json.loads((out / "device_check.json").read_text())
    assert device_check.verdict(report) == (
        [
            "gpu_check: started, did not finish",
            "generation: not reached (the check was stopped before it)",
        ],
        [],
    )
    report = device_check.main([*argv, "--parts", "tests"])
    assert device_check.verdict(report) == (
        [],
        ["gpu_check: skipped: not asked (--parts)", "generation: skipped: not asked (--parts)"],
    )
    assert "skipped: not asked (--parts)" in (out / "device_check.md").read_text()


def test_a_generation_benchmark_that_crashes_after_one_cache_is_a_problem(device_check):
    crashed = _report(
        generation={"exit_status": 1, "timed_out": False, "report": {"caches": {"dynamic": {}}}}
    )
    assert device_check.verdict(crashed)[0] == ["generation: exit status 1 (finished: dynamic)"]


def test_gpu_check_with_no_time_left_is_not_started_and_is_a_problem(device_check, tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(device_check, "run_logged", lambda *a, **k: started.append(a))
    monkeypatch.setattr(device_check, "seconds_since_start", lambda: 420.0)
    cli = device_check.parse_args(["--budget_s", "480"])
    part = device_check.run_gpu_check(cli, tmp_path)  # 40 s to the deadline, a section needs 60
    assert started == [] and part == {"status": "skipped: time budget (40 s to gpu_check's deadline)"}
    assert device_check.verdict(_report(gpu_check=part))[0] == [
        "gpu_check: skipped: time budget (40 s to gpu_check's deadline)"
    ]
    everything_skipped = _report(
        gpu_check={"exit_status": 0, "report": {"sections": {"grpo": {"status": "skipped: time budget"}}}}
    )
    assert (
        "gpu_check: every section was skipped, so nothing was measured"
        in device_check.verdict(everything_skipped)[0]
    )


def test_an_earlier_calls_results_are_not_read_as_this_ones(device_check, tmp_path, monkeypatch):
    (tmp_path / "gpu_check").mkdir()
    (tmp_path / "gpu_check" / "gpu_check.json").write_text('{"sections": {"grpo": {"status": "ok"}}}')
    (tmp_path / "tests.xml").write_text(JUNIT)
    monkeypatch.setattr(
        device_check, "run_logged", lambda *a, **k: {"exit_status": 1, "wall_s": 1.0, "timed_out": False}
    )
    monkeypatch.setattr(device_check, "seconds_since_start", lambda: 0.0)
    cli = device_check.parse_args([])
    assert "report" not in device_check.run_gpu_check(cli, tmp_path)
    assert "tests" not in device_check.run_tests(cli, tmp_path)


def test_gpu_check_gets_the_budget_and_generation_only_what_it_reserves(device_check, tmp_path, monkeypatch):
    """Issue 35's targets need gpu_check's sections: its deadline is the budget's end less a gentle stop's
    grace, and less --generation_reserve_s only when asked for and the generation part runs."""
    seen = {}

    def fake_run(command, log, timeout_s):
        seen["command"], seen["timeout_s"] = command, timeout_s
        return {"exit_status": 0, "wall_s": 1.0, "timed_out": False}

    def deadline_in() -> float:
        command = seen["command"]
        return float(command[command.index("--deadline") + 1]) - device_check.time.time()

    monkeypatch.setattr(device_check, "run_logged", fake_run)
    monkeypatch.setattr(device_check, "seconds_since_start", lambda: 100.0)
    grace = device_check.STOP_GRACE_S
    device_check.run_gpu_check(
        device_check.parse_args(["--budget_s", "480", "--min_section_s", "75"]), tmp_path
    )
    assert deadline_in() == pytest.approx(480 - 100 - grace, abs=5)
    assert seen["command"][seen["command"].index("--min_section_s") + 1] == "75"
    assert seen["timeout_s"] == pytest.approx(480 - 100)  # SIGINT at the budget's end, if it overran
    device_check.run_gpu_check(device_check.parse_args(["--generation_reserve_s", "110"]), tmp_path)
    assert deadline_in() == pytest.approx(480 - 100 - grace - 110, abs=5)
    device_check.run_gpu_check(
        device_check.parse_args(["--generation_reserve_s", "110", "--parts", "gpu_check"]), tmp_path
    )
    assert deadline_in() == pytest.approx(480 - 100 - grace, abs=5)  # no generation part: nothing held back


def test_a_check_stopped_with_sigterm_still_writes_what_it_has(tmp_path):
    """The device tool stops a command at its limit; the report must still say where the check was."""
    out = tmp_path / "out"
    script = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
        "import device_check\n"
        "def slow(cli, work):\n    print('tests started', flush=True)\n    time.sleep(60)\n"
        "device_check.run_tests = slow\n"
        f"device_check.main(['--cpu-smoke', '--output_dir', {str(tmp_path / 'work')!r}, '--report_dir', {str(out)!r}])\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().startswith("[device_check] tests: starting")
    assert process.stdout.readline() == "tests started\n"
    process.terminate()
    assert process.wait(timeout=30) == 128 + 15
    report = json.loads((out / "device_check.json").read_text())
    assert report["parts"]["tests"] == {"status": "started, did not finish"}
    assert report["parts"]["gpu_check"] == {"status": "not reached"}


def test_the_report_dir_gets_no_log_of_a_part_this_call_did_not_start(device_check, tmp_path):
    """A second call on a warm machine (--parts gpu_check) must not bring back the first call's test log."""
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "gpu_check").mkdir(parents=True)
    for name in ("tests.log", "gpu_check.log", "generation.log"):
        (work / name).write_text("an earlier call's\n")
    (work / "gpu_check" / "gpu_check.json").write_text("{}")
    report = {
        "parts": {
            "tests": {"status": device_check.NOT_ASKED},
            "gpu_check": {"status": device_check.RUNNING},
            "generation": {"status": device_check.NOT_REACHED},
        },
        "requirements": {"missing": [], "mismatched": []},
    }
    device_check.write_report(report, work, str(out))
    assert sorted(p.name for p in out.iterdir()) == [
        "device_check.json",
        "device_check.md",
        "gpu_check.json",
        "gpu_check.log",
    ]
