"""Pieces shared by the training-step benchmarks (``bench_method_overhead.py``, ``bench_step.py``).

* :func:`recipe_configs`: the embedded demo recipe (``psgrpo/recipes/demo.yaml``) plus overrides,
  parsed exactly as ``psgrpo train`` parses it, as a stock ``trl.GRPOConfig`` or a
  ``ProcessGRPOConfig`` with identical shared fields, so stock TRL and psgrpo runs compare like
  for like;
* :func:`logged_medians`: medians of the per-step records TRL writes to ``state.log_history``;
* :func:`run_isolated`: call a function in a fresh (spawned) process, so its peak RSS is its own;
* RSS readers (MiB) and a markdown table printer.
"""

from __future__ import annotations

import multiprocessing
import re
import resource
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from trl import GRPOConfig, TrlParser

from psgrpo.config.options import METHODS
from psgrpo.config.precision import resolve_bf16, resolve_use_cpu
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig
from psgrpo.loading import DEFAULT_RECIPE

TRAINERS = ("trl", *METHODS)
"""``trl`` is stock ``trl.GRPOTrainer``; the others are ``ProcessGRPOTrainer`` with that method."""

BENCH_SETTINGS: dict[str, Any] = {
    "report_to": "none",
    "save_strategy": "no",
    "logging_steps": 1,
    "disable_tqdm": True,
}
"""Overrides every benchmark run gets: no checkpoints or trackers, TRL's metrics logged every step."""

PSGRPO_ONLY_FIELDS = {
    f for f in ProcessGRPOConfig.__dataclass_fields__ if f not in GRPOConfig.__dataclass_fields__
}

T = TypeVar("T")


def recipe_configs(
    trainer: str, output_dir: str | Path, recipe: Path = DEFAULT_RECIPE, **overrides: Any
) -> tuple[TaskConfig, GRPOConfig]:
    """The recipe with :data:`BENCH_SETTINGS` and ``overrides``, as ``(task, trainer config)``.

    ``trainer`` is ``"trl"`` (a plain ``trl.GRPOConfig``; psgrpo-only fields such as ``method``
    are dropped) or a psgrpo method (a ``ProcessGRPOConfig`` with ``method=trainer``). Values
    go through TRL's parser as YAML values do, so the config equals what ``psgrpo train
    --config recipe`` would build. Stock TRL gets psgrpo's precision rule (bf16 only where the
    hardware computes it natively, :mod:`psgrpo.config.precision`), so both run at the same precision.

    Raises:
        ValueError: for an unknown trainer or a field neither config nor ``TaskConfig`` has.
    """
    if trainer not in TRAINERS:
        raise ValueError(f"unknown trainer {trainer!r}; expected one of {', '.join(TRAINERS)}")
    values = {
        **yaml.safe_load(Path(recipe).read_text()),
        **BENCH_SETTINGS,
        **overrides,
        "output_dir": str(output_dir),
    }
    if trainer == "trl":
        config_cls: type[GRPOConfig] = GRPOConfig
        values = {k: v for k, v in values.items() if k not in PSGRPO_ONLY_FIELDS}
        # Stock TRL turns an unset bf16 into True even on a CPU without native bf16; give it
        # psgrpo's precision rule so that both trainers compute at the same precision.
        bf16 = resolve_bf16(values.get("bf16"), bool(values.get("fp16")), bool(values.get("use_cpu")))
        if bf16 is not None:
            values["bf16"] = bf16
        values["use_cpu"] = resolve_use_cpu(bool(values.get("use_cpu")), bf16)
    else:
        config_cls, values["method"] = ProcessGRPOConfig, trainer
    parser = TrlParser((TaskConfig, config_cls))
    unknown = parser.set_defaults_with_config(**values)
    if unknown:
        raise ValueError(f"{recipe} + overrides set fields no config has: {unknown[::2]}")
    task, args = parser.parse_args_into_dataclasses(args=[])
    return task, args


def logged_medians(log_history: Sequence[dict[str, Any]], skip: int = 1) -> dict[str, float]:
    """Medians over TRL's per-step log records, the first ``skip`` (warm-up) dropped.

    Returns ``step_time`` (TRL's timer around ``training_step``: generation, scoring, loss and
    backward, not the optimizer step; s), ``scorer`` (PS scorer + VPS probe seconds per step,
    0 for other methods) and ``tokens`` (mean completion length, tokens).
    """
    logs = [log for log in log_history if "step_time" in log][skip:]
    if not logs:
        raise ValueError(f"no per-step records left after skipping {skip}: run more steps")
    return {
        "step_time": statistics.median(log["step_time"] for log in logs),
        "scorer": statistics.median(
            log.get("ps/scorer_seconds", 0.0) + log.get("vps/probe_seconds", 0.0) for log in logs
        ),
        "tokens": statistics.median(log["completions/mean_length"] for log in logs),
    }


def run_isolated(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a fresh spawned process (its own memory, nothing inherited); returns its result."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def _proc_status_mib(field: str) -> float | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


def peak_rss_mib() -> float:
    """Peak resident set size of this process (MiB): since start, or since the last :func:`reset_peak_rss`."""
    hwm = _proc_status_mib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident set size of this process now (MiB); the peak where the current value is unavailable."""
    rss = _proc_status_mib("VmRSS")
    return rss if rss is not None else peak_rss_mib()


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux ``/proc/self/clear_refs``); False where that is not possible.

    After a reset :func:`peak_rss_mib` is the peak since the reset, which lets one process
    measure the peak of each of several phases. ``getrusage``'s ``ru_maxrss`` is not reset.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _proc_status_mib("VmHWM") is not None


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; cells are formatted with ``str``."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
