"""tools/build_python.py: finding CPython's release tarball in Ubuntu's Sources index, and refusing a bad one.

The build itself (minutes, and the archive) is not run here; docs/compatibility.md gives the command."""

from __future__ import annotations

import hashlib
import io
import lzma
import tarfile

import pytest

STANZA = """Package: python{minor}
Version: {version}-1ubuntu0.1
Directory: pool/main/p/python{minor}
Checksums-Sha256:
 {other} 1234 python{minor}_{version}-1ubuntu0.1.dsc
 {sha} 5678 python{minor}_{version}.orig.tar.xz
"""


def _serve(monkeypatch, tool, files: dict[str, bytes]) -> list[str]:
    """``urlopen`` answers the URLs in ``files`` (an index per suite, tarballs) and 404s the rest."""
    asked: list[str] = []

    def urlopen(url: str, timeout: float):
        asked.append(url)
        if url not in files:
            raise tool.urllib.error.HTTPError(url, 404, "Not Found", None, None)
        return io.BytesIO(files[url])

    monkeypatch.setattr(tool.urllib.request, "urlopen", urlopen)
    return asked


def _index(*stanzas: str) -> bytes:
    return lzma.compress("\n".join(stanzas).encode())


def _index_url(tool, suite: str) -> str:
    return f"{tool.ARCHIVE}/dists/{suite}/main/source/Sources.xz"


def test_the_newest_suite_with_the_package_gives_the_tarball_and_its_checksum(load_tool, monkeypatch, capsys):
    tool = load_tool("build_python")
    sha = "a" * 64
    files = {_index_url(tool, suite): _index() for suite in tool.SUITES[1:]}  # the newest: gone (404)
    files[_index_url(tool, "noble-updates")] = _index(
        STANZA.format(minor="3.11", version="3.11.9", sha="c" * 64, other="d" * 64),
        STANZA.format(minor="3.12", version="3.12.3", sha=sha, other="b" * 64),
    )
    files[_index_url(tool, "jammy-updates")] = _index(
        STANZA.format(minor="3.12", version="3.12.0", sha="e" * 64, other="f" * 64)
    )
    asked = _serve(monkeypatch, tool, files)
    url, checksum, version = tool.find_source("3.12")
    assert url == f"{tool.ARCHIVE}/pool/main/p/python3.12/python3.12_3.12.3.orig.tar.xz"
    assert (checksum, version) == (sha, "3.12.3")  # the .orig tarball's line, not the .dsc's
    assert _index_url(tool, "jammy-updates") not in asked  # found before the older suite
    assert f"build_python: skipping Ubuntu {tool.SUITES[0]}: HTTP Error 404" in capsys.readouterr().err


def test_a_minor_no_suite_has_stops_with_one_line(load_tool, monkeypatch):
    tool = load_tool("build_python")
    _serve(monkeypatch, tool, {_index_url(tool, suite): _index() for suite in tool.SUITES})
    with pytest.raises(SystemExit, match=r"^build_python: no python3\.9 source in Ubuntu's resolute"):
        tool.find_source("3.9")


def test_a_tarball_whose_checksum_differs_from_the_index_is_not_built(load_tool, monkeypatch, tmp_path):
    tool = load_tool("build_python")
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:xz") as tar:
        tar.addfile(tarfile.TarInfo("Python-3.12.3/configure"), io.BytesIO(b""))
    tarball = payload.getvalue()
    stated = hashlib.sha256(b"something else").hexdigest()
    url = f"{tool.ARCHIVE}/pool/main/p/python3.12/python3.12_3.12.3.orig.tar.xz"
    files = {_index_url(tool, suite): _index() for suite in tool.SUITES}
    files[_index_url(tool, tool.SUITES[0])] = _index(
        STANZA.format(minor="3.12", version="3.12.3", sha=stated, other="b" * 64)
    )
    files[url] = tarball
    _serve(monkeypatch, tool, files)
    ran = []
    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: ran.append(a))
    with pytest.raises(
        SystemExit, match=rf"has SHA-256 {hashlib.sha256(tarball).hexdigest()}, .* says {stated}"
    ):
        tool.build("3.12", tmp_path, jobs=1)
    assert ran == [] and not (tmp_path / "3.12").exists()  # nothing configured, nothing installed


def test_a_bad_minor_is_one_usage_line(load_tool, capsys):
    tool = load_tool("build_python")
    with pytest.raises(SystemExit) as exit_info:
        tool.main(["python3.12"])
    assert exit_info.value.code == 2
    assert "minor: expected a version like 3.12, got 'python3.12'" in capsys.readouterr().err


def test_a_tarball_the_archive_does_not_serve_is_one_line(load_tool, monkeypatch, tmp_path):
    """Seen here: Debian's and Ubuntu's indexes list python3.15's tarball, and the pool answers 404."""
    tool = load_tool("build_python")
    files = {_index_url(tool, suite): _index() for suite in tool.SUITES}
    files[_index_url(tool, tool.SUITES[0])] = _index(
        STANZA.format(minor="3.15", version="3.15.2", sha="a" * 64, other="b" * 64)
    )
    _serve(monkeypatch, tool, files)
    url = f"{tool.ARCHIVE}/pool/main/p/python3.15/python3.15_3.15.2.orig.tar.xz"
    with pytest.raises(
        SystemExit, match=rf"^build_python: cannot download {url}: HTTP Error 404: Not Found$"
    ):
        tool.build("3.15", tmp_path, jobs=1)
