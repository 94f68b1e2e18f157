"""compare's run locks: one process trains a run, others skip it, and a dead holder frees it.

compare itself with a locked run: tests/commands/test_compare.py."""

from __future__ import annotations

import json
import os
import sys

import pytest

from psgrpo.commands.compare import _next_action, _start_run
from psgrpo.compare.claim import claim_holder, claim_path, claim_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock exists on POSIX systems only")


def test_a_claim_excludes_others_until_closed(tmp_path):
    run_dir = tmp_path / "runs" / "grpo-seed0"
    first = claim_run(run_dir)
    assert first is not None
    assert claim_path(run_dir) == tmp_path / "runs" / ".grpo-seed0.lock" and not run_dir.exists()
    assert claim_holder(run_dir) == f"pid {os.getpid()} on {os.uname().nodename}"
    assert claim_run(run_dir) is None  # flock: a second open file is refused, even in one process
    first.close()
    second = claim_run(run_dir)
    assert second is not None
    second.close()


def test_a_killed_holder_frees_its_run(tmp_path, hold_run_lock):
    run_dir = tmp_path / "runs" / "ps-seed3"
    holder = hold_run_lock(run_dir)
    assert claim_run(run_dir) is None
    assert claim_holder(run_dir) == "pid 4242 on elsewhere"
    holder.kill()  # SIGKILL: the way a run dies without cleaning up
    holder.wait(timeout=30)
    mine = claim_run(run_dir)
    assert mine is not None  # the kernel dropped the dead process's lock
    mine.close()


def test_next_action_trains_only_a_claimed_unfinished_run(tmp_path):
    run_dir = tmp_path / "runs" / "vps-seed0"
    spec = {"recipe": {}, "flags": {"max_steps": ["2"]}}
    assert _next_action(run_dir, spec, claimed=False) == "busy"
    assert _next_action(run_dir, spec, claimed=True) == "train"
    _start_run(run_dir, spec)
    assert json.loads((run_dir / "compare_run.json").read_text()) == spec
    (run_dir / "report.json").write_text("{}")  # another process finished it since this one planned
    assert _next_action(run_dir, spec, claimed=True) == "done"
    (run_dir / "report.json").unlink()
    (run_dir / "partial.txt").write_text("left by an interrupted run")
    _start_run(run_dir, spec)
    assert [p.name for p in run_dir.iterdir()] == ["compare_run.json"]  # cleared for a fresh start
