"""The step-score contract (psgrpo.ps.scorers.base), as score_steps applies it to any scorer, a user's too."""

from __future__ import annotations

import math

import pytest

from psgrpo.ps.scorers.base import StepScoreError, question_text, validate_step_scores
from psgrpo.ps.signal import score_steps


def scored(scorer, columns=None):
    """``scorer`` run through the trainer's scoring path on PROMPTS / STEPS (no fallback)."""
    return score_steps(scorer, PROMPTS, STEPS, columns or {}, fallback=False)


PROMPTS = ["What is 2+3?", [{"role": "user", "content": "What is 4*5?"}]]
STEPS = [["2 + 3 = 5", "So 5."], ["4 * 5 = 20"]]


def step_lengths(prompts, steps, **columns):
    return [[float(len(step)) for step in sample] for sample in steps]


def returning(output):
    """A scorer named ``bad_scorer`` that ignores its input and returns ``output``."""

    def bad_scorer(prompts, steps, **columns):
        return output

    return bad_scorer


def test_good_function_passes_and_gets_columns():
    seen = {}

    def with_columns(prompts, steps, **columns):
        seen.update(columns)
        return [[1, 0.5], [0]]  # ints are numbers too

    assert scored(step_lengths) == [[9.0, 5.0], [10.0]]
    assert scored(with_columns, {"answer": ["5", "20"]}) == [[1.0, 0.5], [0.0]]
    assert seen == {"answer": ["5", "20"]}


def test_output_is_plain_floats():
    scores = scored(returning([[1, True], [2]]))
    assert all(type(x) is float for row in scores for x in row)


@pytest.mark.parametrize(
    ("output", "expected_fragment"),
    [
        ([[1.0, 1.0]], "expected scores for 2 samples, got 1"),
        ([[1.0, 1.0], [1.0], [1.0]], "expected scores for 2 samples, got 3"),
        ([[1.0, 1.0], [1.0, 2.0]], "sample 1: expected 1 scores (one per step), got 2"),
        ([[1.0], [1.0]], "sample 0: expected 2 scores (one per step), got 1"),
        ([[1.0, math.nan], [1.0]], "sample 0, step 1: expected a finite number, got nan"),
        ([[1.0, 1.0], [math.inf]], "sample 1, step 0: expected a finite number, got inf"),
        ([[1.0, 1.0], [-math.inf]], "sample 1, step 0"),
        ([[1.0, "0.5"], [1.0]], "sample 0, step 1: expected a finite number, got '0.5'"),
        ([[1.0, None], [1.0]], "sample 0, step 1"),
        ([[1.0, 1.0], 3.0], "sample 1: expected a list of 1 scores, got float"),
        ("scores", "expected a list of 2 score lists, got str"),
    ],
)
def test_bad_outputs_name_scorer_and_sample(output, expected_fragment):
    with pytest.raises(StepScoreError, match="bad_scorer") as info:
        scored(returning(output))
    assert expected_fragment in str(info.value)


def test_raising_function_is_wrapped_and_chained():
    def broken(prompts, steps, **columns):
        raise KeyError("answer")

    with pytest.raises(StepScoreError, match=r"'broken' raised KeyError") as info:
        scored(broken)
    assert isinstance(info.value.__cause__, KeyError)


def test_step_score_error_is_a_value_error_naming_the_scorer():
    with pytest.raises(ValueError, match="bad_scorer"):
        scored(returning([]))


def test_fallback_scores_each_completion_alone_and_marks_failures():
    def fails_on_the_chat_prompt(prompts, steps, **columns):
        if any(not isinstance(p, str) for p in prompts):
            raise RuntimeError("no chat")
        return [[1.0] * len(s) for s in steps]

    assert score_steps(fails_on_the_chat_prompt, PROMPTS, STEPS, {}, fallback=True) == [[1.0, 1.0], None]


def test_validate_step_scores_accepts_empty_step_lists():
    assert validate_step_scores([[], [0.25]], [[], ["x"]], "s") == [[], [0.25]]


def test_question_text_plain_and_chat():
    assert question_text("Q?") == "Q?"
    chat = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "last "}, {"type": "text", "text": "one"}]},
    ]
    assert question_text(chat) == "last one"
    with pytest.raises(ValueError, match="no user message"):
        question_text([{"role": "system", "content": "x"}])
