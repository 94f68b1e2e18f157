"""tests/launcher.py: a hung launch fails with its workers' Python stacks and leaves no process behind."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
import pytest
from launcher import run_launch

# A launcher (this -c program) that starts one worker which waits in ``wait_here`` forever, then waits for it.
HUNG_LAUNCH = """
import subprocess, sys
worker = "import time\\ndef wait_here():\\n    while True: time.sleep(0.1)\\nprint('worker up', flush=True)\\nwait_here()"
sys.exit(subprocess.Popen([sys.executable, "-c", worker], start_new_session=True).wait())
"""


def test_a_finished_launch_returns_its_output(tmp_path):
    done = run_launch([sys.executable, "-c", "print('out'); import sys; sys.exit(3)"], env=dict(os.environ),
                      cwd=tmp_path, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (3, "out\n")


def test_a_hung_launch_fails_with_the_workers_stack_and_leaves_nothing_running(tmp_path: Path):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(pytest.fail.Exception) as failure:
        run_launch([sys.executable, "-c", HUNG_LAUNCH], env=dict(os.environ), cwd=tmp_path, timeout=3)
    message = str(failure.value)
    assert "still running after 3 s (a hang?)" in message
    assert "worker up" in message  # the worker's stdout
    assert "in wait_here" in message  # faulthandler's stack of the worker, on stderr
    left = [p for p in psutil.process_iter(["cmdline"]) if "wait_here" in " ".join(p.info["cmdline"] or [])]
    assert [
        p for p in left if p.pid not in before and p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ] == []
