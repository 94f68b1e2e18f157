"""Pieces shared by the sweep benchmarks (``alpha_sweep.py``, ``ps_sweep.py``).

A sweep is one ``psgrpo compare`` output directory. Its report places each arm by the settings it
was trained with, read back from the spec compare saved in ``runs/<label>-seed<N>/compare_run.json``
(the recipe's defaults, the recipe, then the arm's flags), not by its label: an arm named by hand
(``vps-gs=--method vps --vps_probe gold_suffix``) lands where its settings put it, and the flags
that set it apart from the other arms name its line or table.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from psgrpo.commands.compare import RUN_SPEC
from psgrpo.commands.compare_report import (
    REFERENCE_METHOD,
    Interval,
    final_values,
    mean_interval,
    paired_differences,
    read_curves_csv,
)
from psgrpo.config import ProcessGRPOConfig

PER_RUN = ("seed", "output_dir")
"""Flags that differ between the runs of one arm."""


def sweep_curves(output_dir: Path) -> tuple[list[dict[str, Any]], Interval | None]:
    """``(rows of output_dir/curves.csv, grpo's final accuracy mean ± 95% CI or None without a grpo arm)``.

    Raises:
        ValueError when the sweep has not run in ``output_dir``.
    """
    if not (output_dir / "curves.csv").exists():
        raise ValueError(f"no curves.csv in {output_dir}: run the sweep there first (without --plot_only)")
    rows = read_curves_csv(output_dir / "curves.csv")
    grpo = final_values(rows, REFERENCE_METHOD, "accuracy")
    return rows, mean_interval(grpo) if grpo else None


def run_spec(output_dir: Path, label: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """``(recipe, flags)`` an arm was trained with, from the spec compare saved in its first run directory.

    Raises:
        ValueError when no run directory of ``label`` has a spec (the runs are not compare's).
    """
    for spec_file in sorted((output_dir / "runs").glob(f"{label}-seed*/{RUN_SPEC}")):
        spec = json.loads(spec_file.read_text())
        return spec.get("recipe", {}), spec.get("flags", {})
    raise ValueError(
        f"no {output_dir / 'runs' / (label + '-seed<N>') / RUN_SPEC}: curves.csv names the arm {label!r}, but its "
        "run directories are gone or were not made by psgrpo compare"
    )


@dataclass(frozen=True)
class TrainedArm:
    """One arm as it trained. ``settings``: every ``ProcessGRPOConfig`` field with a plain default,
    then the recipe, then the flags (a flag's value is its string, as given); ``others``: the
    flags that set it apart from the directory's other arms, as a command line, less ``method``,
    the swept flags and the per-run ones."""

    label: str
    settings: dict[str, Any]
    others: str


def trained_arms(rows: Sequence[dict[str, Any]], output_dir: Path, swept: Sequence[str]) -> list[TrainedArm]:
    """A :class:`TrainedArm` per arm of compare's curve ``rows`` (grpo included), in their order."""
    labels = list(dict.fromkeys(row["method"] for row in rows))
    specs = {label: run_spec(output_dir, label) for label in labels}
    every = [flags for _, flags in specs.values()]
    common = {name: values for name, values in every[0].items() if all(f.get(name) == values for f in every)}
    defaults = {f.name: f.default for f in fields(ProcessGRPOConfig)}
    arms = []
    for label, (recipe, flags) in specs.items():
        settings = {**defaults, **recipe, **{name: values[-1] for name, values in flags.items() if values}}
        others = {
            name: values
            for name, values in sorted(flags.items())
            if name not in (*swept, *PER_RUN, "method") and common.get(name) != values
        }
        arms.append(
            TrainedArm(label, settings, " ".join(f"--{n} {shlex.join(v)}" for n, v in others.items()))
        )
    return arms


@dataclass(frozen=True)
class ArmResult:
    """An arm's final held-out accuracy over its seeds, and its paired difference against grpo
    over the seeds both ran (``None`` without a common seed)."""

    arm: TrainedArm
    accuracy: Interval
    difference: Interval | None


def arm_results(rows: Sequence[dict[str, Any]], arms: Sequence[TrainedArm]) -> list[ArmResult]:
    """An :class:`ArmResult` per arm of ``arms`` that has a final accuracy in ``rows``."""
    results = []
    for arm in arms:
        if values := final_values(rows, arm.label, "accuracy"):
            differences = list(paired_differences(rows, arm.label).values())
            results.append(
                ArmResult(arm, mean_interval(values), mean_interval(differences) if differences else None)
            )
    return results


def difference_text(difference: Interval | None) -> str:
    """``+0.030 [+0.005, +0.055]``, or what stands in for it with one seed or none in common with grpo."""
    if difference is None:
        return "— (no common seed with grpo)"
    if difference.n < 2:
        return f"{difference.mean:+.3f} (1 seed)"
    return f"{difference.mean:+.3f} [{difference.low:+.3f}, {difference.high:+.3f}]"
