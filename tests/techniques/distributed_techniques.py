"""Run by test_techniques_distributed.py under ``torch.distributed.run`` with 2 CPU processes (gloo).

6 rows per process, groups of 4: the middle group spans both processes. Each rank writes what it
saw to ``OUT/rank{r}.json`` so the test can check that every rank made the same decisions.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from test_trainer_mixin import _fill_bank  # noqa: E402
from trainer_helpers import record_batches, thread_names, tiny_run_args  # noqa: E402

from psgrpo.config.process_grpo_config import ProcessGRPOConfig  # noqa: E402
from psgrpo.data.arith import make_arith_dataset  # noqa: E402
from psgrpo.distributed import close_process_group  # noqa: E402
from psgrpo.rewards.functions import correctness_reward, format_reward  # noqa: E402
from psgrpo.techniques.memory_bank import prompt_key  # noqa: E402
from psgrpo.tiny.model import build_tiny_model  # noqa: E402
from psgrpo.tiny.tokenizer import build_char_tokenizer  # noqa: E402
from psgrpo.trainer import ProcessGRPOTrainer  # noqa: E402


def main(out: Path) -> None:
    tokenizer = build_char_tokenizer()
    model = build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    dataset = make_arith_dataset("train", n=12)
    args = ProcessGRPOConfig(
        **tiny_run_args(
            out,
            per_device_train_batch_size=6,
            max_steps=2,
            memory_bank=True,
            reward_norm_momentum=0.9,
            scale_rewards="none",
            curriculum="linear",
            curriculum_steps=4,
            save_strategy="steps",  # the atomic save with 2 processes: per-rank files, then one commit
            save_steps=2,
        )
    )
    trainer = ProcessGRPOTrainer(
        model=model,
        reward_funcs=[correctness_reward, format_reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    _fill_bank(trainer, dataset, tokenizer)
    batches = record_batches(trainer)
    trainer.train()
    rank, batch = trainer.accelerator.process_index, batches[-1]
    rows = {}
    for local in range(6):
        length = int(batch["completion_mask"][local].sum())
        entry = trainer.memory_bank.peek(prompt_key(trainer.step_record.inputs[local]["prompt"]))
        rows[rank * 6 + local] = {
            "replayed": batch["completion_ids"][local, :length].tolist() == entry.completion_ids,
            "old_logps": batch["old_per_token_logps"][local, :length].tolist(),
            "advantage": batch["advantages"][local].item(),  # grpo: TRL's 1-D A_i
        }
    summary = {
        "rescued": sorted(trainer._rescued_rows),
        "bank": trainer.memory_bank.state_dict(),
        "reward_norm": trainer.reward_normalizer.state_dict(),
        "rows": rows,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    close_process_group()
    # gloo's worker threads must be gone before the interpreter exits (see close_process_group)
    (Path(sys.argv[1]) / f"threads{os.environ['RANK']}.json").write_text(json.dumps(thread_names()))
