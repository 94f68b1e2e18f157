"""tools/check_python.py: an old Python stops with one line before the Makefile builds anything."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "check_python.py"


def _check(pyproject: Path | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, str(TOOL), *([str(pyproject)] if pyproject else [])]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_this_python_passes_the_real_floor():
    done = _check()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_an_older_python_than_the_floor_gets_one_line_naming_both(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nrequires-python = ">=99.1"  # a future floor\n')
    done = _check(pyproject)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    version = sys.version.split()[0]
    assert line.startswith(
        f"psgrpo needs Python >= 99.1 (pyproject.toml's requires-python), and {sys.executable}"
    )
    assert f"is {version}" in line and "e.g. PYTHON=python99.1" in line


def test_a_pyproject_without_a_floor_is_reported(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n')
    done = _check(pyproject)
    assert done.returncode == 2 and "has no requires-python" in done.stderr


def test_a_venv_another_python_built_is_removed_and_one_this_python_built_is_kept(tmp_path):
    """``make test PYTHON=python3.12`` must not run the tests in a .venv that Python 3.11 built."""
    mine = "{}.{}".format(*sys.version_info[:2]) + sys.abiflags
    for built, kept in [(mine, True), ("3.9", False)]:
        venv = tmp_path / f"venv-{built}"
        (venv / "bin").mkdir(parents=True)
        cfg = f"home = /usr/bin\nversion = {built.rstrip('tdm')}.7\nexecutable = /usr/bin/python{built}\n"
        (venv / "pyvenv.cfg").write_text(cfg)
        done = subprocess.run(
            [sys.executable, str(TOOL), "--venv", str(venv)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and venv.exists() is kept
        assert (
            f"{venv} was built with Python 3.9, and PYTHON is {mine}: rebuilding it" in done.stdout
        ) is not kept
    missing = subprocess.run([sys.executable, str(TOOL), "--venv", str(tmp_path / "none")], timeout=60)
    assert missing.returncode == 0  # nothing built yet: nothing to remove


def test_a_venv_of_another_build_of_the_same_version_is_removed(tmp_path):
    """A free-threaded 3.14t's packages do not load in a 3.14 venv, nor the other way round."""
    xy = "{}.{}".format(*sys.version_info[:2])
    other = "t" if sys.abiflags != "t" else ""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = /usr/bin\nversion = {xy}.1\nexecutable = /usr/bin/python{xy}{other}\n"
    )
    done = subprocess.run(
        [sys.executable, str(TOOL), "--venv", str(venv)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not venv.exists(), done.stdout + done.stderr
    assert f"built with Python {xy}{other}, and PYTHON is {xy}{sys.abiflags}: rebuilding it" in done.stdout


def test_every_makefile_rule_that_makes_a_venv_checks_the_python_first():
    """A wrong PYTHON must not delete a venv (`rm -rf` first in some rules) nor download torch for nothing;
    each stamp names the Python, so another PYTHON rebuilds rather than reuses."""
    makefile = (ROOT / "Makefile").read_text()
    rules = re.split(r"\n(?=\S)", makefile)
    building = [rule for rule in rules if "-m venv" in rule]
    assert len(building) == 4  # .venv, .venv-min, .venv-<SET>-py<X.Y>, .venv-deepspeed
    for rule in building:
        target = rule.splitlines()[0]
        recipe = [line.strip() for line in rule.splitlines()[1:] if line.startswith("\t")]
        assert recipe[0].startswith("$(CHECK_PYTHON)"), target
        assert "$(PY_XY)" in target or re.search(r"^(STAMP\w*) := .*py\$\(PY_XY\)$", makefile, re.M), target
    for stamp in ("STAMP", "STAMP_MIN", "STAMP_DS"):
        assert re.search(rf"^{stamp} := \S+/\.installed-py\$\(PY_XY\)$", makefile, re.M), stamp
    assert "tools/check_python.py" in makefile.split("CHECK_PYTHON =", 1)[1].split("\n\n", 1)[0]


def test_virtualenv_and_uv_venvs_of_this_python_are_kept(tmp_path):
    """virtualenv writes `base-executable`, uv no executable at all (its lib/pythonX.Y<flags> folder tells)."""
    xy = "{}.{}".format(*sys.version_info[:2])
    virtualenv = tmp_path / "virtualenv"
    (virtualenv / "bin").mkdir(parents=True)
    (virtualenv / "pyvenv.cfg").write_text(
        f"home = /usr/bin\nversion_info = {xy}.1.final.0\nbase-executable = /usr/bin/python{xy}{sys.abiflags}\n"
    )
    uv = tmp_path / "uv"
    (uv / "lib" / f"python{xy}{sys.abiflags}" / "site-packages").mkdir(parents=True)
    (uv / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion_info = {xy}.1\n")
    for venv in (virtualenv, uv):
        done = subprocess.run(
            [sys.executable, str(TOOL), "--venv", str(venv)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and venv.exists(), done.stdout + done.stderr
