"""Stop with one line when this Python is older than pyproject.toml's ``requires-python``; with ``--venv DIR``,
also remove DIR when another Python built it, so that ``make … PYTHON=python3.12`` never reuses a 3.11 venv.

The Makefile runs it first in every rule that builds a venv: otherwise an old Python would first download
torch (a multi-GB CUDA build where no CPU wheel matches it) and then fail in pip's resolver, about trl.
Written for Python >= 3.6 (no ``tomllib``, no newer syntax), since its point is to run on the old ones.

    python3.10 tools/check_python.py    # psgrpo needs Python >= 3.11 (pyproject.toml's requires-python) ...
    python3.12 tools/check_python.py --venv .venv   # .venv was built with Python 3.11 …: removed
"""

import re
import shutil
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def venv_python(venv: Path) -> str:
    """The X.Y of the Python that built ``venv`` (its pyvenv.cfg), with the ABI flags its interpreter's name
    carries (``3.14t`` for a free-threaded build, whose packages do not fit a 3.14 one), or "" when there is none."""
    try:
        config = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return ""
    found = re.search(r"^version(?:_info)?\s*=\s*(\d+)\.(\d+)", config, re.M)
    if not found:
        return ""
    xy = "{}.{}".format(*found.groups())
    # venv writes `executable`, virtualenv `base-executable`; uv neither, but its site-packages folder has the flags
    flags = re.search(r"^(?:base-)?executable\s*=.*python\d+\.\d+([a-z]*)\s*$", config, re.M)
    if flags:
        return xy + flags.group(1)
    folders = [p.name[len("python" + xy) :] for p in (venv / "lib").glob("python" + xy + "*")]
    return xy + (folders[0] if len(folders) == 1 else "")


def main(argv: list) -> int:
    venv = None
    if argv[:1] == ["--venv"] and len(argv) >= 2:
        venv, argv = Path(argv[1]), argv[2:]
    pyproject = Path(argv[0]) if argv else PYPROJECT
    found = re.search(
        r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)', pyproject.read_text(encoding="utf-8"), re.M
    )
    if found is None:
        print(f'check_python: {pyproject} has no requires-python = ">=X.Y"', file=sys.stderr)
        return 2
    need = (int(found.group(1)), int(found.group(2)))
    if sys.version_info[:2] < need:
        print(
            f"psgrpo needs Python >= {need[0]}.{need[1]} (pyproject.toml's requires-python), and {sys.executable} "
            f"is {sys.version.split()[0]}: set PYTHON to a newer one, e.g. PYTHON=python{need[0]}.{need[1]}",
            file=sys.stderr,
        )
        return 2
    mine = "{}.{}".format(*sys.version_info[:2]) + getattr(sys, "abiflags", "")
    built = venv_python(venv) if venv is not None else ""
    if built and built != mine:
        print(
            f"check_python: {venv} was built with Python {built}, and PYTHON is {mine}: rebuilding it",
            flush=True,
        )
        shutil.rmtree(venv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
