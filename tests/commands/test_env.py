"""``psgrpo env``: the version checks are pure and right, the report names every package, and a CUDA machine
(simulated here) is described from torch's answers."""

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

REQUIREMENTS = [
    "trl<1.17,>=1.16",
    "transformers<6,>=5.6",
    "torch>=2.11",
    'peft>=0.15; extra == "peft"',
    'deepspeed>=0.16; extra == "deepspeed"',
    'tomli>=2; python_version < "3.0"',
]


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
    assert version_problems(REQUIREMENTS, {"trl": "1.16.0", "transformers": "5.6.0", "torch": "2.11.0"}) == []


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


def test_the_requirements_come_from_pyproject_when_psgrpo_is_not_installed(monkeypatch):
    installed = {canonicalize_name(Requirement(r).name) for r in declared_requirements()}

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "requires", not_installed)
    from_source = declared_requirements()
    assert {canonicalize_name(Requirement(r).name) for r in from_source} == installed
    assert version_problems(from_source, {n: importlib.metadata.version(n) for n in ("trl", "torch")}) != []


def test_env_prints_every_required_package_and_no_problem_in_the_test_environment(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    for requirement in declared_requirements():
        parsed = Requirement(requirement)
        if parsed.marker is None:
            assert f"- {canonicalize_name(parsed.name)}: " in out
    assert "Problems: none." in out
    assert f"- torch: {torch.__version__}" in out


def test_env_json_is_one_object_with_the_same_facts(capsys):
    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["packages"]["torch"] == torch.__version__ and info["problems"] == []
    assert info["python"] == ".".join(map(str, sys.version_info[:3]))
    assert (
        "pytest" not in info["optional"] and "pytest" not in info["packages"]
    )  # the dev extra: not reported


def test_a_cuda_machine_is_described_from_torch(monkeypatch):
    """No GPU here: torch's answers are those of one H200 with a CUDA 13.0 build."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (9, 0))
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=139.8 * 2**30)
    )
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    report = format_report(collect())
    assert "- GPUs: 1× NVIDIA H200 (139.8 GiB, sm 9.0); CUDA 13.0, bf16: yes" in report


def test_a_bad_native_bf16_override_is_reported_not_raised(monkeypatch):
    monkeypatch.setenv("PSGRPO_NATIVE_BF16", "maybe")
    report = format_report(collect())
    assert "native bf16: $PSGRPO_NATIVE_BF16 must be 1 or 0" in report


def test_problems_and_notes_reach_the_report(monkeypatch):
    real = env_command._installed
    monkeypatch.setattr(env_command, "_installed", lambda n: "5.3.0" if n == "transformers" else real(n))
    monkeypatch.setattr(env_command, "TESTED", {"torch": ("2.0", "2.1")})
    report = format_report(collect())
    assert (
        "Problems (outside the ranges psgrpo declares):\n- transformers 5.3.0 is installed; psgrpo needs"
        in report
    )
    assert (
        f"Notes:\n- torch {torch.__version__} is newer than the newest tested (2.1): allowed, untested"
        in report
    )


def test_version_flag_prints_the_version_without_importing_torch():
    code = "import sys; from psgrpo.commands.cli import main; rc = main(['--version']); print('torch' in sys.modules); sys.exit(rc)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    import psgrpo

    assert out.split("\n")[:2] == [f"psgrpo {psgrpo.__version__}", "False"]


def test_env_runs_where_trl_transformers_and_datasets_do_not_import():
    """A bug report is most needed where the environment is broken: ``psgrpo env`` imports none of them."""
    code = (
        "import sys\nfor name in ('trl', 'transformers', 'datasets', 'accelerate'):\n    sys.modules[name] = None\n"
        "from psgrpo.commands.cli import main\nsys.exit(main(['env']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "- trl: " in result.stdout and "Problems: none." in result.stdout
