"""Stop with one line when this Python is older than pyproject.toml's ``requires-python``.

The Makefile runs it first in every rule that builds a venv: otherwise an old Python would first download
torch (a multi-GB CUDA build where no CPU wheel matches it) and then fail in pip's resolver, about trl.
Written for any Python 3 (no ``tomllib``, no newer syntax), since its point is to run on the old ones.

    python3.10 tools/check_python.py    # psgrpo needs Python >= 3.11 (pyproject.toml's requires-python) ...
"""

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def main(argv: list) -> int:
    pyproject = Path(argv[0]) if argv else PYPROJECT
    found = re.search(r'^requires-python\s*=\s*">=\s*(\d+)\.(\d+)', pyproject.read_text(), re.M)
    if found is None:
        print(f'check_python: {pyproject} has no requires-python = ">=X.Y"', file=sys.stderr)
        return 2
    need = (int(found.group(1)), int(found.group(2)))
    if sys.version_info[:2] < need:
        print(
            f"psgrpo needs Python >= {need[0]}.{need[1]} (pyproject.toml's requires-python), and {sys.executable} "
            f"is {sys.version.split()[0]}: give make a newer one, e.g. make PYTHON=python{need[0]}.{need[1]} …",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
