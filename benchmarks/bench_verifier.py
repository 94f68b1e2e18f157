"""Check the arithmetic step verifier on GSM8K gold solutions and on corrupted copies of them,
or (``--scaling``) time it on completions of growing length.

    python benchmarks/bench_verifier.py [--gsm8k-dir DIR] [--split test] [--limit N] [--seed 0]
    python benchmarks/bench_verifier.py --scaling [--max-chars 32768] [--repeats 3]

Each gold solution (the text before ``####``) is split into steps, one per line.

(a) Gold steps: of the steps where the verifier finds at least one equation, the fraction whose
    equations all hold (target >= 99%); steps without an equation are counted, and the first
    failing steps are listed for inspection.
    The same steps go through ``score_steps`` with the solution's final answer: reported are the
    share of steps with equations on the dependency path to the answer (``necessary``) and the
    no-op steps (``12 * 1 = 12``).
(b) Corruption: in each solution one step with a calculator annotation whose equations all hold
    is drawn (seeded); the result ``R`` of one of its annotations ``<<expr=R>>`` and the visible
    copy right after ``>>`` are replaced by a different number (R ± k or 2R). Reported: the fraction
    of corrupted steps the verifier flags (some equation does not hold; target >= 95%).
(c) The reference verifier (``step_scorer: reference``): each gold solution scored against itself
    (the share of its steps with equations that reach a reference value, and the solutions that
    give no reference value), and a *logic* corruption of the step drawn in (b): the first operand
    of the annotation (and of its visible copy) changes by k and the result is recomputed, so the
    arithmetic holds but the value is not the gold one. Reported: the share of those steps the
    arithmetic verifier flags (none expected) and the share the reference verifier scores below 1.
    With annotations removed the figure for the arithmetic verifier is not 0: where the visible
    expression is written differently from the annotation's (``$3/2`` against ``3/2``) it stays
    unchanged and no longer equals the new result, a calculation error.

Both checks run twice: on the text as written, and with the annotations removed (``48/2 =
<<48/2=24>>24`` becomes ``48/2 = 24``), which is how a model writes and tests the plain-text parser.

The data is GSM8K JSONL with ``question``/``answer`` (default ``$PSGRPO_GSM8K_DIR`` or
``<repo>/../shared/data/gsm8k``).

``--scaling`` needs no data: it builds completions of 1k, 2k, … ``--max-chars`` characters of each
kind in :data:`KINDS` (honest steps, the same as one step, hostile arithmetic, random text),
splits them with the ``markers`` segmenter as training does, scores them with
``ArithmeticVerifier`` (best of ``--repeats``) and prints seconds, µs per character and the
ratio of the per-character cost at the longest length to that at the shortest (1.0 = linear),
then the milliseconds to score each hostile step of ``psgrpo.ps.credit_gaming.HOSTILE_STEPS`` (the
inputs that used to raise) and the runs it counted as unparsed.
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
from psgrpo.ps.credit_gaming import HOSTILE_STEPS
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, evaluate_text, extract_equations, score_steps
from psgrpo.ps.scorers.reference import ReferenceVerifier, on_reference, reference_values
from psgrpo.ps.segmentation import get_segmenter
from psgrpo.rewards.functions import extract_answer
from psgrpo.rewards.numbers import format_number, parse_number

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


FIRST_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


def logic_corrupt_step(step: str, rng: random.Random) -> str | None:
    """``step`` with one annotation's first operand changed by k (1..9) and its result recomputed, in the
    annotation and in a visible copy of the expression before it: true arithmetic, a value off the gold
    path. ``None`` when the expression has no number or the new one does not evaluate."""
    match = rng.choice(list(ANNOTATION_RE.finditer(step)))
    expr = match["expr"]
    number = FIRST_NUMBER_RE.search(expr)
    if number is None:
        return None
    new_expr = (
        expr[: number.start()] + str(parse_number(number.group()) + rng.randint(1, 9)) + expr[number.end() :]
    )
    value = evaluate_text(new_expr)
    if value is None:
        return None
    new = (
        written_like(value, match["result"])
        if value.denominator == 1 or "." in match["result"]
        else f"{float(value):.2f}"
    )
    shown = (
        new
        if match["shown"] is not None and parse_number(match["shown"]) == parse_number(match["result"])
        else (match["shown"] or "")
    )
    before = step[: match.start()].replace(expr, new_expr)
    return before + f"<<{new_expr}={new}>>{shown}" + step[match.end() :]


def run(solutions: list[str], seed: int, plain: bool) -> dict:
    """Both checks over ``solutions`` (``plain``: annotations removed); counts, failing steps, rates."""
    rng = random.Random(seed)
    shown = strip_annotations if plain else (lambda step: step)
    n_steps = n_with_eq = n_hold = n_no_eq = n_necessary = n_noop = 0
    failures: list[str] = []
    n_corrupted = n_detected = 0
    missed: list[str] = []
    n_on_reference = n_without_reference = n_logic = n_logic_arith = n_logic_reference = 0
    reference_verifier = ReferenceVerifier()
    for solution in solutions:
        steps = solution_steps(solution)
        verdicts = score_steps([shown(step) for step in steps], extract_answer(solution))
        reference = reference_values(solution, extract_answer(solution))
        n_on_reference += sum(on_reference(verdicts, reference))
        n_without_reference += not reference
        n_necessary += sum(v.necessary for v in verdicts)
        n_noop += sum(v.noop for v in verdicts)
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
            target = rng.choice(candidates)
            logic = logic_corrupt_step(target, rng)
            if logic is not None and logic != target:
                k = steps.index(target)
                changed = (
                    [shown(step) for step in steps[:k]]
                    + [shown(logic)]
                    + [shown(step) for step in steps[k + 1 :]]
                )
                n_logic += 1
                n_logic_arith += all_hold(shown(logic)) is False
                scores = reference_verifier(
                    [""], [changed], solution=[solution], answer=[extract_answer(solution)]
                )[0]
                n_logic_reference += scores[k] < 1.0
    return {
        "text": "annotations removed" if plain else "as written",
        "solutions": len(solutions),
        "steps": n_steps,
        "steps_with_equation": n_with_eq,
        "steps_all_hold": n_hold,
        "steps_no_equation": n_no_eq,
        "gold_hold_rate": n_hold / max(1, n_with_eq),
        "steps_necessary": n_necessary,
        "steps_noop": n_noop,
        "failures": failures,
        "corrupted": n_corrupted,
        "detected": n_detected,
        "detection_rate": n_detected / max(1, n_corrupted),
        "missed": missed,
        "steps_on_reference": n_on_reference,
        "solutions_without_reference": n_without_reference,
        "logic_corrupted": n_logic,
        "logic_flagged_arithmetic": n_logic_arith,
        "logic_flagged_reference": n_logic_reference,
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
    print("\n| split | text | steps with eq. | necessary (on the path to the answer) | no-op |")
    print("|---|---|---|---|---|")
    for r in reports:
        share = 100 * r["steps_necessary"] / max(1, r["steps_with_equation"])
        print(
            f"| {split} | {r['text']} | {r['steps_with_equation']} | {r['steps_necessary']} ({share:.2f}%) | "
            f"{r['steps_noop']} |"
        )
    print(
        "\n| split | text | steps with eq. | on reference (gold vs itself) | solutions without reference | "
        "logic-corrupted steps | flagged by arithmetic | flagged by reference |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in reports:
        n = max(1, r["logic_corrupted"])
        print(
            f"| {split} | {r['text']} | {r['steps_with_equation']} | {r['steps_on_reference']} "
            f"({100 * r['steps_on_reference'] / max(1, r['steps_with_equation']):.2f}%) | "
            f"{r['solutions_without_reference']} | {r['logic_corrupted']} | {r['logic_flagged_arithmetic']} "
            f"({100 * r['logic_flagged_arithmetic'] / n:.2f}%) | {r['logic_flagged_reference']} "
            f"({100 * r['logic_flagged_reference'] / n:.2f}%) |"
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
            value = "garbled" if eq.garbled else "÷0" if eq.lhs_value is None else format_number(eq.lhs_value)
            parts.append(f"{eq.lhs_text} = {eq.rhs_text} (lhs {value})")
    return "; ".join(parts)


def _honest(rng: random.Random, n_chars: int, markers: bool = True) -> str:
    lines, value, k = [], rng.randint(2, 20), 0
    while sum(map(len, lines)) < n_chars:
        k += 1
        b = rng.randint(1, 9)
        head = f"Step {k}: " if markers else ""
        lines.append(f"{head}{value} + {b} = {value + b}\n")
        value += b
    return "".join(lines)


def _hostile(rng: random.Random, n_chars: int) -> str:
    pieces = [
        "(" * 200 + "1" + ")" * 200 + " = 1 ",
        "1" + " / 7" * 150 + " = 0 ",
        " * ".join(["99999"] * 100) + " = 1 ",
        "9" * 500 + " + 1 = 2 ",
        "-" * 300 + "1 = 1 ",
        "<<" + "+".join(["1"] * 200) + "=200>>200 ",
        "1 = 1 = " * 40,
        "1 " * 120 + "+ 1 = 2 ",  # 120 places where an expression may start
        "(" * 30 + "2 + 3 = " + ")" * 30,
    ]
    text = "Step 1: "
    while len(text) < n_chars:
        text += rng.choice(pieces) + "so "  # a word ends the run of arithmetic: each piece is its own
    return text


def _random_text(rng: random.Random, n_chars: int) -> str:
    alphabet = "0123456789 +-*/=()<>.,$%xStep:\n" + "abcdefghij"
    return "".join(rng.choice(alphabet) for _ in range(n_chars))


KINDS = {
    "honest steps (Step k: a + b = c)": _honest,
    "the same in one step (no markers)": lambda rng, n: _honest(rng, n, markers=False),
    "hostile arithmetic": _hostile,
    "random characters": _random_text,
}
"""Completion families for ``--scaling``: each builds about ``n`` characters from a seeded RNG."""


def time_scaling(max_chars: int, repeats: int, seed: int) -> list[dict]:
    """Best-of-``repeats`` seconds to segment and score one completion of each kind and length."""
    verifier, segmenter = ArithmeticVerifier(), get_segmenter("markers")
    lengths = [n for n in (1024 * 2**k for k in range(12)) if n <= max_chars]
    rows = []
    for kind, build in KINDS.items():
        for n_chars in lengths:
            text = build(random.Random(seed), n_chars)[:n_chars]
            steps = [text[start:end] for start, end in segmenter(text)]
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                verifier(["Q"], [steps])
                best = min(best, time.perf_counter() - start)
            counts = verifier.pop_counts()
            rows.append(
                {"kind": kind, "chars": len(text), "steps": len(steps), "seconds": best,
                 "unparsed": counts["unparsed_equations"] // repeats}
            )  # fmt: skip
    return rows


def time_hostile(repeats: int) -> list[dict]:
    """Best-of-``repeats`` milliseconds to score each of :data:`HOSTILE_STEPS` (one step each)."""
    verifier = ArithmeticVerifier()
    rows = []
    for name, step in HOSTILE_STEPS.items():
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            verifier(["Q"], [[step]])
            best = min(best, time.perf_counter() - start)
        rows.append({"input": name, "chars": len(step), "ms": 1e3 * best,
                     "unparsed": verifier.pop_counts()["unparsed_equations"] // repeats})  # fmt: skip
    return rows


def print_scaling(rows: list[dict], command: str) -> None:
    """A markdown table: time per kind and length, and the per-character cost ratio longest/shortest."""
    print(f"\n`{command}`\n")
    print("| completion | chars | steps | seconds | µs / char | unparsed runs |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['kind']} | {row['chars']} | {row['steps']} | {row['seconds']:.4f} | "
            f"{1e6 * row['seconds'] / row['chars']:.1f} | {row['unparsed']} |"
        )
    print("\n| completion | µs/char at the longest ÷ at the shortest (1.0 = linear) |")
    print("|---|---:|")
    for kind in dict.fromkeys(row["kind"] for row in rows):
        mine = [row for row in rows if row["kind"] == kind]
        first, last = mine[0], mine[-1]
        ratio = (last["seconds"] / last["chars"]) / (first["seconds"] / first["chars"])
        print(f"| {kind} | {ratio:.2f} |")


def print_hostile(rows: list[dict]) -> None:
    """A markdown table: milliseconds and unparsed runs per hostile step."""
    print("\n| hostile step | chars | ms (best) | unparsed runs |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row['input']} | {row['chars']} | {row['ms']:.2f} | {row['unparsed']} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gsm8k-dir", type=Path, default=None, help="folder with <split>.jsonl")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=None, help="first N solutions only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scaling", action="store_true", help="time the verifier vs completion length instead"
    )
    parser.add_argument("--max-chars", type=int, default=32768, help="--scaling: longest completion (chars)")
    parser.add_argument("--repeats", type=int, default=3, help="--scaling: timings per point (best is kept)")
    args = parser.parse_args(argv)
    command = "python benchmarks/bench_verifier.py " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.scaling:
        print_scaling(time_scaling(args.max_chars, args.repeats, args.seed), command.strip())
        print_hostile(time_hostile(args.repeats))
        return
    solutions = load_solutions(args.gsm8k_dir or default_data_dir(), args.split, args.limit)
    start = time.perf_counter()
    reports = [run(solutions, args.seed, plain) for plain in (False, True)]
    seconds = time.perf_counter() - start
    print_report(reports, command.strip(), args.split, seconds)


if __name__ == "__main__":
    main()
