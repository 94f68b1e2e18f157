"""Microseconds per step of the rule-based step scorers on real model-written GSM8K solutions.

    python benchmarks/scorers/bench_scorer_cost.py [--data FILE] [--gold FILE] [--repeats 3]

Scores every step of ``--data`` (ProcessBench-format JSONL, default the 976 correct solutions of
``../shared/data/gsm8k_step_labels/correct_dev.jsonl``) with ``arithmetic`` and ``reference`` (0/1
weights), joined to their gold rows in ``--gold`` (GSM8K JSONL, default ``../shared/data/gsm8k/test.jsonl``)
as ``psgrpo score-steps`` joins them. Prints a markdown table: µs per step on the first pass (each
row's gold solution parsed anew) and the best of the later passes (parsed once, as a group of
completions shares its row). One process, one thread; report ratios measured in one run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from psgrpo.data.step_labels import gold_by_problem, problem_key, read_labelled_solutions
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.reference import ReferenceVerifier

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def seconds_per_pass(scorer, steps: list[list[str]], columns: dict[str, list[str]]) -> float:
    """Wall seconds of one call of ``scorer`` on every completion's ``steps``."""
    start = time.perf_counter()
    scorer(["q"] * len(steps), steps, **columns)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> list[dict]:
    """Run the benchmark; returns one ``{scorer, first_us, cached_us}`` row per scorer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED / "gsm8k_step_labels" / "correct_dev.jsonl")
    parser.add_argument("--gold", type=Path, default=SHARED / "gsm8k" / "test.jsonl")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    gold = gold_by_problem(args.gold)
    rows = [s for s in read_labelled_solutions(args.data) if problem_key(s.problem) in gold]
    columns = {name: [gold[problem_key(s.problem)][name] for s in rows] for name in ("solution", "answer")}
    steps = [s.steps for s in rows]
    n = sum(len(s) for s in steps)
    results = []
    for name, make in (
        ("arithmetic", ArithmeticVerifier),
        ("reference 0/1", lambda: ReferenceVerifier(0.0, 1.0)),
    ):
        scorer = make()
        first = seconds_per_pass(scorer, steps, columns)
        later = min(seconds_per_pass(scorer, steps, columns) for _ in range(max(1, args.repeats)))
        results.append({"scorer": name, "first_us": first / n * 1e6, "cached_us": later / n * 1e6})
    print(f"{len(rows)} solutions with gold, {n} steps ({args.data})\n")
    print("| scorer | µs/step, first pass | µs/step, gold parsed once |\n|---|---|---|")
    for r in results:
        print(f"| {r['scorer']} | {r['first_us']:.0f} | {r['cached_us']:.0f} |")
    return results


if __name__ == "__main__":
    main()
