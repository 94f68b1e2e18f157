"""The rule-based scorers give the synthetic arith tasks exactly the step scores they gave before
they learnt to read GSM8K's natural text (issue 26: words between numbers, the gold path through
the completion's own dependencies, the no-op rule for ``× 1`` quantities).

Every learning result of the project was measured on arith and arith-hard with these scorers, so
reading more of GSM8K must not move a single arith step score. ``arith_scores_before.json`` was
written ONCE, with the scorers as they were at commit 7347245 (before those changes), by running
this module as a script (``python tests/ps/scorers/test_arith_scores_unchanged.py --write``); it
must never be regenerated to make this test pass. It holds, for each scorer configuration, the
scores of :func:`cases` (120 generated problems, 60 of ``arith`` and 60 of ``arith-hard``, each
as its gold solution and four corrupted copies: a calculation slip, a wrong operand whose
arithmetic holds, a solution that stops one step short, and one padded with a no-op and a
repeated step), coded one character per distinct score value.

Two later fixes of *judgement* (not of reading) move a few scores, each listed in :data:`FIXED`
with its cause, which the test checks case by case (the list cannot go stale: a listed case must
differ from the fixture and show the cause):

* a false equation is never on the gold path (issue 36): ``5 - 1 = 6`` used to claim the gold
  value 6 and count as on reference (0/1 weights: not flagged at all);
* a negative result is linked to the step that uses it (issue 36): ``0 - 1 = -1`` then ``-1 + 7
  = 6`` read 1, not -1, so the step giving -1 was "not necessary" to the arithmetic scorer.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import replace
from pathlib import Path

from psgrpo.data.arith import ArithProblem, ArithStep, problem_from_chain, split_problems, with_wrong_step
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.segmentation import get_segmenter

FIXTURE = Path(__file__).with_name("arith_scores_before.json")
PROBLEMS_PER_VARIANT = 60
SCORERS = {
    "arithmetic": lambda: ArithmeticVerifier(),
    "reference": lambda: ReferenceVerifier(),
    "reference_0_1": lambda: ReferenceVerifier(correct_weight=0.0, reference_weight=1.0),
    "reference_each_step": lambda: ReferenceVerifier(final_step_reaches_answer=False),
}


def _recompute(chain: list[ArithStep], start: int) -> list[ArithStep]:
    """``chain`` with every used step after ``start`` reading the value the previous one wrote."""
    value = chain[start].written
    for k in range(start + 1, len(chain)):
        if chain[k].used:
            chain[k] = replace(chain[k], a=value, stated=None)
            value = chain[k].result
    return chain


def corrupted(problem: ArithProblem, rng: random.Random) -> list[ArithProblem]:
    """Four corrupted copies of ``problem`` (fewer when one cannot be made): a calculation slip, a
    wrong operand (its arithmetic holds, later steps follow it), stopping one step short, padding."""
    used = [k for k, step in enumerate(problem.chain) if step.used]
    copies: list[ArithProblem] = []
    k = rng.choice(used)
    slip = with_wrong_step(problem, k, problem.chain[k].result + rng.choice([-2, -1, 1, 2]))
    copies += [slip] if slip is not None else []
    chain = list(problem.chain)
    step = chain[k]
    chain[k] = replace(step, b=step.b + 1 if step.op != "*" else 3)
    copies.append(problem_from_chain(problem.question, tuple(_recompute(chain, k))))
    if len(used) > 1:
        short = tuple(s for i, s in enumerate(problem.chain) if i != used[-1])
        copies.append(problem_from_chain(problem.question, short))
    first = problem.chain[0]
    padded = (first, ArithStep(first.written, "*", 1), first, *problem.chain[1:])
    copies.append(problem_from_chain(problem.question, padded))
    return copies


def cases() -> list[ArithProblem]:
    """The problems scored: per variant, each gold problem followed by its corrupted copies."""
    rng = random.Random(26)
    out: list[ArithProblem] = []
    for variant in ("arith", "arith-hard"):
        for problem in split_problems("test", PROBLEMS_PER_VARIANT, variant=variant):
            out += [problem, *corrupted(problem, rng)]
    return out


def score_all(gold: list[ArithProblem], written: list[ArithProblem]) -> dict[str, list[list[float]]]:
    """Every scorer's step scores of ``written[i]`` (segmented at ``Step k:`` markers as in
    training) against the row of ``gold[i]``."""
    segmenter = get_segmenter("markers")
    steps = [[p.solution[a:b] for a, b in segmenter(p.solution)] for p in written]
    columns = {"solution": [p.solution for p in gold], "answer": [str(p.answer) for p in gold]}
    prompts = [p.question for p in gold]
    return {name: make()(prompts, steps, **columns) for name, make in SCORERS.items()}


def _rows() -> tuple[list[ArithProblem], list[ArithProblem]]:
    """(gold row, written solution) pairs of :func:`cases`: a copy is scored against its gold problem."""
    gold: list[ArithProblem] = []
    for problem in cases():
        gold.append(problem if not gold or problem.question != gold[-1].question else gold[-1])
    return gold, cases()


def encode(scores: dict[str, list[list[float]]]) -> dict[str, object]:
    """Scores coded one character per distinct value (``alphabet`` maps characters to values)."""
    values = sorted({round(s, 9) for rows in scores.values() for row in rows for s in row})
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert len(values) <= len(letters)
    code = {v: letters[i] for i, v in enumerate(values)}
    return {
        "alphabet": {letters[i]: v for i, v in enumerate(values)},
        "scores": {
            name: " ".join("".join(code[round(s, 9)] for s in row) for row in rows)
            for name, rows in scores.items()
        },
    }


FALSE_ON_GOLD = "a false equation states a gold value"
NEGATIVE_USED = "a negative result is used by a later step"
_FALSE_ON_GOLD_CASES = {116, 121, 279, 294, 308, 348, 378, 403, 513}
FIXED: dict[str, dict[int, str]] = {
    "arithmetic": dict.fromkeys((161, 379, 533), NEGATIVE_USED),
    **{name: dict.fromkeys(_FALSE_ON_GOLD_CASES, FALSE_ON_GOLD) for name in SCORERS if name != "arithmetic"},
}
"""Per scorer, the cases whose scores a later fix of judgement moved, with the cause (module docstring)."""


def shows_cause(cause: str, gold: ArithProblem, written: ArithProblem) -> bool:
    """Whether ``written`` (scored against ``gold``) holds what ``cause`` names."""
    from psgrpo.ps.scorers.equations import extract_step
    from psgrpo.ps.scorers.reference import reference_values

    steps = [extract_step(line) for line in written.solution.splitlines()]
    if cause == FALSE_ON_GOLD:
        gold_values = reference_values(gold.solution, str(gold.answer))
        return any(not eq.holds and gold_values[eq.rhs_value] > 0 for step in steps for eq in step.equations)
    results = [value for step in steps for _, value in step.results]
    return any(value < 0 and value in {v for step in steps for _, v in step.uses} for value in results)


def test_every_arith_step_score_is_what_it_was_before_the_gsm8k_reading():
    gold, written = _rows()
    expected = json.loads(FIXTURE.read_text())
    assert expected["cases"] == len(written)
    alphabet = {letter: value for letter, value in expected["alphabet"].items()}
    for name, rows in score_all(gold, written).items():
        before = expected["scores"][name].split(" ")
        assert len(before) == len(rows)
        for i, (row, code) in enumerate(zip(rows, before, strict=True)):
            old = [alphabet[c] for c in code]
            if i in FIXED[name]:
                assert [round(s, 9) for s in row] != old, f"{name}: case {i} is listed in FIXED but unchanged"
                assert shows_cause(FIXED[name][i], gold[i], written[i]), (name, i, FIXED[name][i])
                continue
            assert [round(s, 9) for s in row] == old, (
                f"{name}: case {i} scores {row}, before {old}:\n{written[i].solution}\n"
                f"gold:\n{gold[i].solution}"
            )


def test_the_cases_hold_every_kind_of_corruption_and_wrong_steps():
    gold, written = _rows()
    assert len(written) > 500
    corrupt = [w for g, w in zip(gold, written, strict=True) if w is not g]
    assert sum(w.answer != g.answer for g, w in zip(gold, written, strict=True)) > 200
    assert any("* 1 =" in w.solution for w in corrupt)
    assert any(step.stated is not None for w in corrupt for step in w.chain)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    gold_rows, written_rows = _rows()
    data = {"cases": len(written_rows), **encode(score_all(gold_rows, written_rows))}
    FIXTURE.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {FIXTURE}: {len(written_rows)} cases, {FIXTURE.stat().st_size} bytes")
