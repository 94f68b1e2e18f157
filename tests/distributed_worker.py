"""Runs for the 1-process vs 2-process equivalence test (``tests/test_trainer_distributed.py``).

Every method trains a tiny model for two steps on fixed completions, so a run with one process
and a run with two processes (gloo, CPU) see the same rollouts. Each process records what the
advantage estimator received and returned, the logged losses and the final weights in
``OUT/<config>/rank<r>.pt``. The 2-process run also checks that sharded VPS probes (FSDP2 on
CPU) run the same number of forwards on every rank when the ranks hold different numbers of
rows, and that tree sampling with entropy cuts runs one entropy forward per inner level on every rank
when only one rank has nodes to measure. Launched by the test as::

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/distributed_worker.py OUT MODEL_DIR
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import torch
from trainer_helpers import FIXED_COMPLETIONS, FixedRollouts, length_reward, record_batches, tiny_run_args
from transformers import AutoModelForCausalLM

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.distributed import close_process_group
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.tiny.tokenizer import build_char_tokenizer
from psgrpo.trainer import ProcessGRPOTrainer

NUM_GENERATIONS = 4
GLOBAL_BATCH = 12
"""Three groups of four: with two processes rank 0 holds group 0 and half of group 1, rank 1 the rest."""

CONFIGS: dict[str, dict[str, Any]] = {
    "grpo": {"method": "grpo"},
    "ps": {"method": "ps", "segmenter": "newline", "step_scorer": "arithmetic"},
    # log form: on a random model C_k ~ 1e-6, so ΔC in probabilities would barely move the loss
    "vps": {"method": "vps", "vps_min_segment_tokens": 2, "vps_probe_chunk_size": 4, "vps_log_form": True},
    "vps_markers": {
        "method": "vps",
        "vps_boundaries": "markers",
        "segmenter": "newline",
        "vps_probe_chunk_size": 4,
    },
    # rank 0 and rank 1 hold different numbers of (row, k) probes: the forward counts must still agree
    "vps_gold_suffix": {
        "method": "vps",
        "vps_boundaries": "markers",
        "vps_probe": "gold_suffix",
        "segmenter": "newline",
        "vps_probe_chunk_size": 4,
    },
    # the fixed completions as the leaves of [2, 2] trees; V and σ come from the gathered rewards
    "tree": {"method": "tree", "tree_branching": [2, 2], "tree_segment_tokens": 16},
}

GLOBAL_BATCHES = {"tree": 16}
"""Configs that need another global batch: tree samples each group on one process (two whole groups each)."""


def global_batch(name: str) -> int:
    """The global batch config ``name`` runs with (split evenly over the processes)."""
    return GLOBAL_BATCHES.get(name, GLOBAL_BATCH)


class FixedRolloutTrainer(FixedRollouts, ProcessGRPOTrainer):
    """ProcessGRPOTrainer whose sampler is replaced by fixed completions chosen by global row index."""


def _cpu(value: Any) -> Any:
    return value.detach().cpu().clone() if isinstance(value, torch.Tensor) else value


def run_config(name: str, out_dir: Path, model_dir: Path, per_device_batch: int) -> dict[str, Any]:
    """Train config ``name`` for two steps; return (and save as ``out_dir/name/rank<r>.pt``) the record."""
    tokenizer = build_char_tokenizer()
    args = ProcessGRPOConfig(
        **tiny_run_args(
            out_dir / name,
            output_dir=str(out_dir / name / "trainer"),
            max_steps=2,
            per_device_train_batch_size=per_device_batch,
            num_generations=NUM_GENERATIONS,
            max_completion_length=96,
            # SGD: the weights then compare the gradients themselves (Adam's first step, ~lr·sign(g),
            # would turn float noise in near-zero gradients into lr-sized differences)
            optim="sgd",
            learning_rate=0.1,
            bf16=False,  # TRL's default autocasts to bf16 (~0.4% noise), which would swamp the comparison
        ),
        **CONFIGS[name],
    )
    trainer = FixedRolloutTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=[correctness_reward, format_reward, length_reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=tokenizer,
    )
    estimator_calls: list[dict[str, Any]] = []
    estimator = trainer.advantage_estimator

    def recording_estimator(**kwargs):
        result = estimator(**kwargs)
        estimator_calls.append({**{k: _cpu(v) for k, v in kwargs.items()}, "result": _cpu(result)})
        return result

    trainer.advantage_estimator = recording_estimator
    batches = record_batches(trainer)
    trainer.train()
    record = {
        "rank": trainer.accelerator.process_index,
        "world_size": trainer.accelerator.num_processes,
        "batches": [{k: _cpu(v) for k, v in b.items()} for b in batches],
        "estimator_calls": estimator_calls,
        "logs": [log for log in trainer.state.log_history if "loss" in log],
        "params": {n: _cpu(p) for n, p in trainer.accelerator.unwrap_model(trainer.model).named_parameters()},
    }
    path = out_dir / name / f"rank{record['rank']}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(record, path)
    return record


def probe_symmetry(out_dir: Path, model_dir: Path) -> None:
    """FSDP2-shard the tiny model and run VPS probes with a different number of rows per rank.

    Rank 0 gets five rows, rank 1 one row (chunk size 2: three chunks vs one). Each forward of
    a sharded model all-gathers parameters, so without ``min_chunks`` rank 0 would wait forever
    for rank 1's second forward. Records the forwards each rank ran, the confidences, and those
    of the unsharded model for comparison.
    """
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from psgrpo.distributed import max_over_processes
    from psgrpo.vps.cached import cached_confidence
    from psgrpo.vps.packed import packed_confidence
    from psgrpo.vps.probes import ProbeBatch, build_probe_ids, num_chunks

    class Gloo:  # the two things max_over_processes needs from an Accelerator
        num_processes = dist.get_world_size()
        device = torch.device("cpu")

        @staticmethod
        def gather(tensor):
            parts = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
            dist.all_gather(parts, tensor)
            return torch.cat(parts)

    rank = dist.get_rank()
    tokenizer = build_char_tokenizer()
    reference = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    sharded = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for layer in sharded.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(sharded, mesh=mesh)

    rows = 5 if rank == 0 else 1
    data = make_arith_dataset("train", n=rows)
    prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in data["prompt"]]
    completions = [
        tokenizer(FIXED_COMPLETIONS[i % 5], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for i in range(rows)
    ]
    batch = ProbeBatch.from_lists(prompts, completions, *build_probe_ids(tokenizer, data["answer"]))
    boundaries = [list(range(3, 3 + 6 * (i + rank), 6)) for i in range(rows)]  # 0…4 cuts per row

    def every_fifth(entropies, row):
        return list(range(2, len(entropies) - 1, 5))[:3]

    chunks = max_over_processes(num_chunks(rows, 2), Gloo)
    forwards = {"count": 0}
    sharded.register_forward_hook(lambda *_: forwards.__setitem__("count", forwards["count"] + 1))
    results: dict[str, Any] = {"rank": rank, "rows": rows, "chunks": chunks}
    packed = packed_confidence(sharded, batch, boundaries, chunk_size=2, min_chunks=chunks)
    results["packed_forwards"] = forwards["count"]
    cached = cached_confidence(sharded, batch, every_fifth, chunk_size=2, min_chunks=chunks)
    results["cached_forwards"] = forwards["count"] - results["packed_forwards"]
    results["packed"] = packed.log_confidence
    results["cached"] = cached.probes.log_confidence
    results["packed_reference"] = packed_confidence(reference, batch, boundaries, chunk_size=2).log_confidence
    results["cached_reference"] = cached_confidence(
        reference, batch, every_fifth, chunk_size=2
    ).probes.log_confidence
    torch.save(results, out_dir / f"probe_symmetry_rank{rank}.pt")


def tree_entropy_sampling(out_dir: Path, model_dir: Path) -> None:
    """One real step of ``tree`` with ``tree_boundaries='entropy'`` (no fixed rollouts): rank 1 treats every
    token as an end, so its roots end at once and it has no open node to measure while rank 0 has four. Each
    rank records the rows of every entropy forward it ran, and the inner segment ends it sampled."""
    rank = int(os.environ.get("RANK", "0"))
    args = ProcessGRPOConfig(
        **tiny_run_args(
            out_dir / "tree_entropy",
            output_dir=str(out_dir / "tree_entropy" / "trainer"),
            max_steps=1,
            per_device_train_batch_size=8,
            num_generations=4,
            max_completion_length=24,
            bf16=False,
        ),
        method="tree",
        tree_branching=[2, 2],
        tree_segment_tokens=6,
        tree_boundaries="entropy",
    )
    trainer = ProcessGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=[correctness_reward, format_reward, length_reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=build_char_tokenizer(),
    )
    if rank == 1:
        trainer.eos_token_ids = list(range(trainer.model.config.vocab_size))
    forwards: list[int] = []  # rows of each entropy forward tree sampling ran
    measure, segment_entropies = trainer._get_per_token_logps_and_entropies, trainer._segment_entropies

    def recording_segment_entropies(contexts, segments):
        def recording_measure(model, input_ids, *rest, **kwargs):
            forwards.append(input_ids.shape[0])
            return measure(model, input_ids, *rest, **kwargs)

        trainer._get_per_token_logps_and_entropies = recording_measure
        try:
            return segment_entropies(contexts, segments)
        finally:
            trainer._get_per_token_logps_and_entropies = measure

    trainer._segment_entropies = recording_segment_entropies
    batches = record_batches(trainer)
    trainer.train()
    record = {
        "forwards": forwards,
        "ends": trainer.last_credit.process.segment_ends,
        "lengths": batches[0]["completion_mask"].sum(1).tolist(),
        "loss": [log["loss"] for log in trainer.state.log_history if "loss" in log],
    }
    torch.save(record, out_dir / f"tree_entropy_rank{rank}.pt")


def main(argv: list[str]) -> None:
    out_dir, model_dir = Path(argv[0]), Path(argv[1])
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    for name in CONFIGS:
        run_config(name, out_dir, model_dir, global_batch(name) // world_size)
    probe_symmetry(out_dir, model_dir)
    tree_entropy_sampling(out_dir, model_dir)
    close_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
