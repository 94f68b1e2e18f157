"""Evaluation metrics on crafted completions, and batched generation on a tiny model."""

from __future__ import annotations

import pytest
from datasets import Dataset

from psgrpo.data.validation import DatasetValidationError
from psgrpo.evaluate import evaluate_model, generate_completions, score_completions

GOOD = "<reasoning>\nStep 1: 2 + 3 = 5\n</reasoning>\n<answer>5</answer>"
WRONG = "<reasoning>\nStep 1: 2 + 3 = 6\n</reasoning>\n<answer>6</answer>"
NO_FORMAT = "the answer is <answer>5</answer>"
NO_ANSWER = "<reasoning>\nI give up"


def test_score_completions_hand_computed():
    metrics = score_completions([GOOD, WRONG, NO_FORMAT, NO_ANSWER], [10, 20, 30, 41], ["5", "5", "5", "5"])
    assert metrics["accuracy"] == 2 / 4  # GOOD and NO_FORMAT carry the right answer
    assert metrics["format_rate"] == 2 / 4  # GOOD and WRONG have all four tags
    assert metrics["answer_rate"] == 3 / 4
    assert metrics["mean_tokens"] == 25.25 and metrics["median_tokens"] == 25.0 and metrics["n"] == 4


def test_close_answers_do_not_count_as_accurate():
    assert score_completions(["<answer>99.5</answer>"], [3], ["100"])["accuracy"] == 0.0
    assert score_completions(["<answer>1,000</answer>"], [3], ["1000"])["accuracy"] == 1.0


def test_empty_split_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        score_completions([], [], [])


def test_generate_stops_at_eos_and_respects_limit(tiny_model, char_tokenizer):
    texts, lengths = generate_completions(
        tiny_model,
        char_tokenizer,
        ["Question: a\n", "Question: longer prompt\n"],
        max_new_tokens=7,
        show_progress=False,
    )
    assert len(texts) == 2 and all(1 <= n <= 7 for n in lengths)


def test_evaluate_model_on_tiny_model(tiny_model, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 3, "answer": ["2"] * 3})
    metrics = evaluate_model(tiny_model, char_tokenizer, data, max_new_tokens=5, show_progress=False)
    assert metrics["n"] == 3 and 0.0 <= metrics["accuracy"] <= 1.0


def test_evaluate_model_without_answer_column(tiny_model, char_tokenizer):
    with pytest.raises(DatasetValidationError, match="answer"):
        evaluate_model(tiny_model, char_tokenizer, Dataset.from_dict({"prompt": ["x"]}), show_progress=False)
