"""Training-step time of psgrpo methods relative to outcome GRPO, on the embedded default, in one process.

    python benchmarks/bench_method_overhead.py [--methods grpo ps] [--steps 20] [--rounds 2]

Each round trains every method for ``--steps`` steps from the same embedded checkpoint, seed and
data (the demo recipe), alternating methods so that machine noise hits all of them alike. Each
run is a fresh subprocess, so its peak RSS is its own. It reports the median of TRL's per-step
``step_time`` (first step of each run dropped as warm-up), the scorer/probe share, peak RSS and
the ratio to ``grpo``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

import torch
from _common import logged_medians, markdown_table, peak_rss_mib, recipe_configs, run_isolated

from psgrpo.data.tasks import load_task_split
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.trainer import ProcessGRPOTrainer


def run(method: str, steps: int, output_dir: str) -> dict[str, float]:
    task, args = recipe_configs(method, output_dir, max_steps=steps)
    torch.manual_seed(args.seed)
    model, tokenizer = load_model_and_tokenizer(None)
    trainer = ProcessGRPOTrainer(
        model=model, args=args, train_dataset=load_task_split(task, "train"), processing_class=tokenizer
    )
    trainer.train()
    return {**logged_medians(trainer.state.log_history), "peak_rss_mib": peak_rss_mib()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--methods", nargs="+", default=["grpo", "ps", "vps"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    cli = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {m: [] for m in cli.methods}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(cli.rounds):
            for method in cli.methods:
                results[method].append(run_isolated(run, method, cli.steps, f"{tmp}/{method}"))
    base = statistics.median(r["step_time"] for r in results["grpo"])
    print(f"\n{cli.rounds} rounds × {cli.steps} steps, median step time (s):\n")
    rows = []
    for method, runs in results.items():
        step, scorer, rss, tokens = (
            statistics.median(r[key] for r in runs)
            for key in ("step_time", "scorer", "peak_rss_mib", "tokens")
        )
        rows.append(
            [method, f"{step:.3f}", f"{step / base:.3f}×", f"{scorer:.3f}", f"{rss:.0f}", f"{tokens:.1f}"]
        )
    headers = ["method", "step time (s)", "ratio to grpo", "scorer/probes (s/step)", "peak RSS (MiB)"]
    print(markdown_table([*headers, "completion tokens"], rows))


if __name__ == "__main__":
    main()
