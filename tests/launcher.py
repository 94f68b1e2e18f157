"""Run a multi-process launch (torchrun) from a test so that a hang fails with every process's Python stack.

``subprocess.run(command, timeout=...)`` kills only the launcher when time runs out: its workers live on
(they hold CPU for the rest of the suite) and the failure says nothing about where they waited.
:func:`run_launch` runs the launch in its own session with ``PYTHONFAULTHANDLER=1``; on a timeout it
sends SIGABRT to every process under the launcher (faulthandler then writes the Python stack of each
thread to stderr), kills whatever is left, and fails the test with the end of both streams (the whole
stderr goes to a file the failure names). However the wait ends (a timeout, Ctrl-C, an error), no process
of the launch outlives the call. POSIX only, as torchrun's tests here are.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

STACKS_GRACE_S = 10.0
"""Seconds the processes get to write their stacks and exit after the SIGABRT."""


def _descendants(pid: int) -> list[psutil.Process]:
    """Every process under ``pid``, deepest first (workers before the launcher's own children)."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return list(reversed(psutil.Process(pid).children(recursive=True)))
    return []


def _signal_all(processes: Sequence[psutil.Process], signum: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            process.send_signal(signum)


def _no_core_files() -> None:
    """In the child, before exec: SIGABRT dumps no core file into the working directory (the repository)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _kill_everything(process: subprocess.Popen, known: Sequence[psutil.Process]) -> None:
    """SIGKILL the launcher, its process group, every descendant now and every process in ``known``
    (torch elastic starts its workers in sessions of their own: once the launcher is gone they are no
    longer its descendants)."""
    _signal_all([*known, *_descendants(process.pid)], signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()


def run_launch(
    command: Sequence[str], *, env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (a launcher and its workers) to the end, or fail the test with their stacks.

    Args:
        command: the launch, e.g. ``[python, -m, torch.distributed.run, ...]``.
        env: its environment (``PYTHONFAULTHANDLER=1`` is added).
        cwd: its working directory.
        timeout: seconds before it counts as hung.

    Returns:
        The finished process with its text ``stdout`` and ``stderr`` (any return code: the caller asserts).
    """
    process = subprocess.Popen(
        list(command),
        env={**env, "PYTHONFAULTHANDLER": "1"},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_no_core_files,
    )
    seen: list[psutil.Process] = []
    try:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        except subprocess.TimeoutExpired:
            pass
        seen = _descendants(process.pid)
        _signal_all(
            seen, signal.SIGABRT
        )  # each worker writes its stacks to the stderr it shares with the launcher
        time.sleep(1.0)
        _signal_all([psutil.Process(process.pid)] if process.poll() is None else [], signal.SIGABRT)
        try:
            stdout, stderr = process.communicate(timeout=STACKS_GRACE_S)
        except subprocess.TimeoutExpired:
            _kill_everything(process, seen)
            stdout, stderr = process.communicate(timeout=10)  # the pipes close once every holder is dead
    finally:
        if process.poll() is None or any(p.is_running() for p in seen):
            _kill_everything(process, seen)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
    with tempfile.NamedTemporaryFile("w", prefix="launch-stderr-", suffix=".txt", delete=False) as saved:
        saved.write(stderr)
    pytest.fail(
        f"still running after {timeout:.0f} s (a hang?): {' '.join(command[:6])} …\n"
        f"--- stdout (end) ---\n{stdout[-3000:]}\n"
        f"--- stderr (end; the Python stacks; all of it in {saved.name}) ---\n{stderr[-20000:]}",
        pytrace=False,
    )
