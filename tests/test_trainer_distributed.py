"""Two processes (DDP, gloo on CPU) train exactly like one process with the same global batch.

Groups of 4 generations with a global batch of 12 and 2 processes: rank 0 holds group 0 and
half of group 1, rank 1 the other half and group 2 (``tree``, which samples each group on one process:
a global batch of 16, two whole groups per rank). Completions are fixed (see
``distributed_worker.FixedRolloutTrainer``), so both runs see the same rollouts; everything else
(rewards, TRL's group advantages, PS step-score gathering, VPS probes and the zero-variance
gather, the loss, DDP's gradient averaging) is the real code. For every method the test checks
that the concatenated per-rank inputs and outputs of the advantage estimator, the old
log-probs, the logged loss and gradient norm, and the final weights equal the 1-process run.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from distributed_worker import CONFIGS, global_batch, run_config
from launcher import run_launch
from trainer_helpers import save_tiny_model
from transformers import AutoModelForCausalLM

pytestmark = pytest.mark.slow

TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parent
WORLD_SIZE = 2
FILL = {"confidence": math.nan, "segment_index": -1}
"""Padding value of per-row tensors whose width depends on the batch (default 0)."""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, char_tokenizer) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("distributed") / "model", char_tokenizer)


@pytest.fixture(scope="module")
def two_process_run(model_dir) -> Path:
    """Launch tests/distributed_worker.py on 2 CPU processes with torchrun; return its output dir."""
    out = model_dir.parent / "two_processes"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={WORLD_SIZE}",
        str(TESTS_DIR / "distributed_worker.py"), str(out), str(model_dir),
    ]  # fmt: skip
    result = run_launch(command, env=env, cwd=ROOT, timeout=600)
    assert result.returncode == 0, f"2-process run failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return out


def _pad(value: torch.Tensor, width: int, fill: float) -> torch.Tensor:
    return F.pad(value, (0, width - value.shape[1]), value=fill) if value.dim() == 2 else value


def _joined(
    key: str, per_rank: list[torch.Tensor], reference: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate the ranks' rows; pad rank and reference tensors to one width (widths follow the local batch)."""
    width = max(t.shape[1] for t in [*per_rank, reference]) if reference.dim() == 2 else 0
    fill = FILL.get(key, 0)
    return torch.cat([_pad(t, width, fill) for t in per_rank]), _pad(reference, width, fill)


def _assert_same(key: str, per_rank: list, reference) -> None:
    if not isinstance(reference, torch.Tensor):
        assert all(value == reference for value in per_rank), key
        return
    joined, reference = _joined(key, per_rank, reference)
    if reference.is_floating_point():
        torch.testing.assert_close(joined, reference, rtol=1e-5, atol=1e-5, equal_nan=True, msg=key)
    else:
        assert torch.equal(joined, reference), key


def _unpadded(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    return [row[keep.bool()].tolist() for row, keep in zip(ids, mask, strict=True)]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_two_processes_equal_one(name, two_process_run, model_dir, tmp_path):
    ranks = [
        torch.load(two_process_run / name / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE)
    ]
    reference = run_config(name, tmp_path, model_dir, per_device_batch=global_batch(name))
    assert [r["world_size"] for r in ranks] == [WORLD_SIZE] * WORLD_SIZE and reference["world_size"] == 1
    assert len(reference["estimator_calls"]) == len(reference["batches"]) == 2  # two optimizer steps

    for step, ref_batch in enumerate(reference["batches"]):
        batches = [r["batches"][step] for r in ranks]
        for ids, mask in (("prompt_ids", "prompt_mask"), ("completion_ids", "completion_mask")):
            joined = [row for b in batches for row in _unpadded(b[ids], b[mask])]
            assert joined == _unpadded(ref_batch[ids], ref_batch[mask]), f"step {step}: {ids} differ"
        if "old_per_token_logps" in ref_batch:  # VPS computes them with its probes
            _assert_same(
                "old_per_token_logps",
                [b["old_per_token_logps"] for b in batches],
                ref_batch["old_per_token_logps"],
            )

        ref_call = reference["estimator_calls"][step]
        calls = [r["estimator_calls"][step] for r in ranks]
        assert ref_call["result"].abs().sum() > 0, "the test needs non-zero advantages"
        for key, value in ref_call.items():  # group statistics, process signal, token advantages
            _assert_same(key, [c[key] for c in calls], value)

    for r in ranks:
        assert len(r["logs"]) == len(reference["logs"]) == 2
        for log, ref_log in zip(r["logs"], reference["logs"], strict=True):
            assert log["loss"] == pytest.approx(ref_log["loss"], rel=1e-4, abs=1e-6)
            assert log["grad_norm"] == pytest.approx(ref_log["grad_norm"], rel=1e-4)
    initial = dict(AutoModelForCausalLM.from_pretrained(model_dir).named_parameters())
    for param, value in reference["params"].items():  # SGD: DDP-averaged gradients = the 1-process gradient
        assert torch.equal(ranks[0]["params"][param], ranks[1]["params"][param]), param
        update, ref_update = ranks[0]["params"][param] - initial[param], value - initial[param]
        assert ref_update.norm() > 0, param
        assert (update - ref_update).norm() <= 1e-3 * ref_update.norm(), param


def test_sharded_probes_run_the_same_forwards_on_every_rank(two_process_run):
    """FSDP2 (CPU): 5 rows on rank 0, 1 on rank 1, 2 rows per chunk → both ranks run 3 chunks."""
    ranks = [torch.load(two_process_run / f"probe_symmetry_rank{r}.pt") for r in range(WORLD_SIZE)]
    assert [r["rows"] for r in ranks] == [5, 1] and [r["chunks"] for r in ranks] == [3, 3]
    assert [r["packed_forwards"] for r in ranks] == [3, 3]  # one forward per packed chunk
    assert [r["cached_forwards"] for r in ranks] == [6, 6]  # trajectory + probe forward per chunk
    for r in ranks:  # sharded = unsharded; the idle forwards change nothing
        torch.testing.assert_close(r["packed"], r["packed_reference"], rtol=1e-5, atol=1e-5, equal_nan=True)
        torch.testing.assert_close(r["cached"], r["cached_reference"], rtol=1e-5, atol=1e-5, equal_nan=True)


def test_tree_entropy_cuts_measure_on_every_rank_when_one_has_nothing_to_measure(two_process_run):
    """Rank 1's roots all end at once (every token counts as an end there): it still runs the one entropy forward
    of the inner level (on a one-token stand-in row) while rank 0 measures its four open roots, so neither rank
    waits for the other's weight gathers."""
    ranks = [torch.load(two_process_run / f"tree_entropy_rank{r}.pt") for r in range(WORLD_SIZE)]
    assert [r["forwards"] for r in ranks] == [[4], [1]]
    for r in ranks:
        assert len(r["loss"]) == 1 and math.isfinite(r["loss"][0])
        assert len(r["ends"]) == len(r["lengths"]) == 8
    # rank 0: cut before the top-entropy token of positions 3..5, unless the root ended (EOS) first
    assert all(
        end in (3, 4, 5) or end == n for (end,), n in zip(ranks[0]["ends"], ranks[0]["lengths"], strict=True)
    )
    # rank 1: TRL's generation cuts each root after its first token (an "end"): not cut, not continued
    assert ranks[1]["ends"] == [[1]] * 8 and ranks[1]["lengths"] == [1] * 8
