"""Training-step time, throughput and peak RSS of psgrpo against stock ``trl.GRPOTrainer``, in one process.

    python benchmarks/bench_step.py [--sizes tiny 24m qwen-vocab] [--lengths 64 256] [--steps 5] [--warmup 1]
        [--trainers trl grpo ps vps] [--prompts 4] [--generations 4] [--isolated] [--compiled_generation]
        [--output FILE.json]

For every (model size, completion length) it builds stock ``trl.GRPOTrainer`` (``trl``) and
``ProcessGRPOTrainer`` with ``--method grpo / ps / vps`` on the same model weights, data, seed,
batch and settings (the demo recipe, ``psgrpo/recipes/demo.yaml``, with the batch and length
overridden), and trains them in lockstep: each trainer runs ``train()`` in its own thread and
the threads take turns, one optimizer step each (round-robin, the first trainer rotating every
round; only one thread runs at a time), so machine noise hits all of them alike. Each trainer
keeps its own RNG state (Python, NumPy, torch), restored when its turn begins, so it draws the
random numbers it would draw alone: at step 1 all trainers sample the same completions, which
the script checks and reports against TRL's (psgrpo ``grpo`` must match TRL on every step).

Every completion is exactly ``length`` tokens (``max_completion_length = length`` and
``generation_kwargs = {"min_new_tokens": length}``, so EOS cannot be sampled earlier):
trainers that learn different things would otherwise generate different lengths, and step
times would not compare the same work. As a consequence every completion is truncated, which
VPS answers with the outcome advantage (``vps_truncated=outcome``) after computing its probes
as usual, so the timed work is the normal one.

Models: ``tiny`` is the embedded warm-started checkpoint (0.82 M parameters, character-level
tokenizer); ``24m`` is a randomly initialised Qwen2 (8 layers × 512, 24.3 M parameters) with
the same tokenizer; ``qwen-vocab`` is a randomly initialised Qwen2 of 4 layers × 512 with
Qwen2.5's real tokenizer and its 151,936 embedding rows (89.9 M parameters, 77.8 M of them the
tied embedding / lm_head), so the lm_head and the log-softmax and entropy over the vocabulary —
what VPS's extra forward adds — weigh as they do in Qwen2.5. It needs Qwen's ranks file
(``python -m psgrpo.tiny.qwen_tokenizer``; see :mod:`psgrpo.tiny.qwen_tokenizer`). A random model
writes random tokens, so the PS arithmetic verifier finds few or no ``a op b = c`` steps to check
and VPS's confidences are near zero: the cost is what is measured here, not learning.
``qwen2.5-0.5b`` is the GSM8K recipe's model (gpu_check's random Qwen2 with Qwen2.5-0.5B's shapes and
vocabulary, 494 M parameters), for a GPU: ``--sizes qwen2.5-0.5b --lengths 512 --prompts 8
--compiled_generation`` is the recipe's shape with psgrpo's compiled static-cache decoding given to
every trainer, stock TRL included (:func:`psgrpo.generation.enable_compiled_generation`), and its weights
are bf16 when the run is (:data:`RECIPE_BF16_SIZES`). On CUDA each turn synchronizes the device before each
clock reading, and GPU memory is reported beside RSS [``peak_cuda_allocated_gib``, ``step_cuda_increase_gib``];
under torch < 2.13 decoding compiles without CUDA graphs (:func:`lockstep_compile_config`).

Measured for each trainer over the steps after ``--warmup`` (JSON field names in brackets):

* median s/step [``median_step_s``]: wall time of one whole optimizer step of the Trainer loop
  (generation, rewards, process signal, loss, backward, optimizer, logging); TRL's own
  ``step_time`` (``training_step`` only, no optimizer) is in ``trl_step_time_s``;
* tokens/s [``tokens_per_s``]: completion tokens generated in the step / its wall time, median;
* peak RSS MiB [``peak_rss_mib``]: the process's peak resident memory during that trainer's turns
  (the kernel's peak mark is reset when a turn starts, ``/proc/self/clear_refs``). In lockstep
  mode the process also holds the other trainers' models and optimizer states, so the
  comparable figure is the step RSS increase [``step_rss_increase_mib``]: peak minus the RSS at
  the start of the turn, the step's transient working memory. With ``--isolated`` each trainer
  runs alone in a fresh process (no interleaving) and the peak is its own;
* ratio vs TRL [``ratio_vs_trl``]: median s/step / TRL's median s/step; the issue's aims are
  grpo ≤ 1.02×, ps ≤ 1.10×, vps ≤ 1.15×.

Run it on an otherwise idle machine; it prints a markdown table and writes JSON to ``--output``.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import (
    TRAINERS,
    current_rss_mib,
    logged_medians,
    markdown_table,
    peak_rss_mib,
    recipe_configs,
    reset_peak_rss,
    run_isolated,
)
from gpu_check import QWEN2_5_0_5B_SHAPES
from transformers import PrinterCallback, TrainerCallback, set_seed
from trl import GRPOTrainer

from psgrpo.data.tasks import load_task_split
from psgrpo.generation import enable_compiled_generation
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.rewards.functions import get_reward_funcs
from psgrpo.timing import device_seconds
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.qwen_tokenizer import QWEN2_5_VOCAB_SIZE, build_qwen_tokenizer
from psgrpo.trainer import ProcessGRPOTrainer

WIDTH_512 = dict(
    hidden_size=512, num_heads=8, num_kv_heads=2, intermediate_size=1536, max_position_embeddings=1024
)

SIZES: dict[str, dict[str, int] | None] = {
    "tiny": None,  # the embedded warm-started checkpoint
    "24m": dict(WIDTH_512, num_layers=8),
    "qwen-vocab": dict(WIDTH_512, num_layers=4, vocab_size=QWEN2_5_VOCAB_SIZE),
    # the GSM8K recipe's model (gpu_check's shapes; a GPU): 494 M parameters
    "qwen2.5-0.5b": dict(QWEN2_5_0_5B_SHAPES, vocab_size=QWEN2_5_VOCAB_SIZE),
}
"""Model sizes: ``None`` is the embedded checkpoint, a dict is a random-init Qwen2 config."""

QWEN_TOKENIZER_SIZES = frozenset({"qwen-vocab", "qwen2.5-0.5b"})
"""Sizes built with Qwen2.5's real tokenizer; the others use the embedded character-level one."""

RECIPE_BF16_SIZES = frozenset({"qwen2.5-0.5b"})
"""Sizes whose weights are bf16 whenever the run computes in bf16, as the GSM8K recipe loads its model
(``dtype: bfloat16``) and gpu_check does; with fp32 weights under bf16 autocast, a compiled static cache
needs transformers >= 5.25 (:func:`psgrpo.generation.check_cache_dtype`). The other sizes keep fp32 weights."""

CUDA_GRAPH_THREADS_TORCH = "2.13"
"""The first torch whose CUDA graph trees work in a thread Python created (pytorch/pytorch#123177, fixed by
#184357). Lockstep runs each trainer's ``train()`` in its own thread, so below it, on CUDA, compiled decoding
runs without CUDA graphs (:func:`lockstep_compile_config`)."""

AIMS = {"grpo": 1.02, "ps": 1.10, "vps": 1.15}
"""The issue's upper bounds on step time relative to stock TRL."""

RSS_MEASURE = {
    "lockstep": "peak RSS = process peak during the trainer's turns (includes the other trainers' resident "
    "state); step RSS increase = that peak minus RSS at the start of the turn",
    "isolated": "peak RSS = peak of a fresh process running only this trainer, during its measured steps; "
    "step RSS increase = that peak minus RSS at the start of the step",
}


def load_model(size: str):
    """``(model, tokenizer)`` for a size in :data:`SIZES` (random init is seeded: every call is identical).

    Raises:
        QwenVocabUnavailable: for a size in :data:`QWEN_TOKENIZER_SIZES` when Qwen's ranks file
            is neither cached nor downloadable.
    """
    if size in QWEN_TOKENIZER_SIZES:
        tokenizer = build_qwen_tokenizer()
        return build_tiny_model(tokenizer, seed=0, **SIZES[size]), tokenizer
    model, tokenizer = load_model_and_tokenizer(None)
    if SIZES[size] is not None:
        model = build_tiny_model(tokenizer, seed=0, **SIZES[size])
    return model, tokenizer


def get_rng_state() -> dict[str, Any]:
    """Every global RNG a training step draws from (Python, NumPy, torch CPU and CUDA)."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None:
        torch.cuda.set_rng_state_all(state["cuda"])


@dataclass
class Turn:
    """One turn of a trainer: wall seconds, the process RSS (MiB) at its start and its peak, and on a CUDA device
    the memory allocated there (GiB) at its start and its peak (``None`` elsewhere)."""

    seconds: float
    start_rss_mib: float
    peak_rss_mib: float
    start_cuda_gib: float | None = None
    peak_cuda_gib: float | None = None


class Lockstep(TrainerCallback):
    """Runs ``trainer.train()`` in a thread that pauses after setup and after every optimizer step.

    :meth:`advance`, called from the driving thread, lets the trainer run to its next pause and
    returns that :class:`Turn`; meanwhile the driving thread waits, so exactly one thread runs.
    The trainer's RNG state is saved at every pause and restored at every resume.
    """

    def __init__(self, trainer: GRPOTrainer, rng_state: dict[str, Any]) -> None:
        self.trainer, self._rng = trainer, rng_state
        device = getattr(trainer.accelerator, "device", None)
        self._cuda = device if getattr(device, "type", None) == "cuda" and torch.cuda.is_available() else None
        self._resume, self._paused = threading.Semaphore(0), threading.Semaphore(0)
        self.error: BaseException | None = None
        self.finished = False
        self._turn: Turn | None = None
        trainer.add_callback(self)
        threading.Thread(target=self._train, daemon=True).start()

    def advance(self) -> Turn:
        if self.finished:
            raise RuntimeError("this trainer has already finished training")
        self._resume.release()
        self._paused.acquire()
        if self.error is not None:
            raise RuntimeError(f"{type(self.trainer).__name__} failed during its turn") from self.error
        assert self._turn is not None
        return self._turn

    def on_train_begin(self, args, state, control, **kwargs) -> None:
        self._pause()

    def on_step_end(self, args, state, control, **kwargs) -> None:
        self._pause()

    def _train(self) -> None:
        self._resume.acquire()
        self._begin()
        try:
            self.trainer.train()
        except BaseException as error:  # handed to the driving thread by advance()
            self.error = error
        self._end()
        self.finished = True
        self._paused.release()

    def _pause(self) -> None:
        self._end()
        self._paused.release()
        self._resume.acquire()
        self._begin()

    def _begin(self) -> None:
        set_rng_state(self._rng)
        reset_peak_rss()
        self._start_rss = current_rss_mib()
        self._start_cuda = None
        if self._cuda is not None:  # the previous turn's kernels finish before this one's clock starts
            device_seconds(self._cuda)
            torch.cuda.reset_peak_memory_stats(self._cuda)
            self._start_cuda = torch.cuda.memory_allocated(self._cuda) / 2**30
        self._start = time.perf_counter()

    def _end(self) -> None:
        seconds = device_seconds(self._cuda) - self._start  # this turn's kernels are its own
        peak_cuda = None if self._cuda is None else torch.cuda.max_memory_allocated(self._cuda) / 2**30
        self._turn = Turn(seconds, self._start_rss, peak_rss_mib(), self._start_cuda, peak_cuda)
        self._rng = get_rng_state()


class RolloutLog:
    """Wraps ``trainer._generate_and_score_completions``: keeps step 1's completion ids and every step's token count."""

    def __init__(self, trainer: GRPOTrainer) -> None:
        self.first_ids: list[list[int]] | None = None
        self.tokens: list[int] = []
        original = trainer._generate_and_score_completions

        def wrapped(inputs):
            output = original(inputs)
            if self.first_ids is None:
                self.first_ids = output["completion_ids"].tolist()
            self.tokens.append(int(output["completion_mask"].sum()))
            return output

        trainer._generate_and_score_completions = wrapped


def lockstep_compile_config() -> Any:
    """The ``CompileConfig`` compiled decoding gets in lockstep: ``None`` (transformers' default, CUDA graphs) except
    on CUDA under torch < :data:`CUDA_GRAPH_THREADS_TORCH`, where CUDA graph trees assert in the trainers' threads,
    so the forward is compiled without them (the same for every trainer, stock TRL included)."""
    from packaging.version import Version
    from transformers import CompileConfig

    if (
        not torch.cuda.is_available()
        or Version(torch.__version__).release >= Version(CUDA_GRAPH_THREADS_TORCH).release
    ):
        return None
    return CompileConfig(mode="default")  # inductor, no CUDA graphs (reduce-overhead's are what asserts)


def build_trainer(
    kind: str, size: str, output_dir: str, reward_funcs: list, prompts: int, **overrides: Any
) -> GRPOTrainer:
    """Stock TRL (``kind="trl"``) or psgrpo with method ``kind``, on a fresh copy of ``size``'s weights.

    The training set is the first ``prompts × max_steps`` rows of the recipe's task, one batch per step.
    """
    task, args = recipe_configs(kind, output_dir, **overrides)
    model, tokenizer = load_model(size)
    if size in RECIPE_BF16_SIZES and args.bf16:
        model = model.to(torch.bfloat16)
    trainer = (GRPOTrainer if kind == "trl" else ProcessGRPOTrainer)(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=load_task_split(task, task.train_split, limit=args.max_steps * prompts),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # per-step log dicts on stdout: noise, for every trainer
    if overrides.get("compiled_generation"):
        compile_config = lockstep_compile_config()
        if kind == "trl":  # psgrpo's trainers enable it from their config
            enable_compiled_generation(trainer, compile_config)
        elif compile_config is not None:
            trainer.generation_config.compile_config = compile_config
    return trainer


def run_in_lockstep(
    trainers: dict[str, GRPOTrainer], seed: int, warmup: int, steps: int
) -> dict[str, list[Turn]]:
    """Train all trainers in turns, one optimizer step each, round-robin; the turns after ``warmup`` rounds."""
    set_seed(seed)
    start_state = get_rng_state()
    lockstep = {kind: Lockstep(trainer, start_state) for kind, trainer in trainers.items()}
    for run in lockstep.values():
        run.advance()  # setup, up to the first step
    order = list(trainers)
    turns: dict[str, list[Turn]] = {kind: [] for kind in order}
    for step in range(warmup + steps):
        first = step % len(order)  # rotate who goes first
        for kind in order[first:] + order[:first]:
            gc.collect()  # the previous trainer's garbage is not this one's cost
            turn = lockstep[kind].advance()
            if step >= warmup:
                turns[kind].append(turn)
    for run in lockstep.values():
        run.advance()  # the last step's logging and the end of train()
        assert run.finished
    return turns


def _max_or_none(values: Any) -> float | None:
    values = [v for v in values if v is not None]
    return max(values) if values else None


def measure(
    size: str,
    length: int,
    trainers: list[str],
    steps: int,
    warmup: int,
    prompts: int,
    generations: int,
    compiled_generation: bool = False,
) -> dict[str, dict[str, Any]]:
    """Train ``trainers`` in lockstep for ``warmup + steps`` steps; per trainer, its measurements (see module doc).

    Each result also carries ``first_completion_ids`` (B lists of token ids) for the equivalence check.
    """
    overrides = dict(
        max_steps=warmup + steps,
        per_device_train_batch_size=prompts * generations,
        num_generations=generations,
        max_completion_length=length,
        generation_kwargs={"min_new_tokens": length},  # every completion exactly `length` tokens
        compiled_generation=compiled_generation,  # stock TRL too (build_trainer)
    )
    with tempfile.TemporaryDirectory() as tmp:
        _, reference = recipe_configs("grpo", tmp, **overrides)
        reward_funcs = get_reward_funcs(  # the same functions for every trainer, stock TRL included
            reference.reward_funcs,
            exact=reference.correctness_exact,
            close=reference.correctness_close,
            rel_tol=reference.correctness_rel_tol,
        )
        runs = {
            kind: build_trainer(kind, size, f"{tmp}/{kind}", reward_funcs, prompts, **overrides)
            for kind in trainers
        }
        rollouts = {kind: RolloutLog(trainer) for kind, trainer in runs.items()}
        turns = run_in_lockstep(runs, reference.seed, warmup, steps)
    results = {}
    for kind, trainer in runs.items():
        seconds = [t.seconds for t in turns[kind]]
        tokens = rollouts[kind].tokens[warmup:]
        logged = logged_medians(trainer.state.log_history, skip=warmup)
        results[kind] = {
            "params": sum(p.numel() for p in trainer.model.parameters()),
            "median_step_s": statistics.median(seconds),
            "tokens_per_s": statistics.median(n / s for n, s in zip(tokens, seconds, strict=True)),
            "completion_tokens_per_step": statistics.median(tokens),
            "peak_rss_mib": max(t.peak_rss_mib for t in turns[kind]),
            # ≥ 0: the kernel's peak mark misses pages that glibc returned with madvise between the
            # reset and the start reading, so a turn that grew nothing can read a fraction of a MiB below 0
            "step_rss_increase_mib": max(0.0, *(t.peak_rss_mib - t.start_rss_mib for t in turns[kind])),
            # on a CUDA device (else None): the peak allocated there during the turns (the other trainers' models
            # and optimizer states included, as for RSS) and the largest increase within one turn
            "peak_cuda_allocated_gib": _max_or_none(t.peak_cuda_gib for t in turns[kind]),
            "step_cuda_increase_gib": _max_or_none(
                t.peak_cuda_gib - t.start_cuda_gib
                for t in turns[kind]
                if t.peak_cuda_gib is not None and t.start_cuda_gib is not None
            ),
            "trl_step_time_s": logged["step_time"],
            "scorer_s": logged["scorer"],
            "step_seconds": seconds,
            "first_completion_ids": rollouts[kind].first_ids,
        }
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", nargs="+", default=["tiny", "24m"], choices=list(SIZES), help="default: tiny 24m"
    )
    parser.add_argument(
        "--lengths", nargs="+", type=int, default=[64, 256], help="completion tokens (64 256)"
    )
    parser.add_argument("--steps", type=int, default=5, help="measured steps per trainer (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="steps per trainer discarded first (default 1)")
    parser.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step (default 4)")
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt (default 4)")
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="run each trainer alone in a fresh process (no interleaving) so peak RSS is its own",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument(
        "--compiled_generation",
        action="store_true",
        help="every trainer, stock TRL included, decodes with the compiled static cache (psgrpo/generation.py)",
    )
    parser.add_argument("--output", default="outputs/bench_step.json", help="JSON report path")
    cli = parser.parse_args(argv)
    if "trl" not in cli.trainers:
        parser.error("--trainers must include trl: every ratio is relative to it")
    if cli.steps < 1 or cli.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    return cli


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the sweep, print the table, write the JSON report and return it."""
    cli = parse_args(argv)
    if cli.threads is not None:
        torch.set_num_threads(cli.threads)
    settings = {key: value for key, value in vars(cli).items() if key != "output"}
    report: dict[str, Any] = {
        "settings": settings,
        "mode": "isolated" if cli.isolated else "lockstep",
        "rss_measure": RSS_MEASURE["isolated" if cli.isolated else "lockstep"],
        "peak_rss_resettable": reset_peak_rss(),
        "aims": AIMS,
        "results": [],
    }
    if cli.compiled_generation:
        config = lockstep_compile_config()
        report["compiled_decoding"] = (
            "transformers' default CompileConfig (reduce-overhead: CUDA graphs on CUDA)"
            if config is None
            else f"CompileConfig(mode={config.mode!r}): no CUDA graphs, since torch {torch.__version__} < "
            f"{CUDA_GRAPH_THREADS_TORCH} cannot run them in the trainers' threads (pytorch/pytorch#123177)"
        )
    output = Path(cli.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    for size in cli.sizes:
        for length in cli.lengths:
            shape = (
                size,
                length,
                cli.steps,
                cli.warmup,
                cli.prompts,
                cli.generations,
                cli.compiled_generation,
            )
            if cli.isolated:
                measured = {k: run_isolated(measure, size, length, [k], *shape[2:])[k] for k in cli.trainers}
            else:
                measured = measure(size, length, cli.trainers, *shape[2:])
            base = measured["trl"]
            for kind, result in measured.items():
                ratio = result["median_step_s"] / base["median_step_s"]
                same_rollout = result["first_completion_ids"] == base["first_completion_ids"]
                report["results"].append(
                    {
                        "model": size,
                        "completion_length": length,
                        "trainer": kind,
                        **{k: v for k, v in result.items() if k != "first_completion_ids"},
                        "ratio_vs_trl": ratio,
                        "first_step_matches_trl": same_rollout,
                        "aim": AIMS.get(kind),
                        "aim_met": None if kind not in AIMS else ratio <= AIMS[kind],
                    }
                )
            output.write_text(json.dumps(report, indent=2) + "\n")  # a sweep cut short keeps what finished
    print_report(report)
    print(f"\nJSON: {output}")
    return report


def print_report(report: dict[str, Any]) -> None:
    rows = [
        [
            r["model"],
            f"{r['params'] / 1e6:.2f} M",
            r["completion_length"],
            "TRL" if r["trainer"] == "trl" else f"psgrpo {r['trainer']}",
            f"{r['median_step_s']:.3f}",
            f"{r['tokens_per_s']:.0f}",
            f"{r['peak_rss_mib']:.0f}",
            f"{r['step_rss_increase_mib']:.0f}",
            f"{r['ratio_vs_trl']:.3f}×",
        ]
        for r in report["results"]
    ]
    headers = ["model", "params", "completion length", "trainer", "median s/step", "tokens/s", "peak RSS MiB"]
    s = report["settings"]
    print(
        f"\n{report['mode']}: {s['prompts']} prompts × {s['generations']} generations, "
        f"{s['warmup']} warm-up + {s['steps']} measured steps per trainer\n"
    )
    print(markdown_table([*headers, "step RSS Δ MiB", "ratio vs TRL"], rows))
    print(f"\nRSS: {report['rss_measure']}.")
    if "compiled_decoding" in report:
        print(f"Compiled decoding: {report['compiled_decoding']}.")
    for r in report["results"]:
        if r.get("peak_cuda_allocated_gib") is not None:
            print(
                f"GPU memory {r['model']}, length {r['completion_length']}, {r['trainer']}: peak allocated "
                f"{r['peak_cuda_allocated_gib']:.2f} GiB (every trainer's state), largest rise in one step "
                f"{r['step_cuda_increase_gib']:.2f} GiB"
            )
    if not report["peak_rss_resettable"]:
        print("WARNING: the peak-RSS mark cannot be reset here; peaks are since process start.")
    for r in report["results"]:
        where = f"{r['model']}, length {r['completion_length']}, {r['trainer']}"
        if not r["first_step_matches_trl"]:
            print(f"WARNING: {where}: step-1 completions differ from TRL's (same seed, same weights)")
        if r["aim_met"] is not None:
            verdict = "met" if r["aim_met"] else "NOT met"
            print(f"aim {where}: {r['ratio_vs_trl']:.3f}× ≤ {r['aim']}× {verdict}")


if __name__ == "__main__":
    main()
