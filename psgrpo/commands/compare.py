"""``psgrpo compare``: train several methods (or arms) × seeds on one budget and compare held-out curves.

An *arm* is a labelled set of training flags: by default one per method (``grpo`` = ``--method
grpo``), or any variants with ``--arms`` (``'vps-a0.8=--method vps --vps_alpha 0.8'``), which is how
sweeps run. Each (arm, seed) is an ordinary ``psgrpo train`` run (the same function, :func:`psgrpo.commands.train.train`)
with the held-out evaluation callback every ``--eval_every`` steps, in
``OUTPUT_DIR/runs/<arm>-seed<seed>/``. Runs go one after another; a run whose
``report.json`` exists is finished and skipped, so an interrupted comparison continues where it
stopped (an unfinished run restarts from scratch; compare clears only a run folder it made, one holding its
``compare_run.json``, and refuses an ``OUTPUT_DIR`` holding files but nothing of compare's). Several
compare processes may share one
``OUTPUT_DIR``: each run is claimed by a lock while it trains and other processes skip it
(:mod:`psgrpo.compare.claim`). Every run starts from the same checkpoint, so
its step-0 evaluation is computed once and reused from ``OUTPUT_DIR/heldout_cache/``
(:mod:`psgrpo.eval.heldout_cache`, keyed by weights, rows and settings). Then, in ``OUTPUT_DIR``:

- ``curves.csv``: one row per (method, seed, evaluation step), see :mod:`psgrpo.compare.report`;
- ``compare.png``: held-out accuracy and mean completion length vs step;
- ``compare.md``: the table per method, where the errors are, length and unneeded steps, and the command line;
- ``recipe.yaml``: the recipe every run read (the ``--config`` file layered over the demo recipe, without
  compare's own keys).

Without ``--config`` the embedded demo recipe runs with the options in :data:`COMPARE_DEFAULTS`.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from psgrpo.compare.claim import claim_holder, claim_run
from psgrpo.compare.plot import load_pyplot, plot_curves
from psgrpo.compare.report import (
    curve_rows,
    familywise_table,
    heldout_points,
    markdown_report,
    reference_accuracy,
    summarize,
    uneven_final_steps,
    write_curves_csv,
)
from psgrpo.compare.settings import (
    RUN_SPEC,
    finished_run,
    flag_values,
)
from psgrpo.compare.tables import error_table, length_table, signal_table, step_table
from psgrpo.metrics_log import METRICS_FILE, read_metrics

logger = logging.getLogger(__name__)

# The statistical protocol (docs/compare.md): 3 methods × 5 seeds = 15 runs of 100 steps, each evaluated
# at steps 0, 25, 50, 75, 100 on 1,000 held-out problems (±3 points binomial at 95% per evaluation), in
# batches of 250. Flags after these override them.
COMPARE_DEFAULTS = [
    "--output_dir", "outputs/compare",
    "--max_steps", "100",
    "--max_eval_examples", "1000",
    "--eval_batch_size", "250",
    "--save_strategy", "no",
]  # fmt: skip
HELDOUT_CACHE = "heldout_cache"  # step-0 evaluations, shared by the runs (psgrpo.eval.heldout_cache)


@dataclass
class CompareConfig:
    """Options of ``psgrpo compare`` besides those of ``psgrpo train``."""

    methods: list[str] = field(
        default_factory=lambda: ["grpo", "ps", "vps"],
        metadata={
            "help": "Methods to train, in this order (default: grpo ps vps). Include grpo to get the 'steps to "
            "reach outcome GRPO' column."
        },
    )
    seeds: list[int] = field(
        default_factory=lambda: [0, 1, 2, 3, 4],
        metadata={
            "help": "Training seeds, one run per method and seed (default: 0 1 2 3 4). The table's 95-percent intervals "
            "and the paired differences against grpo are over seeds: fewer than 5 gives wide intervals."
        },
    )
    arms: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Variants to compare instead of --methods, each 'LABEL=FLAGS', e.g. 'grpo=--method grpo' "
            "'vps-a0.8=--method vps --vps_alpha 0.8'. LABEL (letters, digits, . _ -) names the row and the run "
            "directories; FLAGS are psgrpo train flags every run of the arm adds to the recipe. Label the "
            "outcome baseline 'grpo' to get the paired differences. Default: none (one arm per --methods entry). "
            "Use it for sweeps (vps_alpha, ps_advantage_mode × ps_lambda)."
        },
    )
    eval_every: int = field(
        default=25,
        metadata={
            "help": "Held-out evaluation every N optimizer steps, plus step 0 and the last step (default 25). "
            "Smaller: finer curves, more evaluation time."
        },
    )
    report_only: bool = field(
        default=False,
        metadata={
            "help": "Train nothing: draw curves.csv, compare.png and compare.md from the runs of OUTPUT_DIR that "
            "have finished, leaving the others out, so arms with different seed counts share one table "
            "(paired differences use the seeds both arms ran). Unfinished run directories are left as they "
            "are (another process may be training them). Default false. Use it to report while runs go on, "
            "or after running seeds in pieces."
        },
    )


def parse_compare_args(argv: Sequence[str]) -> tuple[Path, list[str], Any, CompareConfig]:
    """A compare command line → (recipe path, the other flags, ProcessGRPOConfig, CompareConfig).

    Without ``--config``: the demo recipe, with :data:`COMPARE_DEFAULTS` ahead of ``argv``'s flags.
    Everything is parsed and checked here, so a typo fails now, not after hours of training.
    """
    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser, split_config_args
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.loading import DEFAULT_RECIPE, with_default_recipe
    from psgrpo.methods import config_class
    from psgrpo.preflight import check_output_dir

    paths, flags = split_config_args(list(argv))  # short names resolved
    if len(paths) > 1:
        raise ValueError(
            "psgrpo compare takes one --config (it layers over the demo recipe); merge the files"
        )
    config_path = paths[0] if paths else DEFAULT_RECIPE
    if not paths:
        flags = [*COMPARE_DEFAULTS, *flags]
    parser = ConfigParser((TaskConfig, config_class(), ModelConfig, CompareConfig), prog="psgrpo compare")
    parser.defer_notes = True  # logged below, once every check passed: a refusal stays one line
    task, args, model_args, cfg = parser.parse_args_and_config(
        with_default_recipe(["--config", str(config_path), *flags])
    )
    check_output_dir(args.output_dir)  # a file, a path below a file, a place that cannot be written: first
    notes = parser.pending_notes  # the arms' parses below start their own
    # as train does, before any run starts and before the output folder is written
    check_before_loading(task, args, model_args, parser.file_sources())
    _validate(cfg)
    if cfg.arms and "methods" in flag_values(flags):
        raise ValueError(
            "give --methods or --arms, not both (an arm names its method: 'LABEL=--method M ...')"
        )
    where = "--arms" if cfg.arms else "--methods"
    for label, arm_flags in compare_arms(cfg):  # each arm's options as its runs get them, checked now, not
        try:  # when its turn comes hours later
            arm_task, arm_args, arm_model_args, _ = parser.parse_args_and_config(
                with_default_recipe(["--config", str(config_path), *flags, *arm_flags])
            )
        except (ValueError, SystemExit) as err:
            quoting = (
                " (an arm's flags are split like a shell line, so quote a JSON value inside the arm: "
                """--arms "a=--method ps --step_scorer_kwargs '{\\"correct_weight\\": 0.5}'")"""
                if "JSON" in str(err)
                else ""
            )
            raise ValueError(
                f"{where} {label!r}: its flags {shlex.join(arm_flags)!r} are not valid: {err}{quoting}"
            ) from None
        try:
            check_before_loading(arm_task, arm_args, arm_model_args, parser.file_sources())
        except (ValueError, ImportError, OSError) as err:  # the base flags passed: this arm's make it fail
            raise _naming(err, f"{where} {label}: ") from None
    load_pyplot()  # fail before training, not after, when matplotlib is missing
    parser.pending_notes = notes  # each run's own `psgrpo train` logs its arm's notes
    parser.log_pending_notes()
    return config_path, flags, args, cfg


def check_before_loading(task: Any, args: Any, model_args: Any, sources: dict[str, str]) -> None:
    """What ``psgrpo train`` checks of its options before anything loads, in its order: the Hub for
    ``--push_to_hub``, the checkpoint to load, then :func:`psgrpo.preflight.check_run_options`."""
    from psgrpo.hub import check_push_to_hub
    from psgrpo.loading import checkpoint_path
    from psgrpo.preflight import check_run_options

    check_push_to_hub(args.push_to_hub, args.hub_token)
    checkpoint_path(model_args.model_name_or_path, revision=model_args.model_revision)
    check_run_options(task, args, model_args, sources)


def _naming(err: Exception, prefix: str) -> Exception:
    """``err`` with ``prefix`` (``--arms b: ``) ahead of its message, of its own type where that type allows."""
    try:
        named = type(err)(f"{prefix}{err}")
    except Exception:  # an exception class that takes other arguments
        return ValueError(f"{prefix}{err}")
    return named if str(named) == f"{prefix}{err}" else ValueError(f"{prefix}{err}")


ARM_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
OWN_RUN_FLAGS = ("seed", "output_dir", "heldout_eval_steps", "eval_before_after", "heldout_cache_dir")
"""Flags compare sets for every run; an arm may not set them."""


def compare_arms(cfg: CompareConfig) -> list[tuple[str, list[str]]]:
    """``(label, train flags)`` per arm, in order: ``--arms`` entries, else one ``--method M`` arm per method.

    Raises:
        ValueError naming the entry: no ``=``, a label that is not a plain name, a repeated label, flags
        that do not split like a shell line (an unclosed quote), or flags that compare sets itself
        (:data:`OWN_RUN_FLAGS`).
    """
    if not cfg.arms:
        return [(method, ["--method", method]) for method in cfg.methods]
    arms: list[tuple[str, list[str]]] = []
    for entry in cfg.arms:
        label, eq, rest = entry.partition("=")
        label = label.strip()
        if not eq or not ARM_LABEL.fullmatch(label):
            raise ValueError(
                f"--arms entry {entry!r}: expected 'LABEL=FLAGS' with LABEL made of letters, digits, '.', '_' "
                "or '-' (it names run directories), e.g. 'vps-a0.8=--method vps --vps_alpha 0.8'"
            )
        if label in dict(arms):
            raise ValueError(f"--arms: the label {label!r} appears twice; each arm needs its own label")
        try:
            flags = shlex.split(rest)
        except ValueError as err:  # shlex says only "No closing quotation"
            raise ValueError(
                f"--arms entry {entry!r}: its flags cannot be split like a shell line ({err}); close the "
                "quote, or quote a value inside the arm with the other kind of quote"
            ) from None
        owned = sorted(set(flag_values(flags)) & set(OWN_RUN_FLAGS))
        if owned:
            raise ValueError(
                f"--arms entry {entry!r} sets {', '.join('--' + name for name in owned)}, which compare sets "
                "for every run (use --seeds and --output_dir of compare itself)"
            )
        arms.append((label, flags))
    return arms


def strip_compare_flags(flags: Sequence[str]) -> list[str]:
    """``flags`` without compare's own options (``--methods a b``, ``--seeds=0``, …): what a run gets."""
    from transformers import HfArgumentParser

    # No abbreviations: `--seed 3` (the training seed) must not be taken for `--seeds`.
    _, rest = HfArgumentParser(CompareConfig, allow_abbrev=False).parse_known_args(list(flags))
    return rest


def run_recipe(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe a run reads: the YAML mapping without compare's own keys."""
    own = {f.name for f in fields(CompareConfig)}
    return {key: value for key, value in config.items() if key not in own}


def _validate(cfg: CompareConfig) -> None:
    from psgrpo.methods import method_names

    unknown = [m for m in cfg.methods if m not in method_names()]
    if unknown or not cfg.methods:
        raise ValueError(f"--methods takes one or more of {', '.join(method_names())}; got {cfg.methods}")
    for name, values in (("methods", cfg.methods), ("seeds", cfg.seeds)):
        if len(set(values)) != len(values) or not values:
            raise ValueError(f"--{name} must list distinct values, got {values}")
    if cfg.eval_every < 1:
        raise ValueError(f"--eval_every must be a positive number of steps, got {cfg.eval_every}")


COMPARE_OUTPUTS = ("curves.csv", "compare.md", "compare.png", HELDOUT_CACHE)
"""What compare writes in ``OUTPUT_DIR`` besides ``runs/`` and ``recipe.yaml`` (a name a user's own recipe may
have, so it alone does not make a folder compare's)."""


def made_by_compare(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a run folder compare may clear: one it made (holding the ``compare_run.json`` it
    writes first and removes last), or an empty one."""
    if run_dir.is_symlink() or not run_dir.is_dir():
        return False
    return (run_dir / RUN_SPEC).is_file() or not any(run_dir.iterdir())


def check_compare_dir(root: Path, run_dirs: dict[str, Path], training: bool) -> None:
    """Refuse, before anything is written, an ``OUTPUT_DIR`` compare would overwrite or clear someone else's files in.

    Args:
        run_dirs: ``"arm a, seed 0" → its run folder``, each folder this command may train in.
        training: whether runs may train (their folders are cleared first); ``--report_only`` never touches them.

    Raises:
        FileExistsError naming the folder and what to do: ``root`` exists, holds something, and holds neither an
        output of compare (:data:`COMPARE_OUTPUTS`) nor a run it made; or, when ``training``, a run folder that
        is a file or that compare did not make (it would be deleted to restart the run).
    """
    runs = root / "runs"
    if root.is_dir() and any(root.iterdir()):
        made = [root / name for name in COMPARE_OUTPUTS if (root / name).exists()]
        if runs.is_dir() and not runs.is_symlink():
            made += [d for d in runs.iterdir() if (d / RUN_SPEC).is_file() or d.name.endswith(".lock")]
        if not made:
            held = sorted(p.name for p in root.iterdir())
            shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
            raise FileExistsError(
                f"--output_dir {root}: holds {shown} but no output of psgrpo compare (runs/ with its runs, "
                "compare.md, curves.csv), and compare writes recipe.yaml, compare.md, curves.csv and compare.png "
                "there: give a new or empty --output_dir, or an earlier compare's"
            )
    if runs.exists() and not runs.is_dir():
        raise FileExistsError(
            f"--output_dir {root}: {runs} is a file, and compare writes its runs in that folder: give another "
            "--output_dir, or move the file away"
        )
    for what, run_dir in run_dirs.items() if training else ():
        if (run_dir.exists() or run_dir.is_symlink()) and not made_by_compare(run_dir):
            raise FileExistsError(
                f"--output_dir {root}: {run_dir} (the folder of {what}) was not made by psgrpo compare (it has no "
                f"{RUN_SPEC}), and compare clears an unfinished run's folder before training it: give another "
                "--output_dir, or move that folder away"
            )


def _start_run(run_dir: Path, spec: dict[str, Any]) -> None:
    """Clear what an interrupted run left in ``run_dir`` and write the spec a fresh run trains with.

    Only a folder compare made is cleared (:func:`made_by_compare`), its ``compare_run.json`` last, so a folder
    caught half-cleared by another compare's check still reads as compare's.
    """
    if run_dir.exists() or run_dir.is_symlink():
        if not made_by_compare(run_dir):  # checked for every run before any trained: this is a backstop
            raise FileExistsError(
                f"{run_dir} was not made by psgrpo compare (it has no {RUN_SPEC}); compare would delete it to "
                "train this run: give another --output_dir, or move that folder away"
            )
        logger.info("%s: unfinished run, starting it again", run_dir)
        for child in run_dir.iterdir():
            if child.name != RUN_SPEC:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    (run_dir / RUN_SPEC).write_text(json.dumps(spec, indent=2))


def _next_action(run_dir: Path, spec: dict[str, Any], claimed: bool) -> str:
    """What this process does with an unfinished run: ``train`` it, or skip it as ``busy`` or ``done``.

    ``busy``: another process holds the run's lock and is training it. ``done``: the lock was free
    but the run has finished since this process planned (another process trained it meanwhile).
    """
    if not claimed:
        return "busy"
    return "done" if finished_run(run_dir, spec) else "train"


def _finished_since(run_dir: Path, spec: dict[str, Any]) -> bool:
    """Whether a run unfinished at planning time (trained here, or by another process meanwhile) is now a finished
    run of ``spec``; one another process finished with other settings is left out with a warning, not reported."""
    try:
        return finished_run(run_dir, spec)
    except ValueError as mismatch:
        logger.warning("left out of this report: %s", mismatch)
        return False


def compare(argv: Sequence[str]) -> list[dict[str, Any]]:
    """``psgrpo compare``: run every (method, seed), then write curves.csv, compare.png, compare.md.

    Returns the curve rows (one dict per method, seed and evaluation step).
    """
    import yaml

    from psgrpo.commands.train import train
    from psgrpo.config.parsing import layer_config_files
    from psgrpo.loading import DEFAULT_RECIPE
    from psgrpo.preflight import TrainingInterrupted

    argv = list(argv)
    config_path, flags, args, cfg = parse_compare_args(argv)
    root = Path(args.output_dir)
    is_main = args.process_index == 0
    recipe = run_recipe(layer_config_files([DEFAULT_RECIPE, config_path])[0])  # what the runs train with
    run_flags = strip_compare_flags(flags)

    arms = dict(compare_arms(cfg))  # label → its train flags (`--method M` for a plain method)
    # seed by seed, every arm of a seed before the next seed: a comparison stopped part-way leaves whole pairs
    runs = {(label, seed): root / "runs" / f"{label}-seed{seed}" for seed in cfg.seeds for label in arms}
    # every run folder is checked before anything is written or trains: none of the user's files is deleted
    check_compare_dir(
        root, {f"arm {label}, seed {seed}": d for (label, seed), d in runs.items()}, not cfg.report_only
    )
    plan = []  # every finished run is checked before any trains: a settings mismatch fails at once
    for (label, seed), run_dir in runs.items():
        overrides = [*arms[label], "--seed", str(seed), "--output_dir", str(run_dir),
                     "--heldout_eval_steps", str(cfg.eval_every), "--eval_before_after", "false",
                     "--heldout_cache_dir", str(root / HELDOUT_CACHE)]  # fmt: skip
        flags_of_run = [*run_flags, *overrides]
        # JSON round trip: the spec compares equal to the one a previous invocation saved.
        spec = json.loads(json.dumps({"recipe": recipe, "flags": flag_values(flags_of_run)}))
        plan.append((label, seed, run_dir, flags_of_run, spec, finished_run(run_dir, spec)))
    with args.main_process_first(local=False, desc="compare setup"):  # under accelerate launch: main writes
        if is_main:
            root.mkdir(parents=True, exist_ok=True)
            if not cfg.report_only:  # another process may be about to start a run from this file
                (root / "recipe.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    busy = []  # runs other compare processes were training when this one reached them
    for i, (label, seed, run_dir, flags_of_run, spec, finished) in enumerate(plan, start=1):
        what = f"run {i}/{len(plan)} ({label}, seed {seed})"
        if finished:
            logger.info("%s: finished earlier, skipped", what)
            continue
        if cfg.report_only:  # never touches a run directory: another process may be training it
            logger.info("%s: not finished, left out of the report", what)
            continue
        claim = claim_run(run_dir) if is_main else None
        try:
            action = _next_action(run_dir, spec, claim is not None) if is_main else ""
            if args.world_size > 1:  # every process of an `accelerate launch` follows the main one
                from accelerate.utils import broadcast_object_list

                action = broadcast_object_list([action])[0]
            if action == "busy":
                logger.info("%s: being trained by %s, skipped", what, claim_holder(run_dir))
                busy.append(f"{label}-seed{seed}")
            elif action == "done":
                logger.info("%s: finished by another process meanwhile, skipped", what)
            else:
                logger.info("%s → %s", what, run_dir)
                with args.main_process_first(local=False, desc="compare run setup"):
                    if is_main:
                        _start_run(run_dir, spec)
                try:  # on Ctrl-C, say how compare continues (train's own line advises `psgrpo train`)
                    train(["--config", str(root / "recipe.yaml"), *flags_of_run])
                except KeyboardInterrupt:
                    raise TrainingInterrupted(
                        f"interrupted during {what}; finished runs are kept, and the same command "
                        f"({shlex.join(['psgrpo', 'compare', *argv])}) trains the unfinished ones again"
                    ) from None
        finally:
            if claim is not None:
                claim.close()
    if not is_main:  # metrics.jsonl and the outputs are the main process's
        return []
    if busy:
        logger.warning(
            "%d run(s) still training in other processes are left out of this report (%s); a compare of the "
            "same arms that finishes later includes them, or run again with --report_only true once they finish",
            len(busy),
            ", ".join(busy),
        )
    done = [
        (label, seed, run_dir)
        for label, seed, run_dir, _, spec, finished in plan
        if finished or (not cfg.report_only and _finished_since(run_dir, spec))
    ]
    if not done and cfg.report_only:
        raise ValueError(
            f"--report_only: no finished run in {root / 'runs'} for these arms and seeds (a finished run has a "
            "report.json); run compare without --report_only first"
        )
    if not done:
        raise ValueError(
            f"no finished run to report in {root / 'runs'}: other processes were training every run; run "
            "compare with --report_only true once they have finished"
        )
    arm_order = list(arms)
    done.sort(key=lambda run: (arm_order.index(run[0]), cfg.seeds.index(run[1])))  # curves.csv: arm by arm
    rows = [row for label, seed, run_dir in done for row in _run_rows(label, seed, run_dir)]
    write_curves_csv(rows, root / "curves.csv")
    uneven = uneven_final_steps(rows)
    for line in uneven:
        logger.warning("compare.md: %s", line)
    command = shlex.join(["psgrpo", "compare", *argv])
    problems = int(max((row.get("n", 0) for row in rows), default=0)) or None  # held-out rows per evaluation
    report = markdown_report(
        summarize(rows),
        command,
        reference_accuracy(rows),
        heldout_problems=problems,
        sections=[
            *([f"**Warning.** {line}." for line in uneven] + [""] if uneven else []),
            *step_table(rows),
            *familywise_table(rows),
            *error_table(rows),
            *length_table(rows),
            *signal_table(rows),
        ],
    )
    (root / "compare.md").write_text(report)
    plot_curves(rows, root / "compare.png")
    print((root / "compare.md").read_text())
    return rows


def _run_rows(method: str, seed: int, run_dir: Path) -> list[dict[str, Any]]:
    """The curve rows of one finished run, from its metrics.jsonl."""
    points = heldout_points(read_metrics(run_dir))
    if not points:
        raise ValueError(
            f"{run_dir / METRICS_FILE}: no heldout/accuracy records; delete {run_dir} to run it again"
        )
    return curve_rows(method, seed, points)
