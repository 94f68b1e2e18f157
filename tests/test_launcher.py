"""tests/launcher.py: a hung launch fails with its workers' Python stacks and leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import launcher
import psutil
import pytest
from launcher import run_launch


def hung_launch(marker: str, ignore_abort: bool = False) -> list[str]:
    """A launcher that starts one worker in a session of its own (as torch elastic does), which waits in
    ``wait_here`` forever (ignoring SIGABRT if asked), then waits for it; ``marker`` names the processes."""
    worker = (
        "import signal, time\n"
        + ("signal.signal(signal.SIGABRT, signal.SIG_IGN)\n" if ignore_abort else "")
        + "def wait_here():\n    while True: time.sleep(0.1)\nprint('worker up', flush=True)\nwait_here()"
    )
    code = (
        "import subprocess, sys\n"
        f"sys.exit(subprocess.Popen([sys.executable, '-c', {worker!r}, {marker!r}], start_new_session=True).wait())"
    )
    return [sys.executable, "-c", code, marker]


def left_running(marker: str) -> list[psutil.Process]:
    """Live processes (not zombies) whose command line holds ``marker``."""
    alive = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if (
            marker in " ".join(process.info["cmdline"] or [])
            and process.info["status"] != psutil.STATUS_ZOMBIE
        ):
            alive.append(process)
    return alive


def test_a_finished_launch_returns_its_output(tmp_path):
    done = run_launch([sys.executable, "-c", "print('out'); import sys; sys.exit(3)"], env=dict(os.environ),
                      cwd=tmp_path, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (3, "out\n")


def test_a_hung_launch_fails_with_the_workers_stack_and_leaves_nothing_running(tmp_path: Path):
    marker = f"hung-{os.getpid()}-{time.monotonic_ns()}"
    with pytest.raises(pytest.fail.Exception) as failure:
        run_launch(hung_launch(marker), env=dict(os.environ), cwd=tmp_path, timeout=3)
    message = str(failure.value)
    assert "still running after 3 s (a hang?)" in message
    assert "worker up" in message  # the worker's stdout
    assert "in wait_here" in message  # faulthandler's stack of the worker, on stderr
    assert left_running(marker) == [] and not list(tmp_path.glob("core*"))  # no process, no core file


def test_a_worker_that_survives_the_abort_is_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "STACKS_GRACE_S", 1.0)
    marker = f"stubborn-{os.getpid()}-{time.monotonic_ns()}"
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match="still running after 2 s"):
        run_launch(hung_launch(marker, ignore_abort=True), env=dict(os.environ), cwd=tmp_path, timeout=2)
    assert time.monotonic() - start < 30 and left_running(marker) == []


def test_an_interrupted_wait_stops_the_launch(tmp_path, monkeypatch):
    """Ctrl-C in the test (the launch has a session of its own, so the terminal's SIGINT does not reach it)."""
    marker = f"interrupted-{os.getpid()}-{time.monotonic_ns()}"
    real = subprocess.Popen.communicate

    def interrupted(self, *args, **kwargs):
        time.sleep(1.0)  # the worker has started
        monkeypatch.setattr(subprocess.Popen, "communicate", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_launch(hung_launch(marker), env=dict(os.environ), cwd=tmp_path, timeout=60)
    time.sleep(0.5)
    assert left_running(marker) == []
