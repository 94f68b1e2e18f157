"""Resume equals an unbroken run: a real training process is SIGKILLed after or during a save, then resumed.

Per case, resume_worker.py runs as three processes on the embedded tiny checkpoint: A trains 6
steps unbroken; B runs the same configuration and dies by SIGKILL; C resumes B's output directory
with ``resume_from_checkpoint="true"`` (what ``psgrpo train --resume_from_checkpoint true`` passes)
and trains to step 6. C must end with A's weights, optimizer and LR-scheduler state, RNG states
and technique state, and every step after the resume point must train on A's inputs (same sampled
completions, advantages, old log-probs) and log A's numbers (loss, β, rewards, KL, reward-norm
and memory-bank metrics).

* grpo with every stateful technique (KL schedule, reward normalisation, curriculum, memory bank),
  killed *inside* the save of checkpoint-6 with ``save_total_limit=1``: rotation must have kept
  checkpoint-4, resume must skip the half-written save (with a warning naming it) and use checkpoint-4
  (an epoch boundary: the curriculum sampler's next epoch);
* ps, killed right after checkpoint-4 (an epoch boundary: TRL's shuffled sampler's next epoch);
* vps with the techniques and ``steps_per_generation=2``, killed right after checkpoint-3, in the
  middle of a generation cycle (step 4 trains on the completions generated at step 3);
* tree ([2, 2], real tree sampling) with ``steps_per_generation=2``, killed the same way.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from psgrpo.checkpoints.atomic import MARKER, incomplete_reason
from psgrpo.metrics_log import read_metrics

WORKER = Path(__file__).with_name("resume_worker.py")

COMMON = dict(
    max_steps=6,
    per_device_train_batch_size=8,  # 2 prompts × 4 generations; 8 arith rows → 4 steps per epoch
    num_generations=4,
    max_completion_length=64,
    learning_rate=1e-4,
    temperature=1.0,
    top_k=0,
    top_p=1.0,
    save_strategy="steps",
    save_steps=2,
    save_total_limit=1,
    logging_steps=1,
    report_to=[],
    use_cpu=True,
    bf16=False,
    seed=0,
    disable_tqdm=True,
)
TECHNIQUES = dict(
    beta=0.04,
    kl_schedule="linear",
    reward_norm_momentum=0.9,
    scale_rewards="none",
    curriculum="linear",
    memory_bank=True,
)
CASES = {
    # name: (config, how B dies, at which step, the checkpoint C must resume from)
    "grpo-techniques-killed-during-save": ({"method": "grpo", **TECHNIQUES}, "during_save", 6, 4),
    "ps-killed-after-save": ({"method": "ps"}, "after_save", 4, 4),
    "vps-techniques-mid-generation-cycle": (
        {"method": "vps", **TECHNIQUES, "steps_per_generation": 2, "save_steps": 3},
        "after_save",
        3,
        3,
    ),
    # real tree sampling (two generate() calls per batch, on the global RNG), killed mid generation cycle
    "tree-mid-generation-cycle": (
        {
            "method": "tree",
            "tree_branching": [2, 2],
            "tree_segment_tokens": 16,
            "steps_per_generation": 2,
            "save_steps": 3,
        },
        "after_save",
        3,
        3,
    ),
}
TIMING = ("time", "seconds", "runtime", "per_second")


def _spec(tmp_path: Path, name: str, config: dict, output_dir: Path, **extra) -> Path:
    spec = {
        "config": {**COMMON, **config, "output_dir": str(output_dir)},
        "record": str(tmp_path / f"{name}.pt"),
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**spec, **extra}))
    return path


def _start(spec: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(spec)], stdout=log.open("w"), stderr=subprocess.STDOUT, env=env
    )


def _finish(process: subprocess.Popen, log: Path, expect: int) -> str:
    returncode = process.wait(timeout=900)
    text = log.read_text()
    assert returncode == expect, f"worker exited with {returncode}, expected {expect}:\n{text[-4000:]}"
    return text


def _assert_same(a, c, where: str) -> None:
    """Exact equality of nested dicts / lists / tuples of tensors, arrays and plain values."""
    if isinstance(a, torch.Tensor):
        assert isinstance(c, torch.Tensor) and a.shape == c.shape and torch.equal(a, c), where
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, c), where
    elif isinstance(a, dict):
        assert a.keys() == c.keys(), f"{where}: keys {sorted(a)} != {sorted(c)}"
        for key in a:
            _assert_same(a[key], c[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(c), f"{where}: length {len(a)} != {len(c)}"
        for i, (x, y) in enumerate(zip(a, c, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(c, float) and math.isnan(c), where
    else:
        assert a == c, f"{where}: {a!r} != {c!r}"


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_resume_after_sigkill_equals_unbroken_run(tmp_path, case):
    config, kill_when, kill_step, resume_step = CASES[case]
    broken = tmp_path / "broken"
    # A and B are independent: run them side by side
    unbroken = _start(_spec(tmp_path, "a", config, tmp_path / "unbroken"), tmp_path / "a.log")
    killed = _start(
        _spec(tmp_path, "b", config, broken, kill_when=kill_when, kill_step=kill_step), tmp_path / "b.log"
    )
    _finish(killed, tmp_path / "b.log", -signal.SIGKILL)
    _finish(unbroken, tmp_path / "a.log", 0)

    checkpoints = sorted(p.name for p in broken.iterdir() if "checkpoint" in p.name)
    if kill_when == "during_save":  # the save of kill_step died half-way: staged, never committed
        staged = broken / f"partial-checkpoint-{kill_step}" / f"checkpoint-{kill_step}"
        assert (staged / "optimizer.pt").is_file() and not (staged / MARKER).exists()
        assert checkpoints == [f"checkpoint-{resume_step}", f"partial-checkpoint-{kill_step}"]
    else:
        assert checkpoints == [f"checkpoint-{resume_step}"]  # save_total_limit=1 rotated the older ones out
    assert incomplete_reason(broken / f"checkpoint-{resume_step}") is None

    log = tmp_path / "c.log"
    resumed = _start(_spec(tmp_path, "c", config, broken, resume="true"), log)
    text = _finish(resumed, log, 0)
    if kill_when == "during_save":
        assert f"skipping incomplete checkpoint {broken / f'partial-checkpoint-{kill_step}'}" in text
    assert sorted(p.name for p in broken.iterdir() if "checkpoint" in p.name) == ["checkpoint-6"]

    # metrics.jsonl holds each step once, as the unbroken run's does: the killed run's records after the
    # checkpoint were dropped before the replay logged them again (they were doubled before 2026-12-07)
    def logged_steps(run: Path) -> list[int]:
        return [record["step"] for record in read_metrics(run) if "loss" in record]

    assert logged_steps(broken) == logged_steps(tmp_path / "unbroken") == list(range(1, 7))
    a, c = (
        torch.load(tmp_path / "a.pt", weights_only=False),
        torch.load(tmp_path / "c.pt", weights_only=False),
    )
    # the steps after the resume point trained on the same inputs: same prompts, completions, advantages …
    assert [step for step, _ in c["steps"]] == list(range(resume_step, 6))
    a_steps = dict(a["steps"])
    for step, inputs in c["steps"]:
        _assert_same(a_steps[step], inputs, f"inputs of step {step}")
    # … and logged the same numbers (loss, beta, rewards, KL, reward_norm/*, memory/*)
    a_logs = {log["step"]: log for log in a["logs"] if "loss" in log}
    c_logs = [log for log in c["logs"] if "loss" in log]
    assert [log["step"] for log in c_logs] == list(range(resume_step + 1, 7))
    for log in c_logs:
        kept = {k: v for k, v in log.items() if not any(t in k for t in TIMING)}
        _assert_same({k: a_logs[log["step"]][k] for k in kept}, kept, f"log of step {log['step']}")
    if "kl_schedule" in config:
        assert [log["beta"] for log in c_logs] == [a_logs[s]["beta"] for s in range(resume_step + 1, 7)]
    for key in (
        "params",
        "optimizer",
        "scheduler",
        "rng",
        "techniques",
        "beta",
        "trl_step",
        "completion_tokens_seen",
    ):
        _assert_same(a[key], c[key], key)
    if config.get("memory_bank"):
        assert len(a["techniques"]["memory_bank"]["entries"]) > 0  # the comparison compared something
