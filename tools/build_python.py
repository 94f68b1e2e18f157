"""Build a CPython of another minor version from its distribution source, for ``make test-versions PYTHON=…``.

pyproject.toml admits every Python from 3.11 up, and the GPU image runs 3.12, but a machine like this project's
(Debian 12) packages one Python (3.11), and python.org, pyenv's and uv's downloads are out of reach. Ubuntu's
archive is not: each release's ``python3.X`` source package carries CPython's own release tarball
(``python3.X_<version>.orig.tar.xz``). This script finds it in the archive's ``Sources`` index, checks its
SHA-256 against the index (both over HTTPS), and builds it (``./configure && make && make altinstall``, no
PGO: a few minutes on 2 cores) into ``<prefix>/<X.Y>``:

    python3 tools/build_python.py 3.12     # Ubuntu 24.04's 3.12.3, the GPU image's minor version
    python3 tools/build_python.py 3.14     # Ubuntu 26.04's 3.14.4, the newest the archive offers
    PIP_CONFIG_FILE=/dev/null make test-versions SET=top PYTHON=~/.cache/psgrpo/python/3.14/bin/python3.14

Needs gcc, make and the headers CPython's modules build against (Debian: libssl-dev libffi-dev zlib1g-dev
libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev); the build fails if ssl, ctypes or lzma is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ARCHIVE = "https://archive.ubuntu.com/ubuntu"
SUITES = ["resolute", "questing", "noble-updates", "noble", "jammy-updates"]
"""Ubuntu releases searched, newest first: the first that has ``python3.X`` gives its source."""
REQUIRED_MODULES = ["ssl", "ctypes", "lzma", "bz2", "sqlite3", "zlib"]
"""Modules pip, torch and the tests need; CPython builds without them when their headers are missing."""


def find_source(minor: str) -> tuple[str, str, str]:
    """``(url, sha256, version)`` of ``python<minor>``'s release tarball in the newest suite that has it."""
    for suite in SUITES:
        url = f"{ARCHIVE}/dists/{suite}/main/source/Sources.xz"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                index = lzma.decompress(response.read()).decode()
        except (
            OSError
        ) as error:  # URLError and HTTPError too: a release past its end of life leaves the archive
            print(f"build_python: skipping Ubuntu {suite}: {error}", file=sys.stderr)
            continue
        for stanza in index.split("\n\n"):
            if not stanza.startswith(f"Package: python{minor}\n"):
                continue
            directory = re.search(r"^Directory: (\S+)$", stanza, re.M)
            tarball = re.search(r"^ ([0-9a-f]{64}) \d+ (python\S+_(\S+)\.orig\.tar\.xz)$", stanza, re.M)
            if directory and tarball:
                return (
                    f"{ARCHIVE}/{directory.group(1)}/{tarball.group(2)}",
                    tarball.group(1),
                    tarball.group(3),
                )
    raise SystemExit(f"build_python: no python{minor} source in Ubuntu's {', '.join(SUITES)}")


def build(minor: str, prefix: Path, jobs: int) -> Path:
    """The interpreter ``<prefix>/<minor>/bin/python<minor>``, built unless it already runs."""
    python = prefix / minor / "bin" / f"python{minor}"
    if python.exists() and not missing_module(python):
        return python
    url, sha256, version = find_source(minor)
    print(f"build_python: CPython {version} from {url}", flush=True)
    with tempfile.TemporaryDirectory() as work:
        archive = Path(work) / Path(url).name
        try:
            with urllib.request.urlopen(url, timeout=300) as response, archive.open("wb") as out:
                shutil.copyfileobj(response, out)
        except (
            OSError
        ) as error:  # the index can list a tarball that the archive (or its proxy) does not serve
            raise SystemExit(f"build_python: cannot download {url}: {error}") from None
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != sha256:
            raise SystemExit(
                f"build_python: {archive.name} has SHA-256 {digest}, the archive's index says {sha256}"
            )
        with tarfile.open(archive) as tar:  # the "data" filter where this Python has it (3.11.4 and later)
            tar.extractall(work, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        source = next(p for p in Path(work).iterdir() if p.is_dir() and p.name.startswith("Python-"))
        log = prefix / f"build-{minor}.log"
        prefix.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            for command in (
                ["./configure", f"--prefix={prefix / minor}", "--with-ensurepip=install"],
                ["make", f"-j{jobs}"],
                ["make", "altinstall"],
            ):
                if subprocess.run(command, cwd=source, stdout=out, stderr=subprocess.STDOUT).returncode:
                    raise SystemExit(f"build_python: `{' '.join(command)}` failed: see {log}")
    missing = missing_module(python)
    if missing:
        raise SystemExit(
            f"build_python: {python} lacks a module ({missing}): install its headers (the docstring lists "
            "them) and run again"
        )
    return python


def missing_module(python: Path) -> str:
    """The last line of the error importing :data:`REQUIRED_MODULES` with ``python``; "" when all import."""
    done = subprocess.run(
        [python, "-c", f"import importlib; [importlib.import_module(m) for m in {REQUIRED_MODULES!r}]"],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return ""
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("minor", help="the minor version to build, e.g. 3.12")
    parser.add_argument(
        "--prefix",
        type=Path,
        default=Path(os.environ.get("PSGRPO_CACHE", Path.home() / ".cache" / "psgrpo")) / "python",
        help="where <minor>/ is installed (default $PSGRPO_CACHE/python, else ~/.cache/psgrpo/python)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: the cores)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d+", args.minor):
        parser.error(f"minor: expected a version like 3.12, got {args.minor!r}")
    print(build(args.minor, args.prefix.expanduser(), args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
