"""Run a multi-process launch (torchrun) from a test so that a hang fails with every process's Python stack.

``subprocess.run(command, timeout=...)`` kills only the launcher when time runs out: its workers live on
(they hold CPU for the rest of the suite) and the failure says nothing about where they waited.
:func:`run_launch` runs the launch in its own session with ``PYTHONFAULTHANDLER=1``; on a timeout it
sends SIGABRT to every process under the launcher (faulthandler then writes the Python stack of each
thread to stderr), kills whatever is left, and fails the test with the end of both streams.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

STACKS_GRACE_S = 10.0
"""Seconds the processes get to write their stacks and exit after the SIGABRT."""


def _descendants(pid: int) -> list[psutil.Process]:
    """Every process under ``pid`` (workers first, deepest first), then ``pid`` itself."""
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        return [*reversed(root.children(recursive=True)), root]
    return []


def _signal_all(processes: Sequence[psutil.Process], signum: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            process.send_signal(signum)


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
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        pass
    processes = _descendants(process.pid)
    workers = processes[:-1]  # the launcher last: it must live to pass its workers' stacks on
    _signal_all(workers, signal.SIGABRT)
    time.sleep(1.0)
    _signal_all(processes[-1:], signal.SIGABRT)
    try:
        stdout, stderr = process.communicate(timeout=STACKS_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_all(_descendants(process.pid), signal.SIGKILL)
        stdout, stderr = process.communicate()
    finally:
        _signal_all(workers, signal.SIGKILL)  # none outlives the test
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    pytest.fail(
        f"still running after {timeout:.0f} s (a hang?): {' '.join(command[:6])} …\n"
        f"--- stdout (end) ---\n{stdout[-3000:]}\n--- stderr (end; the Python stacks) ---\n{stderr[-12000:]}",
        pytrace=False,
    )
