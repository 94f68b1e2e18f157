"""tools/min_versions.py: the declared minimums as pip constraints, and honest against what the pins need."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def min_versions(load_tool):
    return load_tool("min_versions")


def test_every_runtime_dependency_with_a_lower_bound_is_pinned_to_it(min_versions, tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["torch>=2.11", "trl>=1.16,<1.17", "math-verify[antlr4_13_2]>=0.7", "tqdm"]\n'
    )
    lowest = min_versions.lowest_versions(pyproject)
    assert lowest == {"torch": "2.11", "trl": "1.16", "math-verify": "0.7"}
    assert min_versions.constraints(lowest) == [
        "math-verify==0.7",
        f"torch=={min_versions.TORCH_CPU}",  # the CPU build this project's machines install
        "trl==1.16",
    ]


def test_the_check_names_a_package_that_is_not_at_its_minimum(min_versions, capsys):
    python = (
        sys.executable
    )  # this suite's venv: the newest releases, so trl's minimum 1.16 may match, others not
    code = min_versions.main(["--check", python])
    out = capsys.readouterr()
    installed_at_minimum = code == 0
    assert installed_at_minimum == ("declared minimum" not in out.err)
    if not installed_at_minimum:
        assert re.search(r"min_versions: \S+: declared minimum \S+, installed \S+", out.err)


def test_the_makefile_and_ci_run_the_minimum_versions():
    makefile = (ROOT / "Makefile").read_text()
    assert "tools/min_versions.py --check" in makefile and "test-min:" in makefile
    assert "make test-min" in (ROOT / ".ci" / "run").read_text()


def test_no_declared_minimum_is_below_what_a_dependency_itself_requires(min_versions):
    """The honesty check: trl, transformers … declare their own floors for the packages we also declare
    (trl 1.16 needs accelerate ≥ 1.10.1, datasets ≥ 4.7.0); ours may not promise less.

    Read from the installed dependencies that sit at their declared minimum: trl here (pinned to 1.16.x),
    every one of them under `make test-min`, where this test is the check that the floors fit together."""
    lowest = {name: Version(v) for name, v in min_versions.lowest_versions().items()}
    too_low, at_floor = [], []
    for dependency in lowest:
        try:
            installed = Version(Version(version(dependency)).public)
            requirements = requires(dependency) or []
        except PackageNotFoundError:
            continue
        if installed != lowest[dependency]:
            continue  # a newer release may need more; its floors are not the declared range's bottom
        at_floor.append(dependency)
        for text in requirements:
            requirement = Requirement(text)
            name = requirement.name.lower()
            if name not in lowest or (requirement.marker and "extra" in str(requirement.marker)):
                continue
            floors = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
            if floors and max(floors) > lowest[name]:
                too_low.append(f"{dependency} needs {requirement}, pyproject declares {name}>={lowest[name]}")
    assert "trl" in at_floor  # pinned to 1.16.x: always at its floor
    assert not too_low, too_low


def test_a_constraints_file_is_read_as_pins_and_a_bad_line_names_its_place(min_versions, tmp_path):
    good = tmp_path / "set.txt"
    good.write_text("# a comment\n\ntorch==2.13.0\nhuggingface_hub == 1.33.0  # the image's\n")
    assert min_versions.read_constraints(good) == {"torch": "2.13.0", "huggingface-hub": "1.33.0"}
    bad = tmp_path / "bad.txt"
    bad.write_text("torch==2.13.0\ntransformers>=5.6\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: expected 'name==version', got 'transformers>=5\.6'"):
        min_versions.read_constraints(bad)
    twice = tmp_path / "twice.txt"
    twice.write_text("huggingface_hub==1.33.0\nHuggingface.Hub==1.34.0\n")
    with pytest.raises(
        ValueError, match=r"twice\.txt:2: huggingface-hub is pinned twice \(also to 1\.33\.0\)"
    ):
        min_versions.read_constraints(twice)
    local = tmp_path / "local.txt"
    local.write_text("torch==2.11.0+cu130\n")
    assert min_versions.read_constraints(local) == {"torch": "2.11.0+cu130"}


def test_the_check_against_a_set_names_each_pin_that_is_not_installed(min_versions, tmp_path, capsys):
    pins = tmp_path / "set.txt"
    pins.write_text(f"PyTest=={version('pytest')}\npackaging==0.0.1\n")
    assert min_versions.main(["--check", sys.executable, "--constraints", str(pins)]) == 1
    err = capsys.readouterr().err
    assert f"packaging: pinned in {pins} 0.0.1, installed {version('packaging')}" in err
    assert "pytest:" not in err
    public = (
        tmp_path / "public.txt"
    )  # torch 2.13.0+cpu is what `torch==2.13.0` installs: it matches, as in pip
    public.write_text(f"torch=={Version(version('torch')).public}\n")
    assert min_versions.main(["--check", sys.executable, "--constraints", str(public)]) == 0
    with pytest.raises(SystemExit):  # --constraints alone is a usage error, not a silent print
        min_versions.main(["--constraints", str(pins)])
    capsys.readouterr()
    bad = tmp_path / "bad.txt"
    bad.write_text("torch>=2.11\n")
    for path, message in (
        (bad, r"bad\.txt:1: expected 'name==version'"),
        (tmp_path / "none.txt", "No such file"),
    ):
        with pytest.raises(SystemExit) as exit_info:  # a bad or missing set: one usage line, no traceback
            min_versions.main(["--check", sys.executable, "--constraints", str(path)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert re.search(rf"error: --constraints: .*{message}", err) and "Traceback" not in err


def test_every_version_set_stays_inside_the_declared_ranges(min_versions):
    """tools/versions/*.txt (`make test-versions SET=…`): a set outside the ranges pyproject.toml
    declares would test a promise the package does not make."""
    declared = {
        min_versions.canonical_name(Requirement(text).name): Requirement(text).specifier
        for text in min_versions.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "dependencies"
        ]
    }
    sets = sorted((ROOT / "tools" / "versions").glob("*.txt"))
    assert {path.stem for path in sets} >= {"gpu_image", "top"}
    outside = [
        f"{path.name}: {name}=={pin} is outside {name}{declared[name]}"
        for path in sets
        for name, pin in min_versions.read_constraints(path).items()
        if name in declared and not declared[name].contains(pin, prereleases=True)
    ]
    assert not outside, outside
    assert "torch" in min_versions.read_constraints(ROOT / "tools" / "versions" / "top.txt")  # names match
    makefile = (ROOT / "Makefile").read_text()
    assert "test-versions:" in makefile and "--constraints $<" in makefile


def test_the_lowest_python_psgrpo_declares_is_one_its_dependencies_admit(min_versions):
    """requires-python is a declared range too. psgrpo once said ``>=3.10`` while trl 1.16.0, the only release
    it admits, requires 3.11: on 3.10 pip stopped with a resolver error about trl. Checked against every
    installed dependency at its declared floor: trl (1.16.0 is both floor and only release) everywhere, all
    of them under ``make test-min``. A newer release may require a newer Python (pip then picks an older one)."""
    from importlib.metadata import metadata

    from packaging.specifiers import SpecifierSet

    project = min_versions.tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floor = re.fullmatch(r">=\s*(3\.\d+)", project["requires-python"])
    assert floor, f"requires-python should be '>=3.N', not {project['requires-python']!r}"
    oldest = Version(floor.group(1))
    assert oldest <= Version(
        f"{sys.version_info[0]}.{sys.version_info[1]}"
    )  # this Python is inside the range
    lowest = min_versions.lowest_versions()
    checked, refused = [], []
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = min_versions.canonical_name(requirement.name)
        installed = version(requirement.name)
        if name not in lowest or Version(installed) != Version(lowest[name]):
            continue
        checked.append(name)
        needs = metadata(requirement.name).get("Requires-Python")
        if needs and not SpecifierSet(needs).contains(oldest):
            refused.append(f"{name} {installed} requires Python {needs}")
    assert "trl" in checked
    assert not refused, (
        f"pyproject.toml's requires-python {project['requires-python']} admits Python {oldest}, which these "
        "refuse: " + "; ".join(refused)
    )
