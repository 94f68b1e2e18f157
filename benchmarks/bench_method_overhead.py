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
import multiprocessing
import resource
import statistics
import tempfile

import torch
from trl import ModelConfig, TrlParser

from psgrpo.cli import DEFAULT_RECIPE, load_model_and_tokenizer
from psgrpo.config import ProcessGRPOConfig, TaskConfig
from psgrpo.data.tasks import load_task_split
from psgrpo.trainer import ProcessGRPOTrainer


def run(method: str, steps: int, output_dir: str) -> dict[str, float]:
    task, args, _ = TrlParser((TaskConfig, ProcessGRPOConfig, ModelConfig)).parse_args_and_config(
        [
            "--config",
            str(DEFAULT_RECIPE),
            "--method",
            method,
            "--max_steps",
            str(steps),
            "--output_dir",
            output_dir,
            "--report_to",
            "none",
            "--save_strategy",
            "no",
            "--logging_steps",
            "1",
            "--disable_tqdm",
            "true",
        ]
    )
    torch.manual_seed(args.seed)
    model, tokenizer = load_model_and_tokenizer(None)
    trainer = ProcessGRPOTrainer(
        model=model, args=args, train_dataset=load_task_split(task, "train"), processing_class=tokenizer
    )
    trainer.train()
    logs = [log for log in trainer.state.log_history if "step_time" in log][1:]
    return {
        "step_time": statistics.median(log["step_time"] for log in logs),
        "scorer": statistics.median(
            log.get("ps/scorer_seconds", 0.0) + log.get("vps/probe_seconds", 0.0) for log in logs
        ),
        "tokens": statistics.median(log["completions/mean_length"] for log in logs),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_isolated(method: str, steps: int, output_dir: str) -> dict[str, float]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(run, (method, steps, output_dir))


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
                results[method].append(run_isolated(method, cli.steps, f"{tmp}/{method}"))
    base = statistics.median(r["step_time"] for r in results["grpo"])
    print(f"\n{cli.rounds} rounds × {cli.steps} steps, median step time (s):\n")
    print(
        "| method | step time (s) | ratio to grpo | scorer/probes (s/step) | peak RSS (MiB) | completion tokens |"
    )
    print("|---|---|---|---|---|---|")
    for method, runs in results.items():
        step, scorer, rss, tokens = (
            statistics.median(r[key] for r in runs)
            for key in ("step_time", "scorer", "peak_rss_mib", "tokens")
        )
        print(f"| {method} | {step:.3f} | {step / base:.3f}× | {scorer:.3f} | {rss:.0f} | {tokens:.1f} |")


if __name__ == "__main__":
    main()
