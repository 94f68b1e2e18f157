"""The lowest versions psgrpo declares, as pip constraints, and a check that they are what got installed.

    python tools/min_versions.py                      # print constraints: one `name==lowest` per dependency
    python tools/min_versions.py --check PYTHON       # exit 1 unless PYTHON's environment has exactly them
    python tools/min_versions.py --check PYTHON --constraints tools/versions/gpu_image.txt
                                                      # … exactly that set's pins instead

``make test-min`` installs the package into ``.venv-min`` under these constraints and runs the fast
suite there, as TRL's CI job "Tests with minimum versions" does: a declared range is a promise, so its
bottom is tested as well as its top (``make test``, the newest releases).

Every runtime dependency of ``[project] dependencies`` in pyproject.toml with a ``>=`` bound is pinned to
that bound, except ``torch``: the only CPU build that installs without a multi-GB CUDA download is the
one on this project's machines (:data:`TORCH_CPU`), so the minimum job runs it, and the declared torch
minimum runs in ``make test-versions SET=gpu_image`` (PyPI's CUDA build, on a CPU) and on the GPU image
(benchmarks/device_check.sh). Optional and dev extras are not
pinned. It lives outside the package: nothing that trains imports it.

``make test-versions SET=<name>`` does the same for another set of versions inside the declared ranges,
``tools/versions/<name>.txt`` (pip constraints): ``gpu_image``, the CUDA image psgrpo first ran on (its
transformers, accelerate, datasets … and torch 2.11.0, the declared floor), and ``top``, the newest torch.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TORCH_CPU = "2.13.0"
"""The torch the CPU jobs install first (Makefile, .ci/run): a CPU build on local disk."""

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$")


def canonical_name(name: str) -> str:
    """A distribution name as PEP 503 compares names: ``Huggingface.Hub``, ``huggingface_hub`` → ``huggingface-hub``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lowest_versions(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """``{distribution name: declared lower bound}`` for every runtime dependency that has one."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    lowest: dict[str, str] = {}
    for requirement in dependencies:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            raise ValueError(f"pyproject.toml: cannot read the dependency {requirement!r}")
        name, _, spec = match.groups()
        bound = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", spec)
        if bound is not None:
            lowest[canonical_name(name)] = bound[1]
    return lowest


def constraints(lowest: dict[str, str]) -> list[str]:
    """pip constraint lines: the lowest versions, with torch at :data:`TORCH_CPU` (see the module docstring)."""
    return [f"{name}=={TORCH_CPU if name == 'torch' else v}" for name, v in sorted(lowest.items())]


def read_constraints(path: Path) -> dict[str, str]:
    """``{distribution name: pinned version}`` of a pip constraints file of ``name==version`` lines
    (``#`` comments and blank lines skipped; names canonical, :func:`canonical_name`); any other line,
    or a name pinned twice, is an error naming the file and line."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*==\s*([0-9][0-9A-Za-z.+]*)", line)
        if match is None:
            raise ValueError(f"{path}:{number}: expected 'name==version', got {raw!r}")
        name = canonical_name(match[1])
        if name in pins:
            raise ValueError(f"{path}:{number}: {name} is pinned twice (also to {pins[name]})")
        pins[name] = match[2]
    return pins


def installed_versions(python: str, names: list[str]) -> dict[str, str | None]:
    """``{name: version}`` in ``python``'s environment (``None`` when not installed)."""
    script = (
        "import json, sys\nfrom importlib.metadata import version, PackageNotFoundError\n"
        "def v(n):\n    try:\n        return version(n)\n    except PackageNotFoundError:\n        return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    out = subprocess.run([python, "-c", script, *names], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="PYTHON", help="check PYTHON's environment instead of printing")
    parser.add_argument(
        "--constraints",
        metavar="FILE",
        type=Path,
        help="with --check: check FILE's 'name==version' pins (tools/versions/*.txt) instead of the minimums",
    )
    args = parser.parse_args(argv)
    if args.constraints is not None and args.check is None:
        parser.error("--constraints needs --check PYTHON")
    lowest = lowest_versions()
    if args.check is None:
        print("\n".join(constraints(lowest)))
        return 0
    from packaging.specifiers import SpecifierSet

    if args.constraints is None:
        wanted, what = dict(line.split("==") for line in constraints(lowest)), "declared minimum"
    else:
        try:
            wanted, what = read_constraints(args.constraints), f"pinned in {args.constraints}"
        except (OSError, ValueError) as error:  # one line, not a traceback
            parser.error(f"--constraints: {error}")
    got = installed_versions(args.check, list(wanted))
    wrong = [
        f"{n}: {what} {w}, installed {got[n]}"
        for n, w in wanted.items()
        # pip's rule: a pin without a local label matches any (`==2.13.0` admits 2.13.0+cpu)
        if got[n] is None or not SpecifierSet(f"=={w}").contains(got[n], prereleases=True)
    ]
    for line in wrong:
        print(f"min_versions: {line}", file=sys.stderr)
    if not wrong:
        print("min_versions: " + ", ".join(f"{n} {v}" for n, v in wanted.items()))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
