"""Tests for psgrpo.data.validation: errors that name the dataset, column, row and value."""

from __future__ import annotations

import pytest
from datasets import Dataset, DatasetDict

from psgrpo.data.validation import (
    DatasetValidationError,
    iter_column,
    short_repr,
    validate_columns,
    validate_gold_answers,
)


def _dataset(**columns: list) -> Dataset:
    """A small in-memory dataset from column lists."""
    return Dataset.from_dict(columns)


def test_error_is_a_value_error() -> None:
    assert issubclass(DatasetValidationError, ValueError)


def test_empty_dataset_names_dataset_and_source() -> None:
    empty = _dataset(prompt=[], answer=[])
    with pytest.raises(DatasetValidationError, match=r"dataset 'train' \(from data/x\.jsonl\) is empty"):
        validate_columns(empty, ["prompt", "answer"], name="train", source="data/x.jsonl")


def test_empty_list_of_rows() -> None:
    with pytest.raises(DatasetValidationError, match="'eval' is empty"):
        validate_columns([], ["prompt"], name="eval")


def test_missing_column_suggests_close_name() -> None:
    ds = _dataset(question=["q"], answers=["1"])
    with pytest.raises(DatasetValidationError) as info:
        validate_columns(ds, ["question", "answer"], name="gsm8k")
    message = str(info.value)
    assert "missing required column 'answer'" in message
    assert "did you mean 'answers'?" in message
    assert "['question', 'answers']" in message  # the columns present
    assert info.value.field == "answer"


def test_missing_column_suggests_case_variant() -> None:
    ds = _dataset(Question=["q"], answer=["1"])
    with pytest.raises(DatasetValidationError, match=r"'question' \(did you mean 'Question'\?\)"):
        validate_columns(ds, ["question", "answer"], name="user data")


def test_missing_column_without_close_name_has_no_suggestion() -> None:
    ds = _dataset(text=["q"])
    with pytest.raises(DatasetValidationError) as info:
        validate_columns(ds, ["answer"], name="d")
    assert "did you mean" not in str(info.value)
    assert "['text']" in str(info.value)


def test_several_missing_columns_all_named() -> None:
    with pytest.raises(DatasetValidationError, match="columns 'prompt', 'answer'"):
        validate_columns(_dataset(text=["q"]), ["prompt", "answer"], name="d")


def test_dataset_dict_asks_for_a_split() -> None:
    dd = DatasetDict({"train": _dataset(prompt=["p"]), "test": _dataset(prompt=["p"])})
    with pytest.raises(DatasetValidationError, match=r"splits \['train', 'test'\].*dataset\['train'\]"):
        validate_columns(dd, ["prompt"], name="d")


def test_valid_dataset_passes_in_every_form() -> None:
    columns = {"prompt": ["a", "b"], "answer": ["1", "2"]}
    rows = [{"prompt": "a", "answer": "1"}, {"prompt": "b", "answer": "2"}]
    for dataset in (Dataset.from_dict(columns), columns, rows, Dataset.from_list(rows).to_iterable_dataset()):
        validate_columns(dataset, ["prompt", "answer"], name="ok")
        validate_gold_answers(dataset, name="ok")


def test_required_may_be_a_single_string() -> None:
    validate_columns(_dataset(answer=["1"]), "answer", name="d")


def test_gold_answers_accept_written_numbers() -> None:
    ds = _dataset(answer=["72", "1,000", "-5", "3.5", "$18", "3/4", "50%"])
    validate_gold_answers(ds, name="d")


def test_unparsable_gold_names_row_field_value_and_expectation() -> None:
    ds = _dataset(prompt=["a", "b", "c"], gold=["12", "twelve", "13"])
    with pytest.raises(DatasetValidationError) as info:
        validate_gold_answers(ds, column="gold", name="arith", source="gen")
    message = str(info.value)
    assert "dataset 'arith' (from gen)" in message
    assert "row 1" in message
    assert "field 'gold'" in message
    assert "'twelve'" in message
    assert "expected a non-empty string holding one number" in message
    assert (info.value.row, info.value.field) == (1, "gold")


def test_gold_error_counts_other_bad_rows() -> None:
    ds = _dataset(answer=["1", "", "x", "2", "y"])
    with pytest.raises(DatasetValidationError) as info:
        validate_gold_answers(ds, name="d")
    message = str(info.value)
    assert "row 1" in message and "is empty" in message
    assert "2 more bad rows: row 2, row 4" in message


def test_non_string_gold_is_rejected_with_hint() -> None:
    with pytest.raises(DatasetValidationError, match="row 0.*type int, not a string"):
        validate_gold_answers([{"answer": 7}], name="d")


def test_missing_gold_in_a_row_of_a_list() -> None:
    rows = [{"answer": "1"}, {"prompt": "no answer here"}]
    with pytest.raises(DatasetValidationError, match="row 1.*None"):
        validate_gold_answers(rows, name="d")


def test_gold_column_missing_is_a_column_error() -> None:
    with pytest.raises(DatasetValidationError, match="missing required column 'answer'"):
        validate_gold_answers(_dataset(answers=["1"]), name="d")


def test_long_values_are_truncated() -> None:
    value = "x" * 500
    text = short_repr(value, limit=40)
    assert text.startswith("'xxx") and "(502 characters)" in text and len(text) < 80
    with pytest.raises(DatasetValidationError) as info:
        validate_gold_answers(_dataset(answer=[value]), name="d")
    assert len(str(info.value)) < 400


def test_iter_column_reads_every_form() -> None:
    rows = [{"a": 1}, {"b": 2}]
    assert list(iter_column(rows, "a")) == [1, None]
    assert list(iter_column({"a": [1, 2]}, "a")) == [1, 2]
    assert list(iter_column(Dataset.from_dict({"a": [1, 2]}), "a")) == [1, 2]
