"""A labelled GSM8K step set built from the gold solutions: valid rewrites and errors with a known first wrong step.

    python benchmarks/scorers/make_gsm8k_step_set.py --split test --n 250 --seed 0 \\
        --output benchmarks/scorers/data/gsm8k_step_set_sample.jsonl

Writes JSONL in ProcessBench's format, one solution a line: ``{"id", "problem", "steps",
"label", "final_answer_correct", "kind", "style", "source_row"}``; ``label`` is the 0-based index of the
first wrong step, -1 when every step is right. Steps are the gold lines with the calculator
annotations removed and the final answer given as ``The answer is n.`` (a last line, or folded
into the last step) or only as the last step's last number. Each row is one documented transformation (``kind``) of a gold solution, built
on its parsed calculations (:mod:`gsm8k_solutions`) with exact ``Fraction`` arithmetic:

valid (label -1; every equation holds, the answer is gold's):
    ``valid_gold`` the gold solution itself; ``valid_units`` unit words and ``$`` on the numbers of
    the equations (from the question or the step that computed them); ``valid_split`` one
    calculation in two steps (``3 + 4 = 7`` then ``16 - 7 = 9``); ``valid_merge`` two steps in one
    (``(16 - 3 - 4) * 2 = 18``); ``valid_reorder`` two independent steps swapped; ``valid_route``
    another route to the same value (``a*(b+c)`` ↔ ``a*b + a*c``, ``a - b - c`` → ``a - (b + c)``,
    operands swapped); ``valid_restate`` a step restating a value (``So we have 9 duck eggs.``);
    ``valid_times_one`` a question quantity times or over 1 (``16 eggs x 1 = 16 eggs``);
    ``valid_operators`` ``x`` / ``×`` / ``÷`` for ``*`` / ``/``; ``valid_percent`` ``20% of 80 = 16``;
    ``valid_words`` ``half of 30 is 15``, ``twice 9 = 18``.

errors (label = first wrong step; later steps carry the wrong value consistently):
    ``error_slip`` a calculation's result is off (``16 - 3 - 4 = 8``); ``error_operand`` a question
    number replaced by another of the question's, arithmetic right; ``error_operation`` ``+``↔``-``
    or ``*``↔``/``, arithmetic right; ``error_skipped`` a step left out, so the step that used its
    result uses its input instead (label: that later step); ``error_stop_short`` the last steps
    left out and an earlier value given as the answer (label: the step that gives the answer: the
    answer line, or the last step when the answer is folded into it or is its last number; the
    step where the solution fails, as ProcessBench labels a wrong conclusion).

style (``style``, a list): half of the rows of the other kinds also get ``units``, a quarter
``operators`` and a quarter ``words`` (``--style_share``), so that errors, too, stand in text
with units, as models write them.

The final answer is given as a last line, folded into the last step, or not at all (the last
step's last number is the answer, as in GSM8K's model-written solutions): :data:`ANSWER_FORMS`.

A step is *wrong* when one of its calculations states a value other than the gold route's (a
false equation, or a right equation on a wrong value), when its text carries a wrong value, or
when it gives a final answer other than gold's. ``final_answer_correct`` is recomputed. Every row
is checked before it is written: valid rows' equations hold and reach gold's answer; an error
row's steps before ``label`` hold and carry gold's values, and the step at ``label`` is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

try:
    from scorers import gsm8k_solutions as gs
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_solutions as gs  # type: ignore[no-redef]
try:
    from scorers import gsm8k_rewrites as rw
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_rewrites as rw  # type: ignore[no-redef]

Draft, KINDS, VALID, ERRORS = rw.Draft, rw.KINDS, rw.VALID, rw.ERRORS


class CheckFailed(AssertionError):
    """A built row that breaks its own label's definition (a bug in a rewrite, never written)."""


STYLES: dict[str, rw.Rewrite] = {
    "units": rw.valid_units,
    "operators": rw.valid_operators,
    "words": rw.valid_words,
}
"""Rewrites that also dress other kinds (``style``): ``units`` with probability ``style_share``,
``operators`` and ``words`` with half that each; never on ``valid_gold`` nor on the kind itself."""


def build_row(
    gold: gs.Gold, kind: str, rng: random.Random, split: str = "test", style_share: float = 0.0
) -> dict:
    """One row of ``kind`` from ``gold``, first dressed in the :data:`STYLES` drawn (listed in the
    row's ``style``); raises :class:`gsm8k_solutions.Reject` when ``kind`` does not apply."""
    draft = Draft.of(gold, rng)
    style = []
    for name, share in (("units", style_share), ("operators", style_share / 2), ("words", style_share / 2)):
        if kind not in ("valid_gold", f"valid_{name}") and rng.random() < share:
            try:
                STYLES[name](draft, rng)
                style.append(name)
            except gs.Reject:
                pass
    KINDS[kind](draft, rng)
    return {**finish(draft, kind, split), "style": style}


def finish(draft: Draft, kind: str, split: str = "test") -> dict:
    """The row of a rewritten ``draft``: label = first wrong step, checked against the kind's class
    (:class:`CheckFailed` when a valid rewrite has a wrong or false step, or an error row has none
    or a false equation before it)."""
    gold, steps = draft.gold, draft.steps()
    wrong = [i for i, (_, _, w) in enumerate(steps) if w]
    label = wrong[0] if wrong else -1
    if kind in VALID:
        if label != -1 or not all(h for _, h, _ in steps) or draft.final != gold.final:
            raise CheckFailed(f"{kind} on row {gold.row}: a valid rewrite with a wrong step")
    elif label == -1 or not all(h for _, h, _ in steps[:label]):
        raise CheckFailed(f"{kind} on row {gold.row}: no wrong step, or a false equation before it")
    return {
        "id": f"gsm8k-{split}-{gold.row}-{kind}",
        "problem": gold.question,
        "steps": [text for text, _, _ in steps],
        "label": label,
        "final_answer_correct": draft.final == gold.final,
        "kind": kind,
        "source_row": gold.row,
    }


# --------------------------------------------------------------------------- the set


def default_gsm8k_dir() -> Path:
    """``$PSGRPO_GSM8K_DIR``, else ``../shared/data/gsm8k`` beside the repository."""
    env = os.environ.get("PSGRPO_GSM8K_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data" / "gsm8k"


def read_gsm8k(path: Path) -> list[dict]:
    """GSM8K rows (``question``, ``answer``) of a JSONL file; a bad line is an error naming it."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not JSON ({e.msg})") from None
            if not isinstance(row, dict) or not all(
                isinstance(row.get(k), str) for k in ("question", "answer")
            ):
                raise ValueError(
                    f"{path}:{lineno}: expected an object with string fields 'question' and 'answer'"
                )
            rows.append(row)
    return rows


@dataclass
class Summary:
    """What a build did: rows per kind, problems skipped per reason, rewrites that did not apply per kind."""

    rows: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    not_applicable: Counter[str] = field(default_factory=Counter)
    problems: int = 0


def build_set(rows: Sequence[dict], n: int, seed: int, per_problem: int = 2, split: str = "test",
              kinds: Sequence[str] | None = None, style_share: float = 0.5) -> tuple[list[dict], Summary]:  # fmt: skip
    """Rows for the first ``n`` usable problems in a ``seed``-shuffled order: ``per_problem`` rows each,
    alternating valid and error rewrites, each time the kind of that class with fewest rows so far
    that applies (ties broken by the seed), so the kinds stay balanced."""
    rng = random.Random(seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    chosen = list(kinds or KINDS)
    classes = [[k for k in chosen if k in VALID], [k for k in chosen if k in ERRORS]]
    classes = [c for c in classes if c]
    out: list[dict] = []
    summary = Summary()
    for index in order:
        if summary.problems >= n:
            break
        try:
            gold = gs.parse_gold(index, rows[index]["question"], rows[index]["answer"])
        except gs.Unusable as e:
            summary.skipped[str(e)] += 1
            continue
        summary.problems += 1
        used: set[str] = set()
        for k in range(per_problem):
            pool = [kind for kind in classes[k % len(classes)] if kind not in used]
            pool.sort(key=lambda kind: (summary.rows[kind], rng.random()))
            for kind in pool:
                try:
                    row = build_row(gold, kind, random.Random(f"{seed}-{index}-{kind}"), split, style_share)
                except gs.Reject:
                    summary.not_applicable[kind] += 1
                    continue
                out.append(row)
                used.add(kind)
                summary.rows[kind] += 1
                break
    return out, summary


def print_summary(summary: Summary, path: Path, file: TextIO | None = None) -> None:
    """The summary as a short markdown report (on stdout unless ``file``)."""
    file = file or sys.stdout
    total = sum(summary.rows.values())
    valid = sum(v for k, v in summary.rows.items() if k in VALID)
    print(f"wrote {total} rows ({valid} valid, {total - valid} with an error) from {summary.problems} problems "
          f"to {path}", file=file)  # fmt: skip
    print("\n| kind | rows | did not apply |\n|---|---|---|", file=file)
    for kind in KINDS:
        print(f"| {kind} | {summary.rows[kind]} | {summary.not_applicable[kind]} |", file=file)
    skipped = ", ".join(f"{r}: {c}" for r, c in summary.skipped.most_common()) or "none"
    print(f"\ngold solutions skipped ({sum(summary.skipped.values())}): {skipped}", file=file)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--gsm8k_dir",
        type=Path,
        default=None,
        help="folder with GSM8K {train,test}.jsonl (default: $PSGRPO_GSM8K_DIR or ../shared/data/gsm8k)",
    )
    parser.add_argument("--split", choices=["train", "test"], default="test")
    parser.add_argument("--n", type=int, default=300, help="problems to use (each gives --per_problem rows)")
    parser.add_argument(
        "--per_problem",
        type=int,
        default=2,
        help="rows per problem, alternating a valid rewrite and an error (default 2)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=None, help="only these kinds")
    parser.add_argument(
        "--style_share",
        type=float,
        default=0.5,
        help="share of rows of other kinds also given units (half as many: x/×/÷ operators)",
    )
    parser.add_argument("--output", type=Path, required=True, help="JSONL file to write")
    return parser.parse_args(argv)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.n < 1 or args.per_problem < 1:
        raise SystemExit("psgrpo: error: --n and --per_problem must be at least 1")
    if not 0 <= args.style_share <= 1:
        raise SystemExit(f"psgrpo: error: --style_share must be in [0, 1], got {args.style_share}")
    source = (args.gsm8k_dir or default_gsm8k_dir()) / f"{args.split}.jsonl"
    if not source.is_file():
        raise SystemExit(f"psgrpo: error: --gsm8k_dir: no {source} (set --gsm8k_dir or $PSGRPO_GSM8K_DIR)")
    try:
        rows = read_gsm8k(source)
    except ValueError as e:
        raise SystemExit(f"psgrpo: error: {e}") from None
    out, summary = build_set(
        rows, args.n, args.seed, args.per_problem, args.split, args.kinds, args.style_share
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")
    tmp.replace(args.output)
    print_summary(summary, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
