"""Where wrong answers go wrong, against the gold worked solution: does a policy *stop short*?

    psgrpo eval --dataset arith-hard --model_name_or_path RUN_DIR --max_eval_examples 1000 \\
        --eval_batch_size 250 --eval_max_new_tokens 256 --output_dir outputs/eval-NAME
    python experiments/error_anatomy.py --dataset arith-hard NAME=outputs/eval-NAME/samples.jsonl ...

``psgrpo eval`` splits wrong answers into calculation errors (a written equation fails) and logic
errors (every equation holds). This reads its ``samples.jsonl`` beside the dataset's gold worked
solutions and splits the logic errors further, with the reference verifier's own functions
(:func:`psgrpo.ps.scorers.reference.reference_values`, :func:`~psgrpo.ps.scorers.reference.on_reference`):

* ``gold path``: the steps of the gold solution on its dependency path to the answer (an unused
  distractor is not one); ``steps``: the completion's steps that state equations;
* ``stops short``: a wrong answer whose every step with equations is right and reaches a distinct
  gold-path value, but which ends before the gold answer: a correct prefix of the gold solution
  with the rest left out (the failure a per-step process signal cannot see, docs/learning.md);
* ``fewer steps``: a logic error with fewer steps than the gold path (left-out operations
  anywhere, a stop short included); ``Δ steps``: mean steps minus gold-path steps over logic errors.

Each completion's prompt is checked against the dataset row it names, so a ``samples.jsonl`` of
another dataset or split is an error, not a silent wrong table.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psgrpo.data.tasks import TaskConfig, load_task_split
from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.ps.scorers.dependencies import answer_value
from psgrpo.ps.scorers.reference import on_reference, reference_values, stops_short
from psgrpo.ps.segmentation import get_segmenter
from psgrpo.rewards.functions import extract_answer


@dataclass(frozen=True)
class Anatomy:
    """One completion against its row's gold solution."""

    error_type: str
    steps: int
    gold_path: int
    stops_short: bool
    written: int = 0  # steps that write a number outside the answer tag
    unread: int = 0  # of those, steps that state no equation the verifier reads


_DIGIT_RE = re.compile(r"\d")
_ANSWER_TAG_RE = re.compile(r"<answer>.*?</answer>", re.DOTALL)


def anatomy(completion: str, solution: str, answer: str, error_type: str) -> Anatomy:
    """Compare one graded completion (``error_type`` from ``psgrpo eval``) with its gold solution."""
    segmenter = get_segmenter("markers")
    steps = [completion[start:end] for start, end in segmenter(completion)]
    # every step, as the verifier sees them: a verdict's depends_on indexes this list, so steps without
    # equations are left out only after the path is traced (dropping them first misplaces the links)
    verdicts = score_steps(steps, extract_answer(completion))
    reference = reference_values(solution, answer)
    final = answer_value(answer)
    flags = on_reference(verdicts, reference)
    with_equations = [j for j, v in enumerate(verdicts) if v.correct is not None]
    prefix = (  # every step right and on the gold path, until the final-answer rule clears the last
        error_type != "correct"
        and bool(reference)
        and final is not None
        and all(verdicts[j].correct == 1.0 for j in with_equations)
        and all(flags[j] for j in with_equations)
        and stops_short(verdicts, flags, final)
    )
    written = [j for j, step in enumerate(steps) if _DIGIT_RE.search(_ANSWER_TAG_RE.sub("", step))]
    unread = sum(verdicts[j].correct is None for j in written)
    return Anatomy(error_type, len(with_equations), sum(reference.values()), prefix, len(written), unread)


def read_samples(path: Path, rows: Any) -> list[Anatomy]:
    """:func:`anatomy` of every record of a ``psgrpo eval`` ``samples.jsonl`` (``rows``: the dataset split)."""
    out = []
    with Path(path).open() as f:
        for line_no, line in enumerate(f, start=1):
            record = json.loads(line)
            index = record["prompt_index"]
            if index >= len(rows) or rows[index]["prompt"] != record["prompt"]:
                raise ValueError(
                    f"{path} line {line_no}: prompt {index} is not row {index} of the dataset given; "
                    "pass the --dataset and --split the samples were generated from"
                )
            row = rows[index]
            out.append(
                anatomy(record["completion"], row["solution"], str(row["answer"]), record["error_type"])
            )
    return out


def summary(items: Sequence[Anatomy]) -> dict[str, float]:
    """Shares of all completions (``accuracy``, ``logic``, ``stops_short``, ``fewer_steps``), ``delta_steps``,
    and ``unread_steps``: the share of steps writing a number that state no equation the verifier reads
    (a drifting policy's ``Step 4: 14 * 2 8 38`` under a verifier that does not read that form)."""
    n = len(items)
    logic = [a for a in items if a.error_type == "logic"]
    return {
        "completions": float(n),
        "accuracy": sum(a.error_type == "correct" for a in items) / n,
        "logic": len(logic) / n,
        "stops_short": sum(a.stops_short for a in items) / n,
        "fewer_steps": sum(a.steps < a.gold_path for a in logic) / n,
        "delta_steps": statistics.fmean(a.steps - a.gold_path for a in logic) if logic else float("nan"),
        "unread_steps": sum(a.unread for a in items) / max(1, sum(a.written for a in items)),
    }


def markdown(summaries: dict[str, dict[str, float]]) -> str:
    lines = [
        "| run | completions | accuracy | logic errors | stops short | logic, fewer steps than the gold path | "
        "Δ steps (logic) | steps with no equation read |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, s in summaries.items():
        lines.append(
            f"| {label} | {s['completions']:.0f} | {s['accuracy']:.3f} | {s['logic']:.3f} | "
            f"{s['stops_short']:.3f} | {s['fewer_steps']:.3f} | {s['delta_steps']:+.2f} | {s['unread_steps']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "samples",
        nargs="+",
        help="LABEL=PATH[,PATH...]: psgrpo eval samples.jsonl files, pooled under LABEL (e.g. seeds)",
    )
    parser.add_argument("--dataset", default="arith-hard", help="the dataset the samples came from")
    parser.add_argument("--split", default="test", help="its split (psgrpo eval's --eval_split)")
    args = parser.parse_args(argv)
    pairs = [item.split("=", 1) for item in args.samples]
    if any(len(pair) != 2 or not pair[0] for pair in pairs):
        parser.error("each samples argument is LABEL=PATH, e.g. grpo-seed0=outputs/eval-grpo/samples.jsonl")
    labels = [label for label, _ in pairs]
    if twice := next((label for label in labels if labels.count(label) > 1), None):  # else one overwrites
        parser.error(f"label {twice!r} given twice: pool its files under one label, {twice}=PATH,PATH")
    paths = [Path(path) for _, joined in pairs for path in joined.split(",")]
    for path in paths:
        if not path.is_file():
            parser.error(f"{path}: no such file (psgrpo eval --output_dir DIR writes DIR/samples.jsonl)")
    # as many rows as the evaluation used (psgrpo eval's --max_eval_examples), not the split's default size
    last = max(json.loads(line)["prompt_index"] for path in paths for line in path.open() if line.strip())
    rows = load_task_split(TaskConfig(dataset=args.dataset), args.split, limit=last + 1)
    summaries = {
        label: summary([a for path in paths.split(",") for a in read_samples(Path(path), rows)])
        for label, paths in pairs
    }
    print(markdown(summaries))
    return summaries


if __name__ == "__main__":
    main()
