"""Techniques under 2 processes (CPU, gloo): the same decisions and statistics on every rank."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from launcher import run_launch

from psgrpo.checkpoints.atomic import MARKER, incomplete_reason

SCRIPT = Path(__file__).resolve().parent / "distributed_techniques.py"
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_two_processes_share_bank_rescues_and_reward_statistics(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",  # a free rendezvous port: the default 29500 can still be held by an earlier test's run
        "--nproc_per_node",
        "2",
        str(SCRIPT),
        str(tmp_path),
    ]
    result = run_launch(command, env=env, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    rank0, rank1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    for key in ("rescued", "bank", "reward_norm"):
        assert rank0[key] == rank1[key], key
    assert rank0["rescued"] == [3, 7, 11]  # the middle group (rows 4–7) spans both processes
    rows = {int(k): v for k, v in {**rank0["rows"], **rank1["rows"]}.items()}
    for row, seen in rows.items():
        if row in (3, 7, 11):
            assert seen["replayed"] and seen["old_logps"] == [-0.25] * len(seen["old_logps"])
            assert seen["advantage"] > 0
        else:
            assert not seen["replayed"] and seen["advantage"] < 0
    checkpoint = tmp_path / "out" / "checkpoint-2"  # both ranks wrote into the staging root, rank 0 committed
    assert incomplete_reason(checkpoint) is None and not list((tmp_path / "out").glob("partial-*"))
    files = json.loads((checkpoint / MARKER).read_text())["files"]
    per_rank = {
        f"{name}_{r}.{ext}" for name, ext in (("rng_state", "pth"), ("psgrpo_rollout", "pt")) for r in (0, 1)
    }
    assert per_rank | {"psgrpo_techniques.json"} <= set(files)
    if Path("/proc/self/task").is_dir():  # close_process_group stopped gloo's threads before exit
        for r in (0, 1):
            assert "pt_gloo_runloop" not in json.loads((tmp_path / f"threads{r}.json").read_text())
