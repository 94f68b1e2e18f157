"""Which finished runs ``psgrpo compare`` may reuse: a run's settings (its recipe and flags, the *spec*
saved as ``compare_run.json``) against the command's.

A finished run is reused when its spec equals the command's up to settings that change no result
(:data:`RESULT_NEUTRAL`) and up to recipe keys that one side spells out at their default value;
any other difference is an error, since its results would not compare.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

logger = logging.getLogger("psgrpo.commands.compare")

RUN_SPEC = "compare_run.json"
"""A run's settings, written when it starts: ``{"recipe": {...}, "flags": {name: [values]}}``."""


def flag_values(flags: Sequence[str]) -> dict[str, list[str]]:
    """``["--max_steps", "2", "--methods=a", "--seeds", "0", "1"]`` → ``{"max_steps": ["2"], ...}``.

    Names are normalised (``--eval-every`` → ``eval_every``) and a repeated flag keeps its last
    values, as argparse does, so two command lines that set the same options compare equal.
    """
    values: dict[str, list[str]] = {}
    current: list[str] | None = None
    for token in flags:
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            current = values[name.replace("-", "_")] = [value] if eq else []
        elif current is None:
            raise ValueError(f"expected an option (--name) before {token!r} in {list(flags)}")
        else:
            current.append(token)
    return values


RESULT_NEUTRAL = frozenset(
    {"gradient_checkpointing", "report_to", "disable_tqdm", "logging_dir", "save_strategy", "save_steps",
     "save_total_limit", "output_dir", "heldout_cache_dir"}
)  # fmt: skip
"""Settings that change speed, memory or what is written besides the metrics, never the weights or the
evaluations: gradient checkpointing recomputes the same activations (identical weights:
tests/test_trainer.py), the others choose loggers, progress bars, checkpoints, where a run
is written (a compare directory that was moved or copied still holds its runs) and where the
step-0 evaluation is cached (a hit is the same evaluation, by its key). A finished run
that differs from the command only in these is reused, with the difference logged."""


def settings_diff(
    previous: dict[str, Any], current: dict[str, Any], ignore: frozenset[str] = frozenset()
) -> list[str]:
    """``"section.name: old → new"`` for every setting outside ``ignore`` that differs between two run specs."""
    changes = []
    for section in sorted(set(previous) | set(current)):
        old, new = previous.get(section, {}), current.get(section, {})
        for name in sorted((set(old) | set(new)) - ignore):
            if old.get(name) != new.get(name):
                changes.append(f"{section}.{name}: {old.get(name)} → {new.get(name)}")
    return changes


def recipe_defaults() -> dict[str, Any]:
    """What each recipe key means when a recipe leaves it out: the default of its field in the
    dataclasses ``psgrpo train`` parses (TaskConfig, ProcessGRPOConfig, TRL's ModelConfig)."""
    from dataclasses import MISSING

    from trl import ModelConfig

    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.tasks import TaskConfig

    defaults: dict[str, Any] = {}
    for cls in (ModelConfig, ProcessGRPOConfig, TaskConfig):
        for f in fields(cls):
            if f.default is not MISSING:
                defaults[f.name] = f.default
            elif f.default_factory is not MISSING:
                defaults[f.name] = f.default_factory()
    return json.loads(json.dumps(defaults, default=str))  # as a spec stores them


def with_recipe_defaults(
    spec: dict[str, Any], other: dict[str, Any], defaults: dict[str, Any]
) -> dict[str, Any]:
    """``spec`` with each recipe key that only ``other`` sets filled in with its default, so a recipe that
    spells out a default (``step_scorer: arithmetic``) compares equal to one that leaves it out."""
    recipe = dict(spec.get("recipe", {}))
    for name in set(other.get("recipe", {})) - set(recipe):
        if name in defaults:
            recipe[name] = defaults[name]
    return {**spec, "recipe": recipe}


def finished_run(run_dir: Path, spec: dict[str, Any]) -> bool:
    """Return True when ``run_dir`` holds a finished run of this ``spec`` (its ``report.json`` exists).

    Raises:
        ValueError when a finished run was made with other settings (its results would not compare).
    """
    spec_file = run_dir / RUN_SPEC
    if not (run_dir / "report.json").exists():
        return False
    previous = json.loads(spec_file.read_text()) if spec_file.exists() else {}
    if settings_diff(previous, spec, ignore=RESULT_NEUTRAL):  # a key set on one side only may be its default
        defaults = recipe_defaults()
        previous, spec = (
            with_recipe_defaults(previous, spec, defaults),
            with_recipe_defaults(spec, previous, defaults),
        )
    changes = settings_diff(previous, spec, ignore=RESULT_NEUTRAL)
    if changes:
        raise ValueError(
            f"{run_dir} holds a finished run made with other settings ({'; '.join(changes)}); use another "
            "--output_dir, or delete that run directory to train it again"
        )
    if neutral := settings_diff(previous, spec):
        logger.info(
            "%s: reused; it differs only in settings that change no result (%s)", run_dir, "; ".join(neutral)
        )
    return True
