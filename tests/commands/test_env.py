"""``psgrpo env``: the version checks are pure and right, the report names every package, a broken torch or a
bad override is a problem line and not a crash, and GPU machines (simulated here) are described from torch's
answers."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from psgrpo.commands import env as env_command
from psgrpo.commands.cli import main
from psgrpo.commands.env import (
    TESTED,
    collect,
    declared_requirements,
    format_report,
    newer_than_tested,
    version_problems,
)

ROOT = Path(__file__).resolve().parents[2]
TORCH = importlib.metadata.version(
    "torch"
)  # the distribution's version: PyPI's CUDA builds have no "+cu130" here

REQUIREMENTS = [
    "trl<1.17,>=1.16",
    "transformers<6,>=5.6",
    "torch>=2.11",
    'peft>=0.15; extra == "peft"',
    'deepspeed>=0.16; extra == "deepspeed"',
    'tomli>=2; python_version < "3.0"',
]


# ---- the checks, pure ----


def test_versions_inside_every_range_are_no_problem():
    installed = {
        "trl": "1.16.0",
        "transformers": "5.25.0",
        "torch": "2.13.0+cpu",
        "peft": "0.21.2",
        "deepspeed": None,
    }
    assert version_problems(REQUIREMENTS, installed) == []


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ({"transformers": "5.3.0"}, "transformers 5.3.0 is installed; psgrpo needs transformers<6,>=5.6"),
        ({"trl": "1.17.0"}, "trl 1.17.0 is installed; psgrpo needs trl<1.17,>=1.16"),
        ({"torch": "2.10.0+cu128"}, "torch 2.10.0+cu128 is installed; psgrpo needs torch>=2.11"),
        ({"trl": None}, "trl is not installed; psgrpo needs trl<1.17,>=1.16"),
        (
            {"peft": "0.14.0"},
            "peft 0.14.0 is installed; psgrpo needs peft>=0.15",
        ),  # an extra, installed: checked
        ({"trl": "not-a-version"}, "trl not-a-version is installed; psgrpo needs trl<1.17,>=1.16"),
    ],
)
def test_a_version_outside_its_range_or_a_missing_requirement_is_one_line(installed, expected):
    base = {"trl": "1.16.0", "transformers": "5.25.0", "torch": "2.13.0", "peft": None, "deepspeed": None}
    assert version_problems(REQUIREMENTS, {**base, **installed}) == [expected]


def test_missing_extras_and_requirements_for_another_python_are_not_problems():
    installed = {"trl": "1.16.0", "transformers": "5.6.0", "torch": "2.11.0", "peft": None, "deepspeed": None}
    assert version_problems(REQUIREMENTS, installed) == []


def test_what_a_requirement_s_extras_pull_in_is_checked_down_the_chain():
    """math-verify[antlr4_13_2] pins the ANTLR runtime through latex2sympy2_extended's extra; a wrong one breaks
    ``import math_verify`` while every direct requirement looks fine."""
    math_verify = [r for r in declared_requirements() if Requirement(r).name == "math-verify"]
    assert version_problems(math_verify, {}) == []  # this environment, as pip installed it
    wrong = {"antlr4-python3-runtime": "4.9.3"}
    assert version_problems(math_verify, wrong) == [
        "antlr4-python3-runtime 4.9.3 is installed; latex2sympy2_extended[antlr4_13_2] needs "
        "antlr4-python3-runtime==4.13.2"
    ]
    assert version_problems(math_verify, wrong, through_extras=False) == []


@pytest.mark.parametrize(
    ("versions", "newer"),
    [
        ({"transformers": "5.25.9"}, []),  # a patch of the newest tested minor: tested
        ({"transformers": "5.26.0"}, ["transformers 5.26.0 is newer than the newest tested (5.25): allowed, untested"]),
        ({"torch": "2.16.0.dev20270101+cu130"}, ["torch 2.16.0.dev20270101+cu130 is newer than the newest tested (2.15): allowed, untested"]),
        ({"python": "3.15.0"}, ["python 3.15.0 is newer than the newest tested (3.14): allowed, untested"]),
        ({"transformers": "5.6.0", "torch": "2.11.0+cu130", "python": "3.11.7"}, []),
        ({"transformers": "garbage", "trl": None}, []),
    ],
)  # fmt: skip
def test_a_release_newer_than_the_newest_tested_is_a_note(versions, newer):
    assert newer_than_tested(versions) == newer


def test_the_readme_states_the_tested_ranges_env_checks():
    readme = " ".join((ROOT / "README.md").read_text().split())
    sentence = readme[readme.index("Tested versions:") :]
    stated = {
        name.lower(): (low, high)
        for name, low, high in re.findall(r"(\w+) (\d+\.\d+) to (\d+\.\d+)", sentence)
    }
    assert {k: v for k, v in TESTED.items() if k != "trl"} == {k: stated[k] for k in TESTED if k != "trl"}
    low, high = TESTED["trl"]
    assert low == high and f"trl {low}.x" in sentence


# ---- where the ranges come from ----


def test_the_ranges_come_from_the_clone_s_pyproject_else_from_the_installed_metadata(tmp_path):
    from_clone = declared_requirements()  # this checkout: its pyproject.toml, even if the install is older
    assert from_clone == declared_requirements(ROOT / "psgrpo")
    assert {canonicalize_name(Requirement(r).name) for r in from_clone} >= {"trl", "transformers", "torch"}
    installed = list(importlib.metadata.requires("psgrpo") or [])
    assert declared_requirements(tmp_path / "psgrpo") == installed  # no pyproject.toml beside it
    other = tmp_path / "other"
    (other / "psgrpo").mkdir(parents=True)
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\ndependencies = ["numpy"]\n')
    assert declared_requirements(other / "psgrpo") == installed  # another project's file: not ours


def test_an_extra_with_its_own_marker_keeps_both(tmp_path):
    (tmp_path / "psgrpo").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "psgrpo"\ndependencies = ["trl>=1.16,<1.17"]\n'
        "[project.optional-dependencies]\nvllm = [\"vllm>=0.10; python_version < '3.14'\"]\n"
    )
    lines = declared_requirements(tmp_path / "psgrpo")
    marker = Requirement(lines[1]).marker
    assert marker.evaluate({"extra": "vllm", "python_version": "3.12"})
    assert not marker.evaluate({"extra": "vllm", "python_version": "3.14"})
    assert not marker.evaluate({"extra": "", "python_version": "3.12"})


# ---- the command ----


def test_env_prints_every_required_package_and_no_problem_in_the_test_environment(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    for requirement in declared_requirements():
        parsed = Requirement(requirement)
        if parsed.marker is None:
            assert f"- {canonicalize_name(parsed.name)}: " in out
    assert "Problems: none." in out
    assert f"- torch: {TORCH}" in out


def test_env_json_is_one_object_with_the_same_facts(capsys):
    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["packages"]["torch"] == TORCH and info["problems"] == []
    assert info["python"] == ".".join(map(str, sys.version_info[:3]))
    assert (
        "pytest" not in info["optional"] and "pytest" not in info["packages"]
    )  # the dev extra: not reported


def test_problems_and_notes_reach_the_report(monkeypatch):
    real = env_command._installed
    monkeypatch.setattr(env_command, "_installed", lambda n: "5.3.0" if n == "transformers" else real(n))
    monkeypatch.setattr(env_command, "TESTED", {"torch": ("2.0", "2.1")})
    report = format_report(collect())
    assert "Problems:\n- transformers 5.3.0 is installed; psgrpo needs transformers<6,>=5.6" in report
    assert f"Notes:\n- torch {TORCH} is newer than the newest tested (2.1): allowed, untested" in report


def test_a_version_above_its_declared_range_is_a_problem_not_also_a_note(monkeypatch):
    real = env_command._installed
    monkeypatch.setattr(env_command, "_installed", lambda n: "1.17.0" if n == "trl" else real(n))
    info = collect()
    assert (
        info["problems"] == ["trl 1.17.0 is installed; psgrpo needs trl<1.17,>=1.16"] and info["notes"] == []
    )


def test_a_bad_native_bf16_override_is_a_problem_and_a_good_one_is_named(monkeypatch):
    monkeypatch.setenv("PSGRPO_NATIVE_BF16", "maybe")
    info = collect()
    assert info["cpu"]["native_bf16"] is None  # the JSON field stays a boolean or null
    assert "- native bf16 cannot be decided: ValueError: $PSGRPO_NATIVE_BF16 must be 1 or 0" in format_report(
        info
    )
    monkeypatch.setenv("PSGRPO_NATIVE_BF16", "0")
    report = format_report(collect())
    assert "native bf16: no (set by $PSGRPO_NATIVE_BF16=0)" in report and "Problems: none." in report


def _gpus(monkeypatch, gpus, cuda="13.0", hip=None):
    """torch's answers for ``gpus``, ``[(name, GiB, (major, minor))]``, on a CUDA (or ROCm) build."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: bool(gpus))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(gpus))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: gpus[i][0])
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: gpus[i][2])
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=gpus[i][1] * 2**30)
    )
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setattr(torch.version, "hip", hip, raising=False)


def test_a_cuda_machine_is_described_from_torch(monkeypatch):
    """No GPU here: torch's answers are those of one H200 with a CUDA 13.0 build."""
    _gpus(monkeypatch, [("NVIDIA H200", 139.8, (9, 0))])
    report = format_report(collect())
    assert (
        "- GPUs: 1× NVIDIA H200 (139.8 GiB, capability 9.0, bf16: yes); torch built for CUDA 13.0" in report
    )


def test_identical_gpus_are_grouped_and_bf16_is_per_gpu(monkeypatch):
    _gpus(
        monkeypatch,
        [("NVIDIA H100", 79.1, (9, 0)), ("Tesla V100", 31.7, (7, 0)), ("NVIDIA H100", 79.1, (9, 0))],
    )
    assert (
        "- GPUs: 2× NVIDIA H100 (79.1 GiB, capability 9.0, bf16: yes), 1× Tesla V100 (31.7 GiB, capability 7.0, "
        "bf16: no); torch built for CUDA 13.0"
    ) in format_report(collect())


def test_rocm_and_cpu_builds_are_named_for_what_they_are(monkeypatch):
    _gpus(monkeypatch, [], cuda=None, hip="6.2")
    assert "- GPUs: none visible (torch built for ROCm 6.2)" in format_report(collect())
    _gpus(monkeypatch, [], cuda=None)
    assert "- GPUs: none visible (a CPU build of torch)" in format_report(collect())


def _run_env(prelude: str) -> subprocess.CompletedProcess[str]:
    """``psgrpo env`` in a fresh Python after ``prelude`` (which breaks something)."""
    code = f"import sys\n{prelude}\nfrom psgrpo.commands.cli import main\nsys.exit(main(['env']))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_env_runs_where_trl_transformers_and_datasets_do_not_import():
    """A bug report is most needed where the environment is broken: ``psgrpo env`` imports none of them."""
    result = _run_env(
        "for name in ('trl', 'transformers', 'datasets', 'accelerate'):\n    sys.modules[name] = None"
    )
    assert result.returncode == 0, result.stderr
    assert "- trl: " in result.stdout and "Problems: none." in result.stdout


def test_env_reports_a_torch_that_does_not_import_instead_of_failing():
    """Where torch is broken (a missing CUDA library) a report is what the user needs: one, with the error."""
    result = _run_env(
        "class Broken:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch':\n            raise OSError('libcudnn.so.9: cannot open shared object file')\n"
        "sys.meta_path.insert(0, Broken())"
    )
    assert result.returncode == 0, result.stderr
    assert f"- torch {TORCH} is installed but does not import: OSError: libcudnn.so.9" in result.stdout
    assert "- GPUs: unknown, torch does not import (OSError: libcudnn.so.9" in result.stdout


def test_version_flag_prints_the_version_without_importing_torch():
    code = "import sys; from psgrpo.commands.cli import main; rc = main(['--version']); print('torch' in sys.modules); sys.exit(rc)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    import psgrpo

    assert out.split("\n")[:2] == [f"psgrpo {psgrpo.__version__}", "False"]
