"""Check the arithmetic step verifier on GSM8K gold solutions and on corrupted copies of them.

    python benchmarks/bench_verifier.py [--gsm8k-dir DIR] [--split test] [--limit N] [--seed 0]

Each gold solution (the text before ``####``) is split into steps, one per line.

(a) Gold steps: of the steps where the verifier finds at least one equation, the fraction whose
    equations all hold (target >= 99%); steps without an equation are counted, and the first
    failing steps are listed for inspection.
(b) Corruption: in each solution one step with a calculator annotation whose equations all hold
    is drawn (seeded); the result ``R`` of one of its annotations ``<<expr=R>>`` and the visible
    copy right after ``>>`` are replaced by a different number (R ± k or 2R). Reported: the fraction
    of corrupted steps the verifier flags (some equation does not hold; target >= 95%).

Both checks run twice: on the text as written, and with the annotations removed (``48/2 =
<<48/2=24>>24`` becomes ``48/2 = 24``), which is how a model writes and tests the plain-text parser.

The data is GSM8K JSONL with ``question``/``answer`` (default ``$PSGRPO_GSM8K_DIR`` or
``<repo>/../shared/data/gsm8k``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from fractions import Fraction
from pathlib import Path

from psgrpo.data.gsm8k import solution_steps
from psgrpo.numbers import format_number, parse_number
from psgrpo.ps.scorers.arithmetic import extract_equations

REPO = Path(__file__).resolve().parent.parent
ANNOTATION_RE = re.compile(r"<<(?P<expr>[^<>=]*)=(?P<result>[^<>=]*)>>(?P<shown>-?\$?-?[\d,]*\.?\d+)?")
N_SHOWN_FAILURES = 10


def default_data_dir() -> Path:
    """``$PSGRPO_GSM8K_DIR`` if set, else the shared copy next to the repository."""
    return Path(os.environ.get("PSGRPO_GSM8K_DIR") or REPO.parent / "shared" / "data" / "gsm8k")


def load_solutions(data_dir: Path, split: str, limit: int | None) -> list[str]:
    """The ``answer`` field of each row of ``<data_dir>/<split>.jsonl``; exits with a message if absent."""
    path = data_dir / f"{split}.jsonl"
    if not path.is_file():
        sys.exit(f"GSM8K {split} split not found at {path}; pass --gsm8k-dir DIR or set PSGRPO_GSM8K_DIR")
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [row["answer"] for row in rows[:limit]]


def strip_annotations(step: str) -> str:
    """``step`` without calculator annotations, keeping the visible result (``= <<6*2=12>>12`` → ``= 12``)."""
    return ANNOTATION_RE.sub(lambda m: m["shown"] or "", step)


def all_hold(step: str) -> bool | None:
    """``None`` when the verifier finds no equation in ``step``, else whether all of them hold."""
    equations = extract_equations(step)
    return None if not equations else all(eq.holds for eq in equations)


def corrupt_value(value: Fraction, rng: random.Random) -> Fraction:
    """A different number: ``value ± k`` (k in 1..9) or ``2·value``."""
    choice = rng.choice(["plus", "minus", "double"])
    if choice == "double" and value != 0:
        return 2 * value
    k = rng.randint(1, 9)
    return value - k if choice == "minus" else value + k


def written_like(value: Fraction, template: str) -> str:
    """``value`` written with as many decimals as ``template`` (``12.50`` gives two), else canonically."""
    places = len(template.split(".")[1]) if "." in template else 0
    return f"{float(value):.{places}f}" if places else format_number(value)


def corrupt_step(step: str, rng: random.Random) -> str:
    """``step`` with the result of one random annotation (and its visible copy) changed."""
    match = rng.choice(list(ANNOTATION_RE.finditer(step)))
    result = parse_number(match["result"])
    assert result is not None, match.group()
    new = written_like(corrupt_value(result, rng), match["result"])
    replacement = f"<<{match['expr']}={new}>>"
    if match["shown"] is not None:
        shown_value = parse_number(match["shown"])
        replacement += new if shown_value == result else match["shown"]
    return step[: match.start()] + replacement + step[match.end() :]


def run(solutions: list[str], seed: int, plain: bool) -> dict:
    """Both checks over ``solutions`` (``plain``: annotations removed); counts, failing steps, rates."""
    rng = random.Random(seed)
    shown = strip_annotations if plain else (lambda step: step)
    n_steps = n_with_eq = n_hold = n_no_eq = 0
    failures: list[str] = []
    n_corrupted = n_detected = 0
    missed: list[str] = []
    for solution in solutions:
        steps = solution_steps(solution)
        candidates = []
        for step in steps:
            n_steps += 1
            verdict = all_hold(shown(step))
            if verdict is None:
                n_no_eq += 1
                continue
            n_with_eq += 1
            n_hold += verdict
            if not verdict and len(failures) < N_SHOWN_FAILURES:
                failures.append(shown(step))
            if verdict and ANNOTATION_RE.search(step):  # corrupt where GSM8K marks the equation
                candidates.append(step)
        if candidates:
            corrupted = shown(corrupt_step(rng.choice(candidates), rng))
            n_corrupted += 1
            detected = all_hold(corrupted) is False
            n_detected += detected
            if not detected and len(missed) < N_SHOWN_FAILURES:
                missed.append(corrupted)
    return {
        "text": "annotations removed" if plain else "as written",
        "solutions": len(solutions),
        "steps": n_steps,
        "steps_with_equation": n_with_eq,
        "steps_all_hold": n_hold,
        "steps_no_equation": n_no_eq,
        "gold_hold_rate": n_hold / max(1, n_with_eq),
        "failures": failures,
        "corrupted": n_corrupted,
        "detected": n_detected,
        "detection_rate": n_detected / max(1, n_corrupted),
        "missed": missed,
    }


def print_report(reports: list[dict], command: str, split: str, seconds: float) -> None:
    """A markdown table of the figures, the command, and the steps worth a look."""
    print(f"\n`{command}`  ({seconds:.1f} s)\n")
    print("| split | text | solutions | steps | steps with eq. | all hold | no eq. | corrupted | flagged |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in reports:
        print(
            f"| {split} | {r['text']} | {r['solutions']} | {r['steps']} | {r['steps_with_equation']} | "
            f"{r['steps_all_hold']} ({100 * r['gold_hold_rate']:.2f}%) | {r['steps_no_equation']} | "
            f"{r['corrupted']} | {r['detected']} ({100 * r['detection_rate']:.2f}%) |"
        )
    for r in reports:
        met = r["gold_hold_rate"] >= 0.99 and r["detection_rate"] >= 0.95
        print(f"\n## {r['text']}: targets (all hold >= 99%, flagged >= 95%) {'met' if met else 'MISSED'}")
        if r["failures"]:
            print(f"first {len(r['failures'])} gold steps with an equation that does not hold:")
            for step in r["failures"]:
                print(f"  - {step!r}: {describe_failures(step)}")
        if r["missed"]:
            print(f"first {len(r['missed'])} corrupted steps not flagged:")
            for step in r["missed"]:
                print(f"  - {step!r}")


def describe_failures(step: str) -> str:
    """``lhs = rhs (lhs value)`` for each equation of ``step`` that does not hold."""
    parts = []
    for eq in extract_equations(step):
        if not eq.holds:
            value = "÷0" if eq.lhs_value is None else format_number(eq.lhs_value)
            parts.append(f"{eq.lhs_text} = {eq.rhs_text} (lhs {value})")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gsm8k-dir", type=Path, default=None, help="folder with <split>.jsonl")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=None, help="first N solutions only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    solutions = load_solutions(args.gsm8k_dir or default_data_dir(), args.split, args.limit)
    start = time.perf_counter()
    reports = [run(solutions, args.seed, plain) for plain in (False, True)]
    seconds = time.perf_counter() - start
    command = "python benchmarks/bench_verifier.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print_report(reports, command.strip(), args.split, seconds)


if __name__ == "__main__":
    main()
