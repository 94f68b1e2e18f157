"""cProfile of a few training steps of one method at a bench_step shape: where a step's time goes.

    python benchmarks/profile_step.py --method vps [--steps 6] [--length 64] [--prompts 4] [--generations 4]

The embedded checkpoint with the demo recipe, every completion forced to ``--length`` tokens (as in
``bench_step.py``), ``OMP_NUM_THREADS`` as the caller sets it. Prints the cumulative-time lines of
psgrpo's functions and of TRL's trainer (generation, loss forward), sorted by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile

import torch
from _common import recipe_configs

from psgrpo.config.options import METHODS
from psgrpo.data.tasks import load_task_split
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.trainer import ProcessGRPOTrainer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--method", choices=METHODS, default="vps")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--lines", type=int, default=35, help="how many profile lines to print")
    cli = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        task, args = recipe_configs(
            cli.method, tmp, max_steps=cli.steps, per_device_train_batch_size=cli.prompts * cli.generations,
            num_generations=cli.generations, max_completion_length=cli.length,
            generation_kwargs={"min_new_tokens": cli.length}, logging_steps=1, report_to="none",
            save_strategy="no",
        )  # fmt: skip
        torch.manual_seed(args.seed)
        model, tokenizer = load_model_and_tokenizer(None)
        trainer = ProcessGRPOTrainer(
            model=model, args=args, train_dataset=load_task_split(task, "train"), processing_class=tokenizer
        )
        profile = cProfile.Profile()
        profile.enable()
        trainer.train()
        profile.disable()
    stats = pstats.Stats(profile).sort_stats("cumulative")
    stats.print_stats(r"psgrpo|trl/trainer", cli.lines)


if __name__ == "__main__":
    main()
