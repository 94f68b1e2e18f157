"""Pieces shared by the sweep benchmarks (``alpha_sweep.py``, ``ps_sweep.py``): the curve rows a sweep's
``psgrpo compare`` wrote, and grpo's final held-out accuracy among them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from psgrpo.commands.compare_report import (
    REFERENCE_METHOD,
    Interval,
    final_values,
    mean_interval,
    read_curves_csv,
)


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
