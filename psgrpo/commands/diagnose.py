"""``psgrpo diagnose``: does a checkpoint's GRPO-VPS probe point at the wrong step?

::

    psgrpo diagnose --model_name_or_path embedded:arith --dataset arith --problems 200 --corruptions 3 \\
        --output outputs/diagnose/arith.json

builds, for held-out problems of an arith variant, the gold solution and copies with exactly one
wrong step, probes C_k at step ends and at entropy cuts with the trainer's probe code, and prints
one markdown row per boundary kind × ΔC form: AUC of ΔC for ranking wrong segments below correct
ones, mean ΔC at each, median C, |α·ΔC| against |A_i|, the process share of |A_t| and where the
cuts fall (:mod:`psgrpo.diagnostics.probe_quality` defines every figure; docs/learning.md has results).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from psgrpo.config.options import ArithVariant, ProbeBoundaries, allowed, check_choice, check_number
from psgrpo.loading import DEVICE_HELP

logger = logging.getLogger("psgrpo")


@dataclass
class DiagnoseConfig:
    """Options of ``psgrpo diagnose``."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Checkpoint dir, hub id or embedded:NAME. Default: the embedded warm-start checkpoint."
        },
    )
    dataset: ArithVariant = field(
        default="arith", metadata={"help": "Arith variant whose held-out (test) problems are probed."}
    )
    problems: int = field(default=200, metadata={"help": "Held-out problems, one group each (default 200)."})
    corruptions: int = field(
        default=3,
        metadata={"help": "Copies with one wrong step per problem, beside the gold one (default 3)."},
    )
    alpha: float = field(
        default=1.2, metadata={"help": "α of A_t = A_i + α·ΔC_k (default 1.2, the paper's)."}
    )
    seed: int = field(default=0, metadata={"help": "RNG seed of the wrong steps (default 0)."})
    kinds: list[str] = field(
        default_factory=lambda: list(allowed(ProbeBoundaries)),
        metadata={"help": f"Boundary kinds to probe (default all): {', '.join(allowed(ProbeBoundaries))}."},
    )
    chunk_size: int = field(default=32, metadata={"help": "Completions per probe forward (default 32)."})
    device: str = field(default="auto", metadata={"help": DEVICE_HELP})
    output: str | None = field(default=None, metadata={"help": "Also write the report as JSON here."})

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, ArithVariant)
        check_number("problems", self.problems, low=1)
        check_number("corruptions", self.corruptions, low=1)
        check_number("alpha", self.alpha)
        check_number("chunk_size", self.chunk_size, low=1)
        if not self.kinds:
            raise ValueError(f"kinds is empty; choose from {', '.join(allowed(ProbeBoundaries))}")
        for kind in self.kinds:
            check_choice("kinds", kind, ProbeBoundaries)


def run_diagnose(cfg: DiagnoseConfig) -> dict[str, Any]:
    """Load the checkpoint, build the groups, probe them and return the report (JSON-ready)."""
    import torch

    from psgrpo.data.arith import split_problems
    from psgrpo.diagnostics.probe_quality import build_cases, measure
    from psgrpo.loading import load_model_and_tokenizer, resolve_device

    torch.manual_seed(cfg.seed)
    model, tokenizer = load_model_and_tokenizer(
        cfg.model_name_or_path, attn_implementation="sdpa", device=resolve_device(cfg.device)
    )  # resolve again: run_diagnose is also called from Python with 'auto'

    model.eval()
    problems = split_problems("test", n=cfg.problems, variant=cfg.dataset)
    cases = build_cases(problems, cfg.corruptions, random.Random(cfg.seed))
    if not cases:
        raise ValueError(
            f"no problem of {cfg.dataset} had {cfg.corruptions} valid one-wrong-step copies; lower --corruptions"
        )
    group = 1 + cfg.corruptions
    return {
        "config": asdict(cfg),
        **measure(model, tokenizer, cases, group, cfg.alpha, cfg.kinds, cfg.chunk_size),
    }


def follow_task_record(cfg: DiagnoseConfig, given: set[str]) -> None:
    """Probe the task the checkpoint was trained on (its ``psgrpo_task.json``, as ``psgrpo eval`` does) unless
    ``--dataset`` was given; a run directory without a final model is read from its newest checkpoint."""
    from psgrpo.eval.trained_on import read_task_record, resolve_eval_checkpoint
    from psgrpo.loading import checkpoint_path

    if cfg.model_name_or_path is not None:  # a path that is no checkpoint: one line before anything loads
        checkpoint_path(cfg.model_name_or_path, run_dir_ok=True)
    cfg.model_name_or_path = resolve_eval_checkpoint(cfg.model_name_or_path, "psgrpo diagnose", "probed")
    found = read_task_record(cfg.model_name_or_path)
    if found is None or "dataset" in given:
        return
    record, path = found
    if record["dataset"] in allowed(ArithVariant):
        cfg.dataset = record["dataset"]
        logger.info(
            "psgrpo diagnose: %s was trained on %s (%s), so its test problems are probed; --dataset probes another",
            cfg.model_name_or_path,
            cfg.dataset,
            path,
        )
    else:
        logger.warning(
            "psgrpo diagnose: %s was trained on %s (%s), but diagnose builds wrong steps for the arith tasks only, "
            "so it probes %s; give --dataset to choose the arith variant",
            cfg.model_name_or_path,
            record["dataset"],
            path,
            cfg.dataset,
        )


def diagnose(argv: Sequence[str]) -> dict[str, Any]:
    """Parse :class:`DiagnoseConfig`, measure, print the markdown table and return the report."""
    from psgrpo.config.parsing import ConfigParser
    from psgrpo.diagnostics.probe_quality import markdown
    from psgrpo.loading import resolve_device
    from psgrpo.preflight import check_output_file

    parser = ConfigParser((DiagnoseConfig,), prog="psgrpo diagnose")
    (cfg,) = parser.parse_args_and_config(list(argv))
    cfg.device = resolve_device(cfg.device)  # a GPU this machine lacks: one line, before anything loads
    check_output_file(cfg.output, option="--output")
    follow_task_record(cfg, given=set(parser.command_line) | set(parser.config_sources))
    report = run_diagnose(cfg)
    print(markdown(report))
    print(
        f"\n{cfg.dataset}/test: {report['groups']} groups of 1 gold + {cfg.corruptions} wrong copies; mean |A_i| scaled "
        f"{report['mean_abs_A_scaled']:.3f}, unscaled {report['mean_abs_A_unscaled']:.3f}"
    )
    if cfg.output:
        Path(cfg.output).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.output).write_text(json.dumps(report, indent=2))
    return report
