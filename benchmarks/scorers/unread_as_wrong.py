"""What if a step the verifier cannot read counted as wrong? ProcessBench's metrics, re-read from
``psgrpo score-steps``' predictions.

``neutral_score`` 0 (docs/scorers.md) makes a step with no readable equation score 0, as a wrong
step does: the choice that keeps ``ps``'s arith-hard lead to 240 steps, where every gold step is an
equation. ``score-steps`` does not show what it would do to real text, because a rule-based scorer
flags only steps that state an equation and score below full: an unread step is never flagged,
whatever it scores. This script re-reads a run's ``predictions.jsonl`` under three rules:

* ``as scored``: the flags ``score-steps`` wrote;
* ``numbers, no equation``: also flag every unflagged step that scored ``--neutral`` (unread) and writes
  a number, the candidate rule for GSM8K (prose steps stay neutral);
* ``every unread step``: also flag every unflagged step that scored ``--neutral``; what ``neutral_score``
  0 does to the training signal.

Run ``score-steps`` with the neutral score at its default 0.5 so that unread steps can be told apart
(under 0/1 weights a read step scores 0 or 1). Usage::

    cat ../shared/data/gsm8k_step_labels/wrong_dev.jsonl ../shared/data/gsm8k_step_labels/correct_dev.jsonl > /tmp/dev_all.jsonl
    psgrpo score-steps --data /tmp/dev_all.jsonl --gold ../shared/data/gsm8k/test.jsonl --step_scorer reference \\
        --step_scorer_kwargs '{"correct_weight": 0.0, "reference_weight": 1.0}' --output_dir /tmp/ss_ref
    python benchmarks/scorers/unread_as_wrong.py --data /tmp/dev_all.jsonl --predictions /tmp/ss_ref/predictions.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psgrpo.data.step_labels import read_labelled_solutions
from psgrpo.data.validation import DatasetValidationError
from psgrpo.eval.first_error import f1_interval, first_error_metrics
from psgrpo.ps.scorers.equations import plain_step
from psgrpo.ps.scorers.expressions import tokenize
from psgrpo.ps.scorers.flags import first_flag

RULES = ("as scored", "numbers, no equation", "every unread step")


def writes_a_number(step: str) -> bool:
    """Whether the step holds a number as the equation reader tokenizes it (``$15``, ``2.5``, ``7%``)."""
    return any(token.kind == "num" for token in tokenize(plain_step(step)))


def flags_under(
    rule: str, steps: Sequence[str], scores: Sequence[float], flags: Sequence[bool], neutral: float
) -> list[bool]:
    """``flags`` with the unread steps ``rule`` counts as wrong flagged too (see the module docstring)."""
    out = list(flags)
    for i, (step, score) in enumerate(zip(steps, scores, strict=True)):
        unread = not out[i] and score == neutral
        if unread and (
            rule == "every unread step" or (rule == "numbers, no equation" and writes_a_number(step))
        ):
            out[i] = True
    return out


def _json_lines(path: Path, needs: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line of ``score-steps``' predictions; one line naming the place
    for bad JSON or a missing field."""
    out = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise SystemExit(f"{path}:{n}: not a JSON object ({err.msg})") from None
        missing = [key for key in needs if not isinstance(row, dict) or key not in row]
        if missing:
            raise SystemExit(
                f"{path}:{n}: expected the fields {', '.join(needs)}; missing {', '.join(missing)}"
            )
        out.append((n, row))
    return out


def read_rows(data: Path, predictions: Path) -> list[tuple[list[str], dict[str, Any]]]:
    """Each scored prediction with its solution's steps (joined on ``id``; solutions without a gold are left out)."""
    try:  # the reader score-steps read it with: the same checks, the same ids
        steps = {solution.id: solution.steps for solution in read_labelled_solutions(data)}
    except DatasetValidationError as err:
        raise SystemExit(str(err)) from None
    rows = []
    for n, prediction in _json_lines(predictions, ("id", "label", "scores", "flags")):
        if prediction["flags"] is None:  # no gold problem found: score-steps skipped it
            continue
        if prediction["id"] not in steps:
            raise SystemExit(
                f"{predictions}:{n}: id {prediction['id']!r} is not in {data}; pass the file score-steps read"
            )
        if len(prediction["scores"]) != len(steps[prediction["id"]]):
            raise SystemExit(
                f"{predictions}:{n}: {len(prediction['scores'])} step scores for a solution of "
                f"{len(steps[prediction['id']])} steps in {data}; pass the file score-steps read"
            )
        rows.append((steps[prediction["id"]], prediction))
    return rows


def table(rows: Sequence[tuple[list[str], dict[str, Any]]], neutral: float) -> list[dict[str, Any]]:
    """One row of ProcessBench's metrics (and the F1's 95 % interval) per rule of :data:`RULES`."""
    labels = [prediction["label"] for _, prediction in rows]
    out = []
    for rule in RULES:
        predicted = [
            first_flag(flags_under(rule, steps, p["scores"], p["flags"], neutral)) for steps, p in rows
        ]
        metrics = first_error_metrics(labels, predicted)
        out.append({"rule": rule, **metrics, "f1_interval": f1_interval(metrics)})
    return out


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| rule | F1 (95 % interval) | first wrong step exact | exact / early / late / missed | correct unflagged |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        low, high = r["f1_interval"]
        lines.append(
            f"| {r['rule']} | {r['f1']:.3f} ({low:.3f}–{high:.3f}) | {r['error_acc']:.1%} | "
            f"{r['exact']} / {r['early']} / {r['late']} / {r['never']} | {r['correct_acc']:.1%} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the ProcessBench JSONL score-steps read")
    parser.add_argument("--predictions", type=Path, required=True, help="score-steps' predictions.jsonl")
    parser.add_argument(
        "--neutral", type=float, default=0.5, help="the score of an unread step in that run (default 0.5)"
    )
    args = parser.parse_args(argv)
    for name in ("data", "predictions"):
        if not getattr(args, name).is_file():
            parser.error(f"--{name} {getattr(args, name)}: no such file")
    results = table(read_rows(args.data, args.predictions), args.neutral)
    if any(r["f1"] is None for r in results):
        parser.error("the predictions need both wrong (label ≥ 0) and correct (label -1) solutions for F1")
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
