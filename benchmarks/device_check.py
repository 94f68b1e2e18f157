"""One prepared device check (issue 35): tests, step-time breakdown and caches on a CUDA GPU, in one command.

    bash benchmarks/device_check.sh [--cpu-smoke] [--report_dir DIR] [--output_dir DIR] [--budget_s 480]
                                    [--parts tests gpu_check generation] [--sections ...]

``device_check.sh`` installs the carried wheels when the image lacks trl / datasets / math-verify, then runs
this script. It first checks that every requirement of psgrpo, and of each carried package
(``device_wheels.txt``) that psgrpo's requirements lead to, is installed (else one line per missing one, exit status 2, nothing run) and at a
version it admits (else a warning, in the report too). Then it runs, each in its own process and within
one time budget (``--budget_s``, counted from the shell script's start; default 480 s = 8 minutes):

1. **tests**: the fast suite (``pytest -m "not slow"``) with pytest-xdist (``-n --workers``, default 14 on
   16 cores); its counts and the ids of failed tests, from a JUnit XML file (``--tests_timeout_s`` caps it);
2. **gpu_check** (:mod:`gpu_check`) at the GSM8K recipe's shape, 2 steps per section, with
   ``--phase_times``: ``--sections`` (default grpo and stock TRL with the compiled static cache, then vps, ps
   and tree with it, then grpo and stock TRL with TRL's default dynamic cache, the issue's 20 s step), then
   the Liger sections (compiled cache too); gpu_check ends by its deadline, the budget's end less the 20 s
   grace of a gentle stop and ``--generation_reserve_s`` (0: the issue's targets come first): it starts a
   section only with ``--min_section_s`` or 1.25 × its longest section so far left, and is stopped
   (SIGINT, then SIGKILL) 20 s after the deadline;
3. **generation** (:mod:`bench_generation`): transformers' ``generate`` at 32 × 150-token prompts + 128
   new tokens, dynamic cache against compiled static cache, when at least ``--generation_min_s`` remain.

It writes ``device_check.json`` (every part's results and wall time, the environment) and
``device_check.md`` (the tests' line, gpu_check's tables with the per-phase breakdown and the stock-TRL
ratios, the generation table and the issue's step-time targets, each met, missed or not measured) to
``--output_dir``, and copies them with gpu_check's JSON and the three parts' logs to ``--report_dir`` (at
most 6 files, nothing nested: what the device tool's ``$OUT`` brings back), after every part, so a check
stopped from outside keeps the parts that finished. A part that fails or runs out of time is recorded as
such; the others still run. A part stopped at its time limit gets SIGINT first (pytest then still writes
its JUnit report), SIGKILL 20 s later.

``--cpu-smoke``: the same script on CPU, small: ``tests/test_timing.py`` with 2 xdist workers, gpu_check's
``--cpu-smoke`` shapes with 1 step per section, bench_generation's ``--cpu-smoke``. It checks the script,
not the GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import traceback
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from _args import POSITIVE_INT, POSITIVE_SECONDS, SECONDS
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"

GPU_SECTIONS = ["grpo-static", "trl-static", "vps-static", "ps-static", "tree-static", "grpo", "trl"]
"""gpu_check's sections on the GPU, most needed first (a section the budget leaves out is recorded as skipped):
the targets' sections with the compiled cache (grpo's step, stock TRL's at the same settings, vps (which crashed
on the first GPU), ps, tree), then TRL's default dynamic cache (the issue's 20 s step). Each section compiles
anew (gpu_check resets dynamo between sections)."""

SMOKE_TESTS = ["tests/test_timing.py"]

CARRIED = BENCHMARKS / "device_wheels.txt"
"""The packages that travel as wheels (``device_wheels.sh`` downloads them, ``device_check.sh`` installs them)."""

STEP_TARGET_S = 5.0
"""The issue's target for grpo's step at the recipe's shape on an H200-class GPU (s)."""

TARGETS: list[tuple[str, str, str, float]] = [
    ("grpo step ≤ 5 s", "grpo", "step_s", STEP_TARGET_S),
    ("ps ≤ 1.10 × grpo", "ps", "vs_grpo", 1.10),
    ("vps ≤ 1.10 × grpo", "vps", "vs_grpo", 1.10),
    ("tree ≤ 1.10 × grpo", "tree", "vs_grpo", 1.10),
    ("grpo ≤ 1.05 × stock TRL", "grpo", "vs_trl", 1.05),
    ("ps ≤ 1.05 × stock TRL", "ps", "vs_trl", 1.05),
    ("vps ≤ 1.05 × stock TRL", "vps", "vs_trl", 1.05),
    ("tree ≤ 1.05 × stock TRL", "tree", "vs_trl", 1.05),
]
"""``(target, method, summary key of gpu_check, bound)``: issue 35's step-time targets, checked per cache."""


def seconds_since_start() -> float:
    """Seconds since ``device_check.sh`` started (``$DEVICE_CHECK_STARTED``), else since this process did."""
    started = float(os.environ.get("DEVICE_CHECK_STARTED") or STARTED)
    return time.time() - started


STARTED = time.time()


PARTS = ("tests", "gpu_check", "generation")
NOT_REACHED = "not reached"
"""A part's status while the check has not reached it (what a report written before a stop from outside shows)."""
RUNNING = "started, did not finish"
"""A part's status while it runs: what the report says of it if the check is stopped from outside meanwhile."""
NOT_ASKED = "skipped: not asked (--parts)"

STOP_GRACE_S = 20.0
"""Seconds between the SIGINT that stops a part at its time limit and the SIGKILL that follows."""


def run_logged(command: list[str], log: Path, timeout_s: float) -> dict[str, Any]:
    """Run ``command`` with its output in ``log``; its exit status (``None`` when stopped at ``timeout_s``) and wall s.

    At ``timeout_s`` the process gets SIGINT, so that pytest still writes its JUnit report and gpu_check
    stops between writes, and SIGKILL :data:`STOP_GRACE_S` later if it has not ended.
    """
    start = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # a part killed mid-way keeps its last lines in the log
    with log.open("w") as out:
        # its own process group, so that what it started (xdist workers, a Liger child) goes with it; SIGINT
        # deliverable there whatever this process had (a shell's background job, a pytest run: ignored or
        # blocked, which Python keeps, and the part could then only be killed, its report lost)
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=deliverable_sigint,
        )
        status: int | None = None
        try:
            status = process.wait(timeout=max(timeout_s, 1.0))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)  # the part itself: pytest's controller stops its workers
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=STOP_GRACE_S)
        finally:  # at the limit, or this check stopped (SIGTERM, Ctrl-C): nothing of the part outlives it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return {"exit_status": status, "wall_s": time.perf_counter() - start, "timed_out": status is None}


def deliverable_sigint() -> None:
    """In a part's process before it runs: SIGINT neither ignored nor blocked, so Python raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def read_json(path: Path, result: dict[str, Any]) -> None:
    """``result["report"]`` from the JSON a part wrote, when it did; an unreadable one is ``report_error``."""
    if not path.is_file():
        return
    try:
        result["report"] = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        result["report_error"] = f"{path.name}: {type(error).__name__}: {error}"


def parse_junit(path: Path) -> dict[str, Any]:
    """Counts of a pytest JUnit XML report (tests, failures, errors, skipped, passed, seconds) and the failed ids."""
    root = ElementTree.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {
        key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")
    }
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in root.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return {
        **counts,
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        "seconds": sum(float(s.get("time", 0.0)) for s in suites),
        "failed": failed,
    }


def run_tests(cli: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The fast suite (or ``--tests``) with xdist when it imports; counts from its JUnit report."""
    xml, log = work / "tests.xml", work / "tests.log"
    xml.unlink(missing_ok=True)  # an earlier call's report must not pass for this one's
    xdist = importlib.util.find_spec("xdist") is not None
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "not slow",
        "-p",
        "no:cacheprovider",
        f"--junitxml={xml}",
    ]
    if xdist and cli.workers > 1:
        command += ["-n", str(cli.workers)]
    command += cli.tests or (SMOKE_TESTS if cli.smoke else [])
    result = run_logged(command, log, min(cli.tests_timeout_s, budget_left(cli)))
    result |= {"command": " ".join(command[1:]), "xdist": xdist}
    if xml.is_file():
        try:
            result |= parse_junit(xml)
        except ElementTree.ParseError as error:  # written half when pytest was killed
            result["report_error"] = f"{xml.name}: {error}"
    return result


def carried_names(path: Path = CARRIED) -> list[str]:
    """The canonical names of the packages pinned in ``device_wheels.txt`` (comments and blank lines skipped)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [canonicalize_name(Requirement(line).name) for line in lines if line]


def requirement_problems(
    requirements: list[str], carried: set[str], needed_by: str = "psgrpo"
) -> tuple[list[str], list[str]]:
    """What ``requirements`` and, through them, the carried packages' own requirements need that this Python lacks.

    Walks the requirements of ``needed_by`` (e.g. pyproject.toml's ``dependencies``) and of every carried
    package they reach, with the extras asked of it (``math-verify[antlr4_13_2]`` reaches antlr4's pin);
    markers are evaluated for this Python. The image's own packages are checked for presence and version,
    not walked into. Returns ``(missing, mismatched)``, one line each: ``"dill>=0.3.0 (needed by datasets)"``
    and ``"fsspec<=2026.9.0 (needed by datasets): 2026.10.0 installed"``.
    """
    missing: list[str] = []
    mismatched: list[str] = []
    todo = [(Requirement(r), needed_by) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        requirement, parent = todo.pop(0)
        extras = {canonicalize_name(e) for e in requirement.extras}
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{requirement} (needed by {parent})")
            continue
        if requirement.specifier and not requirement.specifier.contains(
            distribution.version, prereleases=True
        ):
            mismatched.append(f"{requirement} (needed by {parent}): {distribution.version} installed")
        if name not in carried or (name, frozenset(extras)) in seen:
            continue
        seen.add((name, frozenset(extras)))
        for line in distribution.requires or []:
            sub = Requirement(line)
            if sub.marker is not None and not any(
                sub.marker.evaluate({"extra": extra}) for extra in extras | {""}
            ):
                continue
            sub.marker = None
            todo.append((sub, name))
    return list(dict.fromkeys(missing)), list(dict.fromkeys(mismatched))  # reached twice: one line


def stale_wheels(folder: Path, path: Path = CARRIED) -> list[str]:
    """How the wheels in ``folder`` differ from the pins of ``device_wheels.txt``: one line per pin without
    its wheel, per wheel of another version and per wheel nobody pinned (empty when they agree)."""
    pins = {}
    for line in path.read_text().splitlines():
        if text := line.split("#", 1)[0].strip():
            requirement = Requirement(text)
            pins[canonicalize_name(requirement.name)] = next(iter(requirement.specifier)).version
    found = {}
    for wheel in sorted(folder.glob("*.whl")):
        name, version, *_ = parse_wheel_filename(wheel.name)
        found[canonicalize_name(name)] = str(version)
    lines = [f"{name}=={pins[name]}: no wheel" for name in pins if name not in found]
    lines += [
        f"{name}=={pins[name]}: the wheel is {version}"
        for name, version in found.items()
        if name in pins and version != pins[name]
    ]
    lines += [
        f"{name} {version}: a wheel nobody pinned" for name, version in found.items() if name not in pins
    ]
    return lines


def check_requirements() -> dict[str, list[str]]:
    """:func:`requirement_problems` for psgrpo's dependencies (pyproject.toml) and the carried packages."""
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    missing, mismatched = requirement_problems(dependencies, set(carried_names()))
    return {"missing": missing, "mismatched": mismatched}


def budget_left(cli: argparse.Namespace) -> float:
    return cli.budget_s - seconds_since_start()


def run_gpu_check(cli: argparse.Namespace, work: Path) -> dict[str, Any]:
    """gpu_check in its own process; its report (rewritten after every section, so a cut-short run keeps some)."""
    out = work / "gpu_check"
    for stale in (
        out / "gpu_check.json",
        out / "gpu_check.md",
    ):  # an earlier call's sections are not this one's
        stale.unlink(missing_ok=True)
    # stopped gently at the deadline, gpu_check still ends by the budget's end (less what generation keeps)
    reserve = cli.generation_reserve_s if "generation" in cli.parts else 0.0
    until_deadline = budget_left(cli) - STOP_GRACE_S - reserve
    if until_deadline < cli.min_section_s:
        return {"status": f"skipped: time budget ({until_deadline:.0f} s to gpu_check's deadline)"}
    command = [
        sys.executable,
        str(BENCHMARKS / "gpu_check.py"),
        "--output_dir",
        str(out),
        "--steps",
        str(cli.steps),
    ]
    command += ["--sections", *cli.sections, "--optional", *cli.optional]
    if cli.optional:
        command += ["--optional_methods", *cli.optional_methods, "--optional_compiled"]
    command += ["--time_budget_s", f"{max(until_deadline, 0.0):.0f}"]
    command += [
        "--deadline",
        f"{time.time() + until_deadline:.1f}",
        "--min_section_s",
        f"{cli.min_section_s:g}",
    ]
    command += ["--cpu-smoke"] if cli.smoke else []
    result = run_logged(command, work / "gpu_check.log", until_deadline + STOP_GRACE_S)
    result["command"] = " ".join(command[1:])
    result["requested"] = list(cli.sections)
    read_json(out / "gpu_check.json", result)
    return result


def run_generation(cli: argparse.Namespace, work: Path) -> dict[str, Any]:
    """bench_generation in its own process, when at least ``--generation_min_s`` of the budget is left."""
    left = budget_left(cli)
    if left < cli.generation_min_s:
        return {"status": f"skipped: time budget ({left:.0f} s left)"}
    output = work / "generation.json"
    output.unlink(missing_ok=True)
    command = [sys.executable, str(BENCHMARKS / "bench_generation.py"), "--output", str(output)]
    command += ["--new_tokens", str(cli.new_tokens), "--repeats", "1"]
    command += (
        ["--cpu-smoke", "--batch", "4", "--prompt_tokens", "16", "--new_tokens", "8"] if cli.smoke else []
    )
    result = run_logged(command, work / "generation.log", left - 5 - STOP_GRACE_S)
    result["command"] = " ".join(command[1:])
    read_json(output, result)
    return result


def target_rows(summary: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Each of :data:`TARGETS` for the static and the dynamic cache: measured value, bound, met (None: not run)."""
    rows = []
    for cache, suffix in (("static", "-static"), ("dynamic", "")):
        for target, method, key, bound in TARGETS:
            value = summary.get(f"{method}{suffix}", {}).get(key)
            met = None if value is None else value <= bound
            rows.append({"target": target, "cache": cache, "value": value, "bound": bound, "met": met})
    return rows


def environment() -> dict[str, Any]:
    """Python, the CPU count, the installed versions of the packages that matter, and the GPU's name."""
    env: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    for package in ("torch", "transformers", "trl", "accelerate", "datasets", "math-verify", "liger-kernel"):
        try:
            env[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:  # reported, not fatal: the parts that need it say so
            env[package] = "missing"
    import torch

    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def verdict(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of a device_check.json: a part that failed, and what did not run or warned.

    A problem: tests that failed, errored, timed out or did not report; a gpu_check section that failed, or
    gpu_check itself stopped or unreadable; a part the check never reached (it was stopped from outside). A
    note: a section or part skipped (no CUDA, the time budget, a package that does not import, ``--parts``),
    the generation benchmark stopped at the budget, and a requirement at a version its dependant does not admit.
    """
    problems: list[str] = []
    notes = [f"requirement not met: {line}" for line in report.get("requirements", {}).get("mismatched", [])]
    for name, part in report["parts"].items():
        status = part.get("status")
        if status == NOT_REACHED:
            problems.append(f"{name}: not reached (the check was stopped before it)")
        elif status == RUNNING or str(status).startswith("failed"):
            problems.append(f"{name}: {status}")
        elif status == NOT_ASKED:
            notes.append(f"{name}: {NOT_ASKED}")
        else:
            check = {
                "tests": _tests_verdict,
                "gpu_check": _gpu_check_verdict,
                "generation": _generation_verdict,
            }
            part_problems, part_notes = check[name](part)
            problems += part_problems
            notes += part_notes
    return problems, notes


def _tests_verdict(tests: dict[str, Any]) -> tuple[list[str], list[str]]:
    if "tests" not in tests:
        why = tests.get("report_error") or f"exit status {tests.get('exit_status')}"
        return [f"tests: no report ({why})"], []
    problems = []
    if tests["failures"] or tests["errors"]:
        problems.append(f"tests: {tests['failures']} failed, {tests['errors']} errors: {tests['failed'][:5]}")
    if tests["timed_out"]:
        problems.append("tests: timed out")
    elif tests.get("exit_status") not in (0, None) and not (tests["failures"] or tests["errors"]):
        problems.append(f"tests: exit status {tests['exit_status']} with no failed test")
    if tests["passed"] == 0:
        problems.append("tests: none passed")
    return problems, []


def _gpu_check_verdict(gpu: dict[str, Any]) -> tuple[list[str], list[str]]:
    problems, notes = [], []
    if "status" in gpu:  # not started: the budget left no section time
        return [f"gpu_check: {gpu['status']}"], []
    sections = gpu.get("report", {}).get("sections", {})
    if gpu.get("report_error"):
        problems.append(f"gpu_check: unreadable report ({gpu['report_error']})")
    if not sections:
        problems.append(f"gpu_check: no report (exit status {gpu.get('exit_status')})")
    elif all(section.get("status", "").startswith("skipped") for section in sections.values()):
        problems.append("gpu_check: every section was skipped, so nothing was measured")
    elif gpu.get("timed_out"):
        running = next((name for name in gpu.get("requested", []) if name not in sections), None)
        during = f" during {running}" if running else ""
        problems.append(
            f"gpu_check: stopped at the time budget{during}; its report holds the sections that finished"
        )
    elif gpu.get("exit_status") not in (0, None):
        problems.append(f"gpu_check: exit status {gpu['exit_status']}")
    notes += [f"gpu_check {name}: not run" for name in gpu.get("requested", []) if name not in sections]
    for name, section in sections.items():
        status = section.get("status", "no status")
        if status.startswith("skipped"):
            notes.append(f"gpu_check {name}: {status}")
        elif status != "ok":
            problems.append(f"gpu_check {name}: {status}")
    return problems, notes


def _generation_verdict(generation: dict[str, Any]) -> tuple[list[str], list[str]]:
    finished = ", ".join(generation.get("report", {}).get("caches", {})) or "none"
    if generation.get("timed_out"):  # a benchmark of transformers, last in the budget: a cut is not a failure
        return [], [f"generation: stopped at the time budget (finished: {finished})"]
    if generation.get("exit_status") not in (0, None):  # its JSON is written per cache: it may hold some
        return [f"generation: exit status {generation['exit_status']} (finished: {finished})"], []
    if "report" not in generation:
        status = generation.get("status", f"no report (exit status {generation.get('exit_status')})")
        return (
            ([], [f"generation: {status}"])
            if status.startswith("skipped")
            else ([f"generation: {status}"], [])
        )
    return [], []


def markdown(report: dict[str, Any]) -> str:
    """device_check.md: tests, gpu_check's tables, generation, targets."""
    # here, not at the top: _common imports trl, datasets and math_verify, and a missing one must reach
    # check_requirements' one line, not an ImportError when this script loads
    from _common import markdown_table

    env, parts = report["environment"], report["parts"]
    lines = [f"# Device check ({'CPU smoke' if report['smoke'] else env.get('gpu', 'no GPU')})", ""]
    lines += [
        f"{json.dumps(env)}; total {report['wall_s']:.0f} s of a {report['budget_s']:.0f} s budget.",
        "",
    ]
    lines += [f"- requirement not met: `{line}`" for line in report["requirements"]["mismatched"]]
    tests = parts["tests"]
    if "tests" in tests:
        lines.append(
            f"**Tests** (`{tests['command']}`): {tests['passed']} passed, {tests['failures']} failed, "
            f"{tests['errors']} errors, {tests['skipped']} skipped in {tests['wall_s']:.0f} s"
            + (" (timed out)" if tests["timed_out"] else "")
        )
        lines += [f"- failed: `{name}`" for name in tests["failed"][:40]]
    else:
        why = tests.get("status") or f"no report (exit status {tests.get('exit_status')}; see tests.log)"
        lines.append(f"**Tests**: {why}")
    gpu = parts["gpu_check"]
    lines += ["", f"## gpu_check (`{gpu.get('command', '')}`)", ""]
    gpu_md = Path(report["output_dir"]) / "gpu_check" / "gpu_check.md"
    lines.append(
        gpu_md.read_text()
        if gpu_md.is_file() and "status" not in gpu
        else gpu.get("status", f"no table (exit status {gpu.get('exit_status')})")
    )
    generation = parts["generation"]
    lines += ["", "## transformers generate: dynamic vs compiled static cache", ""]
    if generation.get("report", {}).get("caches"):
        gen = generation["report"]
        rows = [
            [cache, f"{r['first_call_s']:.1f}", f"{r['median_call_s']:.2f}", f"{r['ms_per_token']:.1f}"]
            for cache, r in gen["caches"].items()
        ]
        lines.append(f"{gen['device']}, {gen['shape']}")
        lines += ["", markdown_table(["cache", "first call s", "call s", "ms / token"], rows)]
    else:
        lines.append(generation.get("status", f"no report (exit status {generation.get('exit_status')})"))
    lines += ["", "## Issue 35's step-time targets (last step of each section)", ""]
    if report["smoke"]:
        lines += ["CPU smoke: tiny shapes on a CPU, so met / missed says nothing about the targets.", ""]
    rows = [
        [
            t["target"],
            t["cache"],
            "" if t["value"] is None else f"{t['value']:.2f}",
            {True: "met", False: "missed", None: "not measured"}[t["met"]],
        ]
        for t in report["targets"]
        if t["cache"] == "static" or t["met"] is not None  # the dynamic cache: only what ran
    ]
    lines.append(markdown_table(["target", "cache", "measured", ""], rows))
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cpu-smoke", dest="smoke", action="store_true", help="the script on CPU, small")
    parser.add_argument(
        "--output_dir", default=str(REPO / "outputs" / "device_check"), help="work and results"
    )
    parser.add_argument("--report_dir", default=None, help="also copy the result files here (e.g. $OUT)")
    parser.add_argument(
        "--budget_s", type=POSITIVE_SECONDS, default=480.0, help="the whole check's time budget (480)"
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=list(PARTS),
        choices=PARTS,
        help="the parts to run (all three; e.g. a second call for the gpu_check sections a budget cut: "
        "--parts gpu_check --sections grpo-static trl-static tree-static grpo trl; ratios compare sections of one call)",
    )
    parser.add_argument("--workers", type=POSITIVE_INT, default=None, help="xdist workers (14; smoke: 2)")
    parser.add_argument("--tests", nargs="*", default=None, help="test paths (default: the fast suite)")
    parser.add_argument(
        "--tests_timeout_s", type=POSITIVE_SECONDS, default=170.0, help="cap on the test part (170)"
    )
    parser.add_argument("--sections", nargs="+", default=None, help="gpu_check's sections (see module doc)")
    parser.add_argument("--optional", nargs="*", default=["liger"], help="gpu_check's optional backends")
    parser.add_argument("--optional_methods", nargs="+", default=["grpo", "vps", "ps"])
    parser.add_argument(
        "--steps", type=POSITIVE_INT, default=None, help="steps per gpu_check section (2; smoke: 1)"
    )
    parser.add_argument(
        "--min_section_s",
        type=SECONDS,
        default=60.0,
        help="gpu_check starts a section only with this long, or 1.25 × its longest so far, to its deadline (60)",
    )
    parser.add_argument(
        "--generation_min_s",
        type=SECONDS,
        default=90.0,
        help="bench_generation runs only with this much of the budget left after gpu_check (90)",
    )
    parser.add_argument(
        "--generation_reserve_s",
        type=SECONDS,
        default=0.0,
        help="seconds of the budget gpu_check's deadline leaves for bench_generation (0: gpu_check's sections, "
        "which issue 35's targets need, come first; bench_generation runs with what they leave)",
    )
    parser.add_argument(
        "--new_tokens", type=POSITIVE_INT, default=128, help="bench_generation's new tokens (128)"
    )
    parser.add_argument(
        "--check_wheels",
        metavar="DIR",
        default=None,
        help="run nothing: say how the wheels in DIR differ from device_wheels.txt's pins; exit 1 if they do",
    )
    parser.add_argument(
        "--verify",
        metavar="REPORT",
        default=None,
        help="run nothing: read a device_check.json, print what failed or did not run; exit 1 if a part failed",
    )
    cli = parser.parse_args(argv)
    if cli.workers is None:
        cli.workers = 2 if cli.smoke else min(14, max((os.cpu_count() or 2) - 2, 1))
    if cli.steps is None:
        cli.steps = 1 if cli.smoke else 2
    if cli.sections is None:
        cli.sections = GPU_SECTIONS
    return cli


def verify(path: Path) -> int:
    """Print :func:`verdict` of a device_check.json; 0 when no part failed, 1 otherwise, 2 when unreadable."""
    try:
        report = json.loads(path.read_text())
        problems, notes = verdict(report)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(
            f"device_check: --verify {path}: not a device_check.json ({type(error).__name__}: {error})",
            file=sys.stderr,
        )
        return 2
    for line in notes:
        print(f"device_check: note: {line}")
    for line in problems:
        print(f"device_check: FAILED: {line}", file=sys.stderr)
    if not problems:
        print(f"device_check: {path}: every part that ran passed")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> dict[str, Any]:
    cli = parse_args(argv)
    if cli.verify:
        raise SystemExit(verify(Path(cli.verify)))
    if cli.check_wheels:
        if not Path(cli.check_wheels).is_dir():
            print(
                f"device_check: --check_wheels {cli.check_wheels}: no such folder; run 'bash benchmarks/device_wheels.sh'",
                file=sys.stderr,
            )
            raise SystemExit(2)
        stale = stale_wheels(Path(cli.check_wheels))
        for line in stale:
            print(
                f"device_check: {cli.check_wheels}: {line}; run 'bash benchmarks/device_wheels.sh'",
                file=sys.stderr,
            )
        raise SystemExit(1 if stale else 0)
    requirements = check_requirements()
    if requirements["missing"]:  # nothing could run: say what to carry, before any part spends the budget
        for line in requirements["missing"]:
            print(
                f"device_check: {line} is not installed: add it to benchmarks/device_wheels.txt, run "
                "'bash benchmarks/device_wheels.sh' where PyPI is reachable and carry .cache again",
                file=sys.stderr,
            )
        raise SystemExit(2)
    for line in requirements["mismatched"]:
        print(f"device_check: warning: {line}; the parts run anyway", file=sys.stderr, flush=True)
    work = Path(cli.output_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "smoke": cli.smoke,
        "budget_s": cli.budget_s,
        "output_dir": str(work),
        "environment": environment(),
        "requirements": requirements,
        "parts": {},
    }
    runners = {"tests": run_tests, "gpu_check": run_gpu_check, "generation": run_generation}
    parts = [(name, runners[name]) for name in PARTS if name in cli.parts]
    for name in PARTS:  # a part not reached (the check stopped from outside) reads as such
        report["parts"][name] = {"status": NOT_REACHED if name in cli.parts else NOT_ASKED}
    # a stop from outside still runs the finally below (the handler is this call's only: main() may be a library call)
    previous_handler = signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        for name, part in parts:
            report["parts"][name] = {"status": RUNNING}
            write_report(report, work, cli.report_dir)
            print(f"[device_check] {name}: starting at {seconds_since_start():.0f} s", flush=True)
            try:
                report["parts"][name] = part(cli, work)
            except Exception as error:  # recorded; the next parts still run
                traceback.print_exc()
                report["parts"][name] = {"status": f"failed: {type(error).__name__}: {error}"}
            shown = {k: v for k, v in report["parts"][name].items() if k not in ("report", "failed")}
            print(f"[device_check] {name}: {json.dumps(shown)}", flush=True)
    finally:  # whatever happened, what finished reaches --report_dir
        signal.signal(signal.SIGTERM, previous_handler)
        text = write_report(report, work, cli.report_dir)
    print("\n" + text, flush=True)
    return report


def stop_on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM as ``SystemExit``, so that the report of what finished is still written and copied."""
    raise SystemExit(128 + signum)


def write_report(report: dict[str, Any], work: Path, report_dir: str | None) -> str:
    """Write device_check.json and .md (the targets from gpu_check's summary so far), copy them with gpu_check's
    JSON and the logs to ``report_dir``; return the markdown (a one-line note if it could not be made).

    A part's files are copied only once it has started in this call: on a machine still warm from an earlier
    call, ``output_dir`` holds that call's logs, which must not come back as this one's."""
    summary = report["parts"]["gpu_check"].get("report", {}).get("summary", {})
    report["targets"] = target_rows(summary)
    report["wall_s"] = seconds_since_start()
    (work / "device_check.json").write_text(json.dumps(report, indent=2) + "\n")
    try:
        text = markdown(report)
    except Exception as error:  # the JSON above holds every figure; the table is a view of it
        text = f"device_check.md could not be made ({type(error).__name__}: {error}); see device_check.json\n"
    (work / "device_check.md").write_text(text)
    if report_dir:
        target = Path(report_dir)
        target.mkdir(parents=True, exist_ok=True)
        started = {
            name
            for name, part in report["parts"].items()
            if part.get("status") not in (NOT_ASKED, NOT_REACHED)
        }
        part_files = {
            "gpu_check": [work / "gpu_check" / "gpu_check.json", work / "gpu_check.log"],
            "tests": [work / "tests.log"],
            "generation": [work / "generation.log"],
        }
        sources = [work / "device_check.json", work / "device_check.md"]
        sources += [path for name, paths in part_files.items() if name in started for path in paths]
        for source in sources:
            if source.is_file():
                shutil.copy(source, target / source.name)
    return text


if __name__ == "__main__":
    main()
