"""Resident memory and time per step of a CPU training run, under allocator and oneDNN settings.

Why: two `psgrpo compare` lanes on arith-hard in bf16 grew to 9.2 and 9.6 GB resident after four
240-step runs each on a 24 GB machine. On a CPU, PyTorch's bf16 matmuls go through oneDNN, which keeps
one compiled kernel per input shape in two caches of 1,024 entries each (oneDNN's and ideep's), and
training shapes change every step. This runs ``psgrpo train`` on a recipe once per variant, each in a
fresh process, and reads the process's resident memory (RSS): the highest sampled during each step, the
peak (``VmHWM``), and the trainer's own ``step_time``::

    python benchmarks/bench_cpu_memory.py                    # arith-hard, 60 steps, every variant
    python benchmarks/bench_cpu_memory.py --steps 240 --variants bf16-torch bf16 --output /tmp/mem.json

A variant is a precision and environment variables set before torch loads. ``psgrpo`` sets both kernel
caches to 128 entries where they are unset (psgrpo/config/kernel_caches.py):

- ``bf16`` / ``fp32``: the recipe with ``--bf16 true`` / ``false`` and psgrpo's caches (128 each);
- ``bf16-torch`` / ``fp32-torch``: PyTorch's own sizes, ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and
  ``LRU_CACHE_CAPACITY`` 1024 (what runs had before psgrpo set them);
- ``bf16-onednn128``, ``bf16-lru128``: one cache at 128, the other at 1024;
- ``bf16-512``: both at 512; ``bf16-onednn0``: oneDNN's cache off, ideep's at 1024;
- ``bf16-arenas2``: PyTorch's sizes and glibc's ``MALLOC_ARENA_MAX=2``.

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
}
"""Variant name -> (bf16 on, environment variables set for the run)."""

ENV_KNOBS = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY", "MALLOC_ARENA_MAX")
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


def run_variant(
    name: str, config: str, steps: int, threads: int, poll_seconds: float, extra: Sequence[str]
) -> dict[str, Any]:
    """One ``psgrpo train`` run of ``config`` under variant ``name`` in a fresh process, watched from here.

    Returns the highest RSS (MiB) sampled during each step (every ``poll_seconds``; steps logged within
    one poll share its sample), the peak RSS (MiB), the median ``step_time`` (s) over logged steps past
    the first, and the run's wall time (s).
    """
    bf16, variables = VARIANTS[name]
    env = {k: v for k, v in os.environ.items() if k not in ENV_KNOBS}
    env.update(variables)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory(prefix=f"bench_cpu_memory_{name}_") as out:
        command = [
            sys.executable, "-m", "psgrpo", "train", "--config", config,
            "--bf16", "true" if bf16 else "false", "--max_steps", str(steps), "--logging_steps", "1",
            "--save_strategy", "no", "--report_to", "none", "--eval_before_after", "false",
            "--output_dir", str(Path(out) / "run"), *extra,
        ]  # fmt: skip
        metrics, log_path = Path(out) / "run" / "metrics.jsonl", Path(out) / "stderr.txt"
        seen, rss_at_step, peak, window, seen_env = 0, {}, 0.0, 0.0, None
        start = time.perf_counter()
        with log_path.open("w") as stderr:  # a file, not a pipe: a full pipe would stall the run
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
            while process.poll() is None:
                time.sleep(poll_seconds)
                knobs = _knobs_of(process.pid)  # read while it trains (read at once, it raced the exec)
                seen_env = seen_env if knobs is None else knobs
                window = max(window, _status_mib(process.pid, "VmRSS") or 0.0)
                peak = max(peak, _status_mib(process.pid, "VmHWM") or 0.0)
                logs, seen = _logged_steps(metrics, seen)
                steps_logged = [int(log["step"]) for log in logs if "step_time" in log]
                for step in steps_logged:  # the highest RSS sampled since the step before was logged
                    rss_at_step[step] = round(window)
                window = 0.0 if steps_logged else window
        if process.returncode != 0:
            raise SystemExit(
                f"variant {name}: psgrpo train exited {process.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        logs, _ = _logged_steps(metrics, 0)
        for log in logs:  # steps logged after the last poll: that poll's sample
            if "step_time" in log and int(log["step"]) not in rss_at_step:
                rss_at_step[int(log["step"])] = round(window)
    step_times = [log["step_time"] for log in logs if "step_time" in log][1:]
    return {
        "bf16": bf16,
        "env": variables,
        "env_seen_by_run": seen_env,
        "rss_mib_at_step": rss_at_step,
        "peak_rss_mib": round(peak),
        "median_step_seconds": round(statistics.median(step_times), 3) if step_times else None,
        "wall_seconds": round(time.perf_counter() - start, 1),
    }


def table(report: dict[str, Any], marks: Sequence[int]) -> str:
    """Markdown: per variant, RSS at the marked steps, peak RSS and time per step as a ratio to the first."""
    results = report["variants"]
    first = next(iter(results.values()))["median_step_seconds"]
    headers = [
        "variant",
        *(f"RSS in step {s} (MiB)" for s in marks),
        "peak RSS (MiB)",
        "s/step",
        "s/step ÷ first",
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, result in results.items():
        at = result["rss_mib_at_step"]
        seconds = result["median_step_seconds"]
        ratio = f"{seconds / first:.2f}" if seconds and first else "–"
        cells = [name, *(str(at.get(s, at.get(str(s), "–"))) for s in marks), str(result["peak_rss_mib"])]
        lines.append("| " + " | ".join([*cells, str(seconds), ratio]) + " |")
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
        "variants": {},
    }
    report["train_args"] = args.train_args
    for name in args.variants:
        print(f"{name}: {args.steps} steps ...", file=sys.stderr, flush=True)
        report["variants"][name] = run_variant(
            name, args.config, args.steps, args.threads, 0.25, args.train_args
        )
    print(table(report, marks))
    if args.output is not None:
        args.output.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
