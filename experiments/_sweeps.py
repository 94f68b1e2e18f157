"""Pieces shared by the sweep experiments (``alpha_sweep.py``, ``ps_sweep.py``).

A sweep is one ``psgrpo compare`` output directory. Its report places each arm by the settings it
was trained with, read back from the spec compare saved in ``runs/<label>-seed<N>/compare_run.json``
(the recipe's defaults, the recipe, then the arm's flags), not by its label: an arm named by hand
(``vps-gs=--method vps --vps_probe gold_suffix``) lands where its settings put it, and the flags
that set it apart from the other arms name its line or table.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from psgrpo.commands.cli import configure_logging
from psgrpo.commands.compare import compare
from psgrpo.compare.report import (
    REFERENCE_METHOD,
    Interval,
    final_values,
    mean_interval,
    paired_differences,
    read_curves_csv,
    uneven_final_steps,
)
from psgrpo.compare.settings import RESULT_NEUTRAL, RUN_SPEC
from psgrpo.config.process_grpo_config import ProcessGRPOConfig

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
            if name not in (*swept, *PER_RUN, *RESULT_NEUTRAL, "method") and common.get(name) != values
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


def write_report(
    output_dir: Path,
    name: str,
    method: str,
    title: str,
    place: Callable[[list[dict[str, Any]], Path], Sequence[Any]],
    table: Callable[[Sequence[Any], Interval | None], str],
    draw: Callable[[Sequence[Any], Interval | None, Path], None],
) -> str:
    """Write ``<name>.md`` (``title`` and the table) and ``<name>.png`` in ``output_dir``; return the table.

    Below the table, as in compare.md, a **Warning.** line for each arm whose runs end at different steps
    (:func:`~psgrpo.compare.report.uneven_final_steps`).

    ``place(rows, output_dir)`` gives the sweep's results from compare's curve rows; ``table`` and
    ``draw`` render them beside grpo's final accuracy.

    Raises:
        ValueError when the sweep has not run there, or ``place`` finds no ``method`` arm.
    """
    rows, grpo = sweep_curves(output_dir)
    results = place(rows, output_dir)
    if not results:
        raise ValueError(f"{output_dir / 'curves.csv'} has no {method} arm: is this a {name} output?")
    text = table(results, grpo)
    if warnings := uneven_final_steps(rows):  # as compare.md says: "final" and the paired Δ mix steps
        text = text.rstrip("\n") + "".join(f"\n\n**Warning.** {line}." for line in warnings) + "\n"
    (output_dir / f"{name}.md").write_text(f"# {title}\n\n{text}")
    draw(results, grpo, output_dir / f"{name}.png")
    return text


def sweep_parser(description: str, method: str, prefix: str, example_flags: str) -> argparse.ArgumentParser:
    """The options every sweep has: ``--arm_flags``, ``--prefix``, ``--output_dir``, ``--plot_only``
    (everything else goes on to ``psgrpo compare``)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--arm_flags", default="", help=f"flags every {method} arm gets, e.g. '{example_flags}'"
    )
    parser.add_argument(
        "--prefix", default=prefix, help=f"start of the {method} arms' labels (default {prefix})"
    )
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--plot_only", action="store_true", help="redraw from OUTPUT_DIR/curves.csv")
    return parser


def sweep_main(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    arms_of: Callable[[argparse.Namespace], list[str]],
    report: Callable[[Path], str],
) -> str:
    """Run ``psgrpo compare`` with the arms ``arms_of(args)`` (unless ``--plot_only``), then the report."""
    args, rest = parser.parse_known_args(list(argv))
    if not args.plot_only:
        compare([*rest, "--output_dir", args.output_dir, "--arms", *arms_of(args)])
    text = report(Path(args.output_dir))
    print(text)
    return text


def run_cli(main: Callable[[Sequence[str]], str]) -> None:
    """``main(sys.argv[1:])`` with psgrpo's log lines shown (which run trains, which are skipped and why);
    bad input exits with its message, as a traceback would bury it."""
    configure_logging()
    try:
        main(sys.argv[1:])
    except ValueError as err:
        sys.exit(f"error: {err}")
