"""Resident memory and time per step of a CPU training run, under allocator and oneDNN settings.

Why: two `psgrpo compare` lanes on arith-hard in bf16 grew to 9.2 and 9.6 GB resident after four
240-step runs each on a 24 GB machine. On a CPU, PyTorch's bf16 matmuls go through oneDNN, which keeps
one compiled kernel per input shape in two caches of 1,024 entries each (oneDNN's and ideep's), and
training shapes change every step. This runs ``psgrpo train`` on a recipe once per variant, each in a
fresh process, and reads the process's resident memory (RSS): the highest sampled during each step, the
peak (``VmHWM``), and the trainer's own ``step_time``::

    python benchmarks/bench_cpu_memory.py                    # arith-hard, 60 steps, every variant
    python benchmarks/bench_cpu_memory.py --steps 240 --variants bf16-torch bf16 --output /tmp/mem.json
    python benchmarks/bench_cpu_memory.py --steps 20 --runs 5 --variants bf16   # 5 runs in one process

With ``--runs N`` a variant is one ``psgrpo compare`` process that trains the same run N times one after
another (arms ``run1`` … ``runN``, one seed, held-out evaluation of 50 problems at the start and the end
of each), as a sweep does: the table gives the highest RSS during each run, so growth from one run to the
next shows.

A variant is a precision and environment variables set before torch loads. ``psgrpo`` sets both kernel
caches to 128 entries where they are unset (psgrpo/config/kernel_caches.py):

- ``bf16`` / ``fp32``: the recipe with ``--bf16 true`` / ``false`` and psgrpo's caches (128 each);
- ``bf16-torch`` / ``fp32-torch``: PyTorch's own sizes, ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and
  ``LRU_CACHE_CAPACITY`` 1024 (what runs had before psgrpo set them);
- ``bf16-onednn128``, ``bf16-lru128``: one cache at 128, the other at 1024;
- ``bf16-512``: both at 512; ``bf16-onednn0``: oneDNN's cache off, ideep's at 1024;
- ``bf16-arenas2``: PyTorch's sizes and glibc's ``MALLOC_ARENA_MAX=2``;
- ``bf16-mmap128k``: psgrpo's caches and glibc's ``MALLOC_MMAP_THRESHOLD_=131072``: every block of
  128 KiB or more gets its own mapping, returned to the system when freed, instead of glibc raising that
  threshold (up to 32 MiB) as blocks are freed and serving them from its heap.

Prints a markdown table and writes one JSON object (``--output``). Run it on an otherwise idle machine: the
times are comparable only within one run, so report them as ratios to the first variant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _args import POSITIVE_INT  # noqa: E402

TORCH_DEFAULTS = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024", "LRU_CACHE_CAPACITY": "1024"}
"""PyTorch's own cache sizes (what a run had before `psgrpo` set 128 for each)."""

VARIANTS: dict[str, tuple[bool, dict[str, str]]] = {
    "bf16-torch": (True, TORCH_DEFAULTS),
    "bf16": (True, {}),
    "fp32-torch": (False, TORCH_DEFAULTS),
    "fp32": (False, {}),
    "bf16-onednn128": (True, {**TORCH_DEFAULTS, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "128"}),
    "bf16-lru128": (True, {**TORCH_DEFAULTS, "LRU_CACHE_CAPACITY": "128"}),
    "bf16-512": (True, {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "512", "LRU_CACHE_CAPACITY": "512"}),
    "bf16-onednn0": (True, {**TORCH_DEFAULTS, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"}),
    "bf16-arenas2": (True, {**TORCH_DEFAULTS, "MALLOC_ARENA_MAX": "2"}),
    "bf16-mmap128k": (True, {"MALLOC_MMAP_THRESHOLD_": "131072"}),
}
"""Variant name -> (bf16 on, environment variables set for the run)."""

ENV_KNOBS = (
    "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
    "LRU_CACHE_CAPACITY",
    "MALLOC_ARENA_MAX",
    "MALLOC_MMAP_THRESHOLD_",
)
"""Variables a variant may set: removed from every run's environment first, so only the variant sets them."""


def _status_mib(pid: int, field: str) -> float | None:
    """``field`` (``VmRSS``, ``VmHWM``) of process ``pid`` from /proc, in MiB; None once it has exited."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


def _knobs_of(pid: int) -> dict[str, str] | None:
    """The :data:`ENV_KNOBS` process ``pid`` started with (``/proc/PID/environ``); None where unreadable."""
    try:
        pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    variables = dict(pair.decode(errors="replace").partition("=")[::2] for pair in pairs if b"=" in pair)
    return {k: variables[k] for k in ENV_KNOBS if k in variables}


def _logged_steps(path: Path, seen: int) -> tuple[list[dict[str, Any]], int]:
    """The complete JSON lines of ``path`` past the first ``seen`` ones, and the new count."""
    if not path.exists():
        return [], seen
    lines = path.read_text().split("\n")[:-1]  # the last piece may be a line still being written
    return [json.loads(line) for line in lines[seen:] if line.strip()], len(lines)


def _command(
    bf16: bool, config: str, steps: int, runs: int, out: Path, extra: Sequence[str]
) -> tuple[list[str], list[Path]]:
    """The process to start, and the ``metrics.jsonl`` of each run it trains, in training order.

    One run: ``psgrpo train``. Several: one ``psgrpo compare`` with arms ``run1`` … ``runN`` that set
    nothing, so the same run (one seed) trains N times in one process.
    """
    common = [
        "--config", config, "--bf16", "true" if bf16 else "false", "--max_steps", str(steps),
        "--logging_steps", "1", "--save_strategy", "no", "--report_to", "none",
    ]  # fmt: skip
    if runs == 1:
        command = [sys.executable, "-m", "psgrpo", "train", *common, "--eval_before_after", "false",
                   "--output_dir", str(out / "run"), *extra]  # fmt: skip
        return command, [out / "run" / "metrics.jsonl"]
    labels = [f"run{i}" for i in range(1, runs + 1)]
    command = [
        sys.executable, "-m", "psgrpo", "compare", *common, "--seeds", "0", "--eval_every", str(steps),
        "--max_eval_examples", "50", "--eval_batch_size", "50", "--output_dir", str(out / "compare"),
        *extra, "--arms", *(f"{label}=" for label in labels),
    ]  # fmt: skip
    return command, [out / "compare" / "runs" / f"{label}-seed0" / "metrics.jsonl" for label in labels]


def _active_run(metrics: Sequence[Path]) -> int:
    """Index of the run training now: the last whose folder exists (0 before the first appears)."""
    started = [i for i, path in enumerate(metrics) if path.parent.is_dir()]
    return started[-1] if started else 0


def run_variant(
    name: str,
    config: str,
    steps: int,
    threads: int,
    poll_seconds: float,
    extra: Sequence[str],
    runs: int = 1,
) -> dict[str, Any]:
    """``runs`` runs of ``config`` under variant ``name`` in one fresh process, watched from here.

    Returns, per run, the highest RSS (MiB) sampled during each step (every ``poll_seconds``; steps
    logged within one poll share its sample) and during the whole run; the process's peak RSS (MiB); the
    median ``step_time`` (s) over logged steps past each run's first; and the wall time (s).
    """
    bf16, variables = VARIANTS[name]
    env = {k: v for k, v in os.environ.items() if k not in ENV_KNOBS}
    env.update(variables)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory(prefix=f"bench_cpu_memory_{name}_") as out:
        command, metrics = _command(bf16, config, steps, runs, Path(out), extra)
        log_path = Path(out) / "stderr.txt"
        seen, rss_at_step, run_highest = [0] * runs, [{} for _ in range(runs)], [0.0] * runs
        peak, window, seen_env = 0.0, 0.0, None
        start = time.perf_counter()
        with log_path.open("w") as stderr:  # a file, not a pipe: a full pipe would stall the run
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
            while process.poll() is None:
                time.sleep(poll_seconds)
                knobs = _knobs_of(process.pid)  # read while it trains (read at once, it raced the exec)
                seen_env = seen_env if knobs is None else knobs
                rss = _status_mib(process.pid, "VmRSS") or 0.0
                run = _active_run(metrics)
                window, run_highest[run] = max(window, rss), max(run_highest[run], rss)
                peak = max(peak, _status_mib(process.pid, "VmHWM") or 0.0)
                logs, seen[run] = _logged_steps(metrics[run], seen[run])
                steps_logged = [int(log["step"]) for log in logs if "step_time" in log]
                for step in steps_logged:  # the highest RSS sampled since the step before was logged
                    rss_at_step[run][step] = round(window)
                window = 0.0 if steps_logged else window
        if process.returncode != 0:
            what = "psgrpo train" if runs == 1 else "psgrpo compare"
            raise SystemExit(
                f"variant {name}: {what} exited {process.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        step_times = []
        for run, path in enumerate(metrics):
            logs, _ = _logged_steps(path, 0)
            for log in logs:  # steps logged after the run's last poll: that poll's sample
                if "step_time" in log and int(log["step"]) not in rss_at_step[run]:
                    rss_at_step[run][int(log["step"])] = round(window)
            step_times += [log["step_time"] for log in logs if "step_time" in log][1:]
    return {
        "bf16": bf16,
        "env": variables,
        "env_seen_by_run": seen_env,
        "rss_mib_at_step": rss_at_step[0],
        "rss_mib_per_run": [round(rss) for rss in run_highest],
        "rss_mib_at_step_per_run": rss_at_step,
        "peak_rss_mib": round(peak),
        "median_step_seconds": round(statistics.median(step_times), 3) if step_times else None,
        "wall_seconds": round(time.perf_counter() - start, 1),
    }


def table(report: dict[str, Any], marks: Sequence[int]) -> str:
    """Markdown: per variant, RSS at the marked steps (one run) or the highest RSS in each run (several),
    peak RSS and time per step as a ratio to the first variant."""
    results = report["variants"]
    runs = report.get("runs", 1)
    first = next(iter(results.values()))["median_step_seconds"]
    columns = (
        [f"RSS in step {s} (MiB)" for s in marks]
        if runs == 1
        else [f"highest RSS in run {i} (MiB)" for i in range(1, runs + 1)]
    )
    headers = ["variant", *columns, "peak RSS (MiB)", "s/step", "s/step ÷ first"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, result in results.items():
        at = result["rss_mib_at_step"]
        seconds = result["median_step_seconds"]
        ratio = f"{seconds / first:.2f}" if seconds and first else "–"
        cells = (
            [str(at.get(s, at.get(str(s), "–"))) for s in marks]
            if runs == 1
            else [str(rss) for rss in result["rss_mib_per_run"]]
        )
        lines.append(
            "| " + " | ".join([name, *cells, str(result["peak_rss_mib"]), str(seconds), ratio]) + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the chosen variants one after another; print the table, write ``--output``; returns the report."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--config", default="configs/arith_hard.yaml",
        help="recipe to train (default configs/arith_hard.yaml, where the growth was seen)",
    )  # fmt: skip
    parser.add_argument(
        "--steps", type=POSITIVE_INT, default=60, help="training steps per variant (default 60)"
    )
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
        help="variants to run, in this order; the first is the time ratios' base (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--threads", type=POSITIVE_INT, default=1,
        help="OMP_NUM_THREADS of each run (default 1, as each of two compare lanes on 2 cores)",
    )  # fmt: skip
    parser.add_argument(
        "--runs", type=POSITIVE_INT, default=1,
        help="runs per variant, one after another in one process (psgrpo compare, as a sweep trains); "
        "default 1 (psgrpo train)",
    )  # fmt: skip
    parser.add_argument("--output", type=Path, help="write the JSON report here too")
    parser.add_argument(
        "train_args", nargs="*", help="after --: more `psgrpo train` flags, e.g. -- --method ps"
    )
    args = parser.parse_args(argv)
    if not Path(args.config).is_file():
        parser.error(f"--config: no file {args.config} (run from the repository root, or pass a recipe path)")
    if args.output is not None and not args.output.parent.is_dir():
        parser.error(f"--output: folder {args.output.parent} does not exist")
    marks = sorted({m for m in (1, 10, 30, 60, 120, 240) if m <= args.steps} | {args.steps})
    report: dict[str, Any] = {
        "config": args.config,
        "steps": args.steps,
        "threads": args.threads,
        "runs": args.runs,
        "variants": {},
    }
    report["train_args"] = args.train_args
    for name in args.variants:
        print(f"{name}: {args.runs} x {args.steps} steps ...", file=sys.stderr, flush=True)
        report["variants"][name] = run_variant(
            name, args.config, args.steps, args.threads, 0.25, args.train_args, args.runs
        )
    print(table(report, marks))
    if args.output is not None:
        args.output.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
