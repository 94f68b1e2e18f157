"""``psgrpo score-steps``: how well does a step scorer find the first wrong step of labelled solutions?

::

    psgrpo score-steps --data my_solutions.jsonl --gold data/gsm8k/test.jsonl \\
        --step_scorer reference --step_scorer_kwargs '{"correct_weight": 0.0, "reference_weight": 1.0}' \\
        --output_dir outputs/score_steps/reference

``--data`` holds solutions in ProcessBench's format (:mod:`psgrpo.data.step_labels`: ``id``,
``problem``, ``steps``, ``label`` = first wrong step or -1). Each solution's steps are scored by the
step scorer of ``psgrpo train`` (same ``--step_scorer`` / ``--step_scorer_kwargs``, same checks);
the predicted label is the first flagged step (:mod:`psgrpo.ps.scorers.flags` defines "flagged"),
and ProcessBench's metrics (:mod:`psgrpo.eval.first_error`) compare predictions with labels.

``--gold`` (GSM8K JSONL) gives scorers that read the gold worked solution (``reference``) the
``solution``, ``answer`` and ``question`` columns, joined on the whitespace-normalised problem
text. A solution whose problem is not in ``--gold`` is skipped and counted when the scorer needs
those columns, else scored without them; the summary says which and how many.

Prints a markdown table (F1 with its 95 % interval over solutions, exact / early / late /
missed, false blame, µs per step; one row per
generator when the solutions have a ``generator`` field) and writes into ``--output_dir`` (when
given): ``summary.json`` (metrics, counts, timing, ``by_generator``, the flag rule and the options) and ``predictions.jsonl`` (per solution: id, label,
prediction, step scores and flags, gold found or not, the line's other fields). Every input is
checked before the scorer (a PRM: a model) is built, and the directory is written only at the end.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.ps.scorers.flags import FLAG_RULE

logger = logging.getLogger("psgrpo")

SUMMARY_JSON, PREDICTIONS_JSONL = "summary.json", "predictions.jsonl"
DESCRIPTION = (
    "How well a step scorer finds the first wrong step of labelled solutions (ProcessBench's format and "
    "metrics; docs/scorers.md)."
)
_TRAIN_FIELDS = {f.name: f for f in fields(ProcessGRPOConfig)}


def _train_option(name: str) -> Any:
    """A field defined as ``psgrpo train``'s option ``name``: same default, help and choices."""
    train_field = _TRAIN_FIELDS[name]
    return field(default=train_field.default, metadata=dict(train_field.metadata))


@dataclass
class ScoreStepsConfig:
    """Options of ``psgrpo score-steps``."""

    data: str | None = field(
        default=None,
        metadata={
            "help": "Labelled solutions, JSONL in ProcessBench's format: one object a line with 'id', 'problem', "
            "'steps' (list of strings), 'label' (0-based first wrong step, or -1); other fields are kept. Required."
        },
    )
    gold: str | None = field(
        default=None,
        metadata={
            "help": "GSM8K-format JSONL ('question', 'answer' with '#### n') joined to 'problem' by whitespace-"
            "normalised text: the gold 'solution' and 'answer' columns for scorers that read them ('reference')."
        },
    )
    step_scorer: str = _train_option("step_scorer")
    step_scorer_kwargs: dict | str | None = _train_option("step_scorer_kwargs")
    flag_below: float = field(
        default=0.5,
        metadata={"help": f"Threshold of PRMs and other non-rule scorers (default 0.5). {FLAG_RULE}"},
    )
    batch_size: int = field(default=64, metadata={"help": "Solutions per scorer call (default 64)."})
    limit: int | None = field(default=None, metadata={"help": "Score only the first N solutions."})
    output_dir: str | None = field(
        default=None,
        metadata={"help": "Write summary.json and predictions.jsonl here (default: print the table only)."},
    )

    def __post_init__(self) -> None:
        from psgrpo.config.checks import check_step_scorer
        from psgrpo.config.options import check_number, json_object_option

        if not self.data:
            raise ValueError("--data is required: a JSONL file of labelled solutions (ProcessBench's format)")
        self.step_scorer_kwargs = json_object_option("step_scorer_kwargs", self.step_scorer_kwargs)
        check_step_scorer(self.step_scorer, self.step_scorer_kwargs)
        check_number("flag_below", self.flag_below)
        check_number("batch_size", self.batch_size, low=1)
        check_number("limit", self.limit, low=1, allow_none=True)


@dataclass
class _Row:
    """A solution with its gold columns (``None``: no gold found) and, once scored, its scores."""

    solution: Any
    gold: dict[str, str] | None
    scores: list[float] | None = None
    flags: list[bool] | None = None
    prediction: int | None = None


def _join_gold(cfg: ScoreStepsConfig, solutions: list[Any], needs_gold: bool) -> list[_Row]:
    """Each solution with its gold row; refuses a gold-reading scorer without ``--gold`` or any match."""
    from psgrpo.data.step_labels import gold_by_problem, problem_key

    if needs_gold and not cfg.gold:
        raise ValueError(
            f"step scorer {cfg.step_scorer!r} reads the gold worked solution of each problem; pass --gold FILE "
            "(GSM8K JSONL with 'question' and 'answer'), or use a scorer that needs none ('arithmetic', 'prm')"
        )
    index = gold_by_problem(cfg.gold) if cfg.gold else {}
    rows = [_Row(s, index.get(problem_key(s.problem))) for s in solutions]
    if cfg.gold and not any(row.gold for row in rows):
        raise ValueError(
            f"no problem of --data {cfg.data} is a question of --gold {cfg.gold} (joined on whitespace-"
            "normalised text); is --gold the right GSM8K split?"
        )
    return rows


def _score(cfg: ScoreStepsConfig, scorer: Any, rows: list[_Row], with_gold: bool) -> None:
    """Score ``rows`` in batches (one progress bar), with the gold columns when ``with_gold``."""
    from tqdm.auto import tqdm

    from psgrpo.data.step_labels import GOLD_COLUMNS
    from psgrpo.ps.scorers.flags import first_flag, score_and_flag

    with tqdm(total=len(rows), unit="solution", desc="score-steps", disable=None) as bar:
        for start in range(0, len(rows), cfg.batch_size):
            batch = rows[start : start + cfg.batch_size]
            columns = {name: [row.gold[name] for row in batch] for name in GOLD_COLUMNS} if with_gold else {}  # type: ignore[index]
            result = score_and_flag(
                scorer,
                [row.solution.problem for row in batch],
                [row.solution.steps for row in batch],
                columns,
                cfg.flag_below,
            )
            for row, scores, flags in zip(batch, result.scores, result.flags, strict=True):
                row.scores, row.flags, row.prediction = scores, flags, first_flag(flags)
            bar.update(len(batch))


def run_score_steps(cfg: ScoreStepsConfig) -> dict[str, Any]:
    """Read and join the inputs, build the scorer, score every solution; return the summary (JSON-ready)."""
    from psgrpo.data.step_labels import read_labelled_solutions
    from psgrpo.ps.scorers import STEP_SCORERS, build_step_scorer

    solutions = read_labelled_solutions(cfg.data, limit=cfg.limit)  # type: ignore[arg-type]
    needs_gold = bool(getattr(STEP_SCORERS.get(cfg.step_scorer), "required_columns", ()))
    rows = _join_gold(cfg, solutions, needs_gold)
    start = time.perf_counter()
    scorer = build_step_scorer(cfg.step_scorer, **cfg.step_scorer_kwargs)  # type: ignore[arg-type]
    load_seconds = time.perf_counter() - start
    warn_unused_threshold(cfg, scorer)
    without_gold = [row for row in rows if not row.gold]
    groups = generator_groups(rows)
    read_shares(scorer)  # from here on: what it reads in these rows
    seconds: dict[str, float] = {}
    for name, group in groups.items():  # one generator at a time, so each gets its own timing
        start = time.perf_counter()
        _score(cfg, scorer, [row for row in group if row.gold], with_gold=True)
        if not needs_gold:
            _score(cfg, scorer, [row for row in group if not row.gold], with_gold=False)
        seconds[name] = time.perf_counter() - start
    policy = "skipped (the scorer reads the gold solution)" if needs_gold else "scored without gold columns"
    overall = _metrics(rows, sum(seconds.values()))
    summary = {
        **overall,
        "solutions_in_file": len(rows),
        "solutions_without_gold": len(without_gold),
        "without_gold": policy if without_gold else "none",
        "scorer_load_seconds": load_seconds,
        "scorer_read": read_shares(scorer),
        "by_generator": (
            {name: _metrics(group, seconds[name]) for name, group in groups.items()}
            if len(groups) > 1
            else {}
        ),
        "scorer": repr(scorer),
        "flag_rule": FLAG_RULE,
        "config": asdict(cfg),
    }
    return {"summary": summary, "rows": rows}


def read_shares(scorer: Any) -> dict[str, Any] | None:
    """What a rule-based scorer read in the steps it scored since its counts were last taken:
    ``counts`` (steps, steps with no equation, with a garbled one …) and their ``metrics`` (the
    trainer's ``ps/frac_steps_*``); ``None`` for a scorer that counts nothing (a PRM, a callable)."""
    pop, to_metrics = getattr(scorer, "pop_counts", None), getattr(scorer, "count_metrics", None)
    if not (callable(pop) and callable(to_metrics)):
        return None
    counts = pop()
    return {"counts": counts, "metrics": to_metrics(counts)}


def warn_unused_threshold(cfg: ScoreStepsConfig, scorer: Any) -> None:
    """Warn when ``--flag_below`` was moved from its default for a rule-based scorer, which flags by its full score."""
    from psgrpo.ps.scorers.flags import is_rule_based

    default = ScoreStepsConfig.__dataclass_fields__["flag_below"].default
    if cfg.flag_below != default and is_rule_based(scorer):
        logger.warning(
            "--flag_below %g is not used: step scorer %r is rule-based and flags a step that states an equation "
            "and scores below its full score; --flag_below applies to 'prm' and registered scorers",
            cfg.flag_below,
            cfg.step_scorer,
        )


def generator_groups(rows: list[_Row]) -> dict[str, list[_Row]]:
    """The rows by their ``generator`` field (in order of first appearance; ``"(none)"`` for rows
    without one), or all rows under ``"all"`` when no row has the field."""
    if not any("generator" in row.solution.extra for row in rows):
        return {"all": rows}
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(str(row.solution.extra.get("generator", "(none)")), []).append(row)
    return groups


def _metrics(rows: list[_Row], seconds: float) -> dict[str, Any]:
    """ProcessBench's metrics of the scored ``rows`` (``missed``: wrong solutions with no step
    flagged, the same count as ``never``), the steps scored and ``seconds_per_step``."""
    from psgrpo.eval.first_error import f1_interval, first_error_metrics

    scored = [row for row in rows if row.prediction is not None]
    steps = sum(len(row.solution.steps) for row in scored)
    metrics = first_error_metrics([r.solution.label for r in scored], [r.prediction for r in scored])  # type: ignore[misc]
    interval = f1_interval(metrics)
    return {
        **metrics,
        "f1_interval": None if interval is None else list(interval),
        "missed": metrics["never"],
        "steps_scored": steps,
        "seconds_per_step": seconds / steps if steps else None,
    }


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _rate_with_interval(value: float | None, interval: Sequence[float] | None) -> str:
    """``80.3 % (74.8–84.9)``: a share in percent and its interval, when there is one."""
    if interval is None:
        return _rate(value)
    return f"{_rate(value)} ({100 * interval[0]:.1f}–{100 * interval[1]:.1f})"


def _table_row(name: str, metrics: dict[str, Any]) -> list[str]:
    per_step = metrics["seconds_per_step"]
    return [
        name,
        f"{metrics['rows']} ({metrics['wrong_rows']} / {metrics['correct_rows']})",
        _rate(metrics["error_acc"]),
        _rate(metrics["correct_acc"]),
        _rate_with_interval(metrics["f1"], metrics.get("f1_interval")),
        _rate(metrics["flagged_any"]),
        f"{metrics['exact']} / {metrics['early']} / {metrics['late']} / {metrics['missed']}",
        str(metrics["false_blame"]),
        "n/a" if per_step is None else f"{per_step * 1e6:.0f} µs",
    ]


def markdown_table(summary: dict[str, Any], scorer_name: str) -> str:
    """The summary as a markdown table: ProcessBench's metrics (F1 with its 95 %
    interval, :func:`psgrpo.eval.first_error.f1_interval`), where the first flag falls on wrong
    solutions (exact / early / late / missed), correct solutions blamed, speed; then one row per
    generator when the rows name theirs."""
    header = [
        "scorer",
        "solutions (wrong / correct)",
        "error_acc",
        "correct_acc",
        "F1 (95 % interval)",
        "flagged_any",
        "exact / early / late / missed",
        "false blame",
        "per step",
    ]
    rows = [_table_row(scorer_name, summary)]
    rows += [_table_row(f"{scorer_name}, {name}", m) for name, m in summary.get("by_generator", {}).items()]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if (read := summary.get("scorer_read")) and read["counts"].get("steps"):
        counts = read["counts"]
        lines.append(
            f"\nSteps as {scorer_name!r} read them: {counts['steps']:,} steps, "
            f"{counts['no_equation']:,} with no equation ({_rate(counts['no_equation'] / counts['steps'])}), "
            f"{counts.get('garbled', 0):,} with a garbled one (numbers with the operators missing: 9 2 1 = 8), "
            f"{counts.get('unparsed_equations', 0):,} runs of arithmetic given up on."
        )
    if summary["solutions_without_gold"]:
        lines.append(
            f"\n{summary['solutions_without_gold']} of {summary['solutions_in_file']} solutions found no gold "
            f"problem: {summary['without_gold']}."
        )
    return "\n".join(lines) + "\n"


def prediction_record(row: _Row) -> dict[str, Any]:
    """One line of ``predictions.jsonl``: id, label, prediction, step scores and flags, gold found, other fields."""
    solution = row.solution
    return {
        "id": solution.id,
        "label": solution.label,
        "prediction": row.prediction,
        "scores": row.scores,
        "flags": row.flags,
        "gold_found": row.gold is not None,
        **solution.extra,
    }


def write_outputs(output_dir: str | Path, summary: dict[str, Any], rows: list[_Row]) -> dict[str, Path]:
    """Write ``summary.json`` and ``predictions.jsonl`` into ``output_dir``; return their paths."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in (SUMMARY_JSON, PREDICTIONS_JSONL)}
    paths[SUMMARY_JSON].write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    with paths[PREDICTIONS_JSONL].open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(prediction_record(row), ensure_ascii=False) + "\n")
    return paths


def score_steps(argv: Sequence[str]) -> dict[str, Any]:
    """Parse :class:`ScoreStepsConfig`, score, print the table, write the outputs; return the summary."""
    from psgrpo.config.parsing import ConfigParser
    from psgrpo.preflight import check_output_dir

    parser = ConfigParser(
        (ScoreStepsConfig,), prog="psgrpo score-steps", description=f"{DESCRIPTION} {FLAG_RULE}"
    )
    (cfg,) = parser.parse_args_and_config(list(argv))
    check_output_dir(cfg.output_dir)
    result = run_score_steps(cfg)
    summary = result["summary"]
    print(f"\n{cfg.data}: first wrong step predicted by step scorer {cfg.step_scorer!r}\n")
    print(markdown_table(summary, cfg.step_scorer))
    if cfg.output_dir:
        paths = write_outputs(cfg.output_dir, summary, result["rows"])
        logger.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    return summary
