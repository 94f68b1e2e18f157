"""Tests for psgrpo.data.arith_probe: one-wrong-step copies and early-answer SFT rows."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.data.arith import ARITH_VARIANTS, ArithStep, generate_problem, problem_from_chain, split_problems
from psgrpo.data.arith_probe import (
    PROBE_CLOSE,
    PROBE_OPEN,
    early_answer_row,
    probe_sft_rows,
    random_wrong_step,
    reasoning_prefix,
)
from psgrpo.data.prompts import format_prompt
from psgrpo.ps.scorers.arithmetic import score_steps

GOLD = problem_from_chain("Mia has 7 pens.", (ArithStep(7, "+", 5), ArithStep(12, "-", 3)))


def test_reasoning_prefix_ends_at_a_step_end():
    assert reasoning_prefix(GOLD, 0) == ""
    assert reasoning_prefix(GOLD, 1) == "<reasoning>\nStep 1: 7 + 5 = 12\n"
    assert GOLD.solution.startswith(reasoning_prefix(GOLD, 2) + "</reasoning>\n<answer>")
    with pytest.raises(ValueError, match=r"k=3 is outside \[0, 2\]"):
        reasoning_prefix(GOLD, 3)


def test_early_answer_row_is_the_probe_in_the_sft_format():
    row = early_answer_row("Question: q\n", GOLD, 1)
    assert row == {
        "prompt": "Question: q\n<reasoning>\nStep 1: 7 + 5 = 12\n" + PROBE_OPEN,
        "completion": "9" + PROBE_CLOSE,
    }
    # the trainer's probe after step 1 is exactly this prompt + completion
    assert (
        row["prompt"] + row["completion"]
        == "Question: q\n" + reasoning_prefix(GOLD, 1) + PROBE_OPEN + "9</answer>"
    )


@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(sorted(ARITH_VARIANTS)))
@settings(max_examples=100, deadline=None)
def test_random_wrong_step_has_exactly_one_wrong_step(seed, variant):
    rng = random.Random(seed)
    spec = ARITH_VARIANTS[variant]
    gold = generate_problem(rng, rng.randint(spec.min_steps, spec.max_steps), spec)
    found = random_wrong_step(gold, rng)
    assert found is not None  # ±1..3 almost always fits in 20 tries
    index, wrong = found
    assert gold.chain[index].used
    assert 1 <= abs(wrong.chain[index].written - gold.chain[index].result) <= 3
    wrong_steps = [v.correct < 1 for v in score_steps(wrong.steps, str(wrong.answer))]
    assert wrong_steps == [i == index for i in range(len(wrong.steps))]


def test_random_wrong_step_restricted_steps_and_errors():
    rng = random.Random(0)
    assert all(random_wrong_step(GOLD, rng, steps=[1])[0] == 1 for _ in range(10))
    assert random_wrong_step(GOLD, rng, steps=[]) is None
    with pytest.raises(ValueError, match="max_delta must be at least 1"):
        random_wrong_step(GOLD, rng, max_delta=0)


def test_probe_sft_rows_mix_full_and_early_rows():
    problems = split_problems("train", n=400)
    prompts = [format_prompt(p.question, "compact") for p in problems]
    rows = probe_sft_rows(prompts, problems, random.Random(0), early_answer_prob=0.3, wrong_prob=0.5)
    full = [r for r, p in zip(rows, problems, strict=True) if r["completion"] == p.solution]
    early = [r for r in rows if r["prompt"].endswith(PROBE_OPEN)]
    assert len(full) + len(early) == 400 and 80 <= len(early) <= 160
    on_track = wrong = 0
    for row, prompt, problem in zip(rows, prompts, problems, strict=True):
        if row in full:
            assert row["prompt"] == prompt
            continue
        prefix = row["prompt"][len(prompt) : -len(PROBE_OPEN)]
        k = prefix.count("\n") - 1 if prefix else 0
        assert 0 <= k < len(problem.steps)
        if prefix == reasoning_prefix(problem, k):
            on_track += 1
            assert row["completion"] == f"{problem.answer}</answer>"
        else:  # one wrong step in the prefix, answered with where that chain leads
            wrong += 1
            lines = prefix.strip().split("\n")[1:]
            verdicts = score_steps(lines, None)
            assert sum(v.correct < 1 for v in verdicts) == 1
            assert row["completion"] != f"{problem.answer}</answer>"
    assert on_track and wrong and wrong < on_track  # only k >= 1 rows can hold a wrong step


def test_probe_sft_rows_are_deterministic_and_validated():
    problems = split_problems("train", n=20)
    prompts = [p.question for p in problems]
    first = probe_sft_rows(prompts, problems, random.Random(3), 0.5, 0.5)
    assert first == probe_sft_rows(prompts, problems, random.Random(3), 0.5, 0.5)
    assert probe_sft_rows(prompts, problems, random.Random(3), 0.0) == [
        {"prompt": q, "completion": p.solution} for q, p in zip(prompts, problems, strict=True)
    ]
    with pytest.raises(ValueError, match=r"early_answer_prob must be a probability in \[0, 1\], got 1.5"):
        probe_sft_rows(prompts, problems, random.Random(0), 1.5)
    with pytest.raises(ValueError, match="early_answer_wrong_prob must be a probability"):
        probe_sft_rows(prompts, problems, random.Random(0), 0.5, -0.1)
    with pytest.raises(ValueError, match="19 prompts for 20 problems"):
        probe_sft_rows(prompts[1:], problems, random.Random(0), 0.5)
