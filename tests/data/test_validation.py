"""Tests for psgrpo.data.validation: errors that name the dataset, column, row and value."""

from __future__ import annotations

import functools

import pytest
from datasets import Dataset, DatasetDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from psgrpo.data.validation import (
    DatasetValidationError,
    iter_column,
    short_repr,
    validate_columns,
    validate_gold_answers,
    validate_prompts,
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


CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]


@pytest.mark.parametrize(
    ("prompt", "problem"),
    [
        (None, "None is missing"),
        ("   ", "'   ' is empty"),
        ({"role": "user", "content": "hi"}, "is of type dict"),
        ([], "is an empty list of messages"),
        (["2+2?"], "has message 0 of type str, not a mapping"),
        ([{"role": "human", "content": "hi"}], "has message 0 with role 'human', not one of system"),
        ([{"role": "user"}], "has message 0 with content None, not a string"),
        ([{"role": "user", "content": 4}], "has message 0 with content 4, not a string"),
    ],
)
def test_a_prompt_no_tokenizer_can_render_is_named_with_its_row(prompt, problem) -> None:
    rows = [{"prompt": "ok"}, {"prompt": prompt}, {"prompt": prompt}]
    with pytest.raises(DatasetValidationError, match="expected a non-empty string") as info:
        validate_prompts(rows, "train_dataset")
    assert str(info.value).startswith("dataset 'train_dataset': row 1, field 'prompt': prompt ")
    assert problem in str(info.value)
    assert "(1 more bad row: row 2)" in str(info.value)
    assert (info.value.row, info.value.field) == (1, "prompt")


def test_plain_and_chat_prompts_pass_in_every_dataset_kind() -> None:
    from datasets import IterableDataset

    validate_prompts(_dataset(prompt=["2+2?", "3+3?"]), "train")
    validate_prompts(
        [{"prompt": CHAT}, {"prompt": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}]
    )
    stream = IterableDataset.from_generator(lambda: ({"prompt": p} for p in ["a", "b"]))
    validate_prompts(stream, "train")


def test_a_stream_is_checked_only_in_its_first_rows() -> None:
    """Reading a whole stream would consume it before training; its first rows are read."""
    from datasets import IterableDataset

    from psgrpo.data.validation import STREAM_ROWS_CHECKED

    def rows(bad_at: int):
        return IterableDataset.from_generator(
            lambda: ({"prompt": "" if i == bad_at else "q"} for i in range(STREAM_ROWS_CHECKED + 10))
        )

    with pytest.raises(DatasetValidationError, match="row 3, field 'prompt'"):
        validate_prompts(rows(3), "train")
    validate_prompts(rows(STREAM_ROWS_CHECKED + 5), "train")  # past the rows read


def test_any_gold_accepts_symbolic_answers_and_numbers_but_not_nothing() -> None:
    ok = _dataset(answer=["\\frac{3}{4}", "x = 5", "72"])
    validate_gold_answers(ok, numeric=False)
    with pytest.raises(DatasetValidationError, match="is not a number"):
        validate_gold_answers(ok)  # the numeric check (arith, GSM8K) still refuses them
    validate_gold_answers([{"answer": 4}, {"answer": 2.5}], numeric=False)
    for bad, problem in [(None, "is of type NoneType"), ("", "is empty"), (True, "is of type bool"),
                         (float("nan"), "is not a finite number")]:  # fmt: skip
        with pytest.raises(DatasetValidationError, match=problem):
            validate_gold_answers([{"answer": "1"}, {"answer": bad}], numeric=False)


def _words(prompt) -> int:
    """A tokenizer stand-in: one token per word, two for a template around each message (fewer than its bytes)."""
    if isinstance(prompt, str):
        return len(prompt.split())
    return sum(len(m["content"].split()) + 2 for m in prompt)


def test_a_prompt_that_fills_the_context_is_refused_naming_the_row():
    from psgrpo.data.validation import DatasetValidationError, check_prompts_fit_context

    rows = [{"prompt": "a " * n} for n in (5, 40, 12, 50, 3)]
    with pytest.raises(
        DatasetValidationError, match=r"row 1, field 'prompt': the prompt is 40 tokens, .* 40 po"
    ) as err:
        check_prompts_fit_context(rows, "train", _words, max_positions=40, max_completion_length=8)
    assert err.value.row == 1 and "(1 more bad row: row 3)" in str(err.value)
    tight = check_prompts_fit_context(rows, "train", _words, max_positions=60, max_completion_length=24)
    assert tight is not None and "2 of 5 prompts leave fewer than max_completion_length (24)" in tight
    assert "the longest, row 3, is 50 tokens" in tight
    assert (
        check_prompts_fit_context(rows, "train", _words, max_positions=100, max_completion_length=16) is None
    )
    assert (
        check_prompts_fit_context(rows, "train", _words, max_positions=None, max_completion_length=16) is None
    )
    stream = iter(rows)  # a stream is not read (it would be consumed)
    assert (
        check_prompts_fit_context(stream, "train", pytest.fail, max_positions=4, max_completion_length=2)
        is None
    )


def test_only_rows_whose_bytes_could_reach_the_limit_are_tokenized():
    """GSM8K on a long-context model must not tokenize 7,473 prompts at trainer build."""
    from psgrpo.data.validation import SLACK_TOKENS_PER_MESSAGE, check_prompts_fit_context

    counted = []

    def counting(prompt):
        counted.append(prompt)
        return _words(prompt)

    chat = [{"role": "user", "content": "x" * n} for n in (10, 300, 20)]
    rows = [{"prompt": [message]} for message in chat]
    # limit 100 - 30 = 70: the first row's empty template (2) + 10 bytes + slack is under it, 300 bytes are not
    assert check_prompts_fit_context(rows, "t", counting, max_positions=100, max_completion_length=30) is None
    assert counted == [[{"role": "user", "content": ""}], [chat[1]]] and SLACK_TOKENS_PER_MESSAGE < 40
    counted.clear()
    parts = [{"prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}]
    check_prompts_fit_context(
        parts, "t", lambda p: counted.append(p) or 3, max_positions=100, max_completion_length=30
    )
    assert len(counted) == 1  # content that is not text is always tokenized (no template needed)


@functools.cache
def _embedded_tokenizer():
    from transformers import AutoTokenizer

    from psgrpo.tiny import resolve_checkpoint

    return AutoTokenizer.from_pretrained(resolve_checkpoint(None))


@pytest.mark.parametrize("chat", [False, True])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(max_size=60), min_size=1, max_size=6),
    max_positions=st.integers(4, 80),
    completion=st.integers(1, 40),
)
def test_the_byte_bound_never_skips_a_row_a_real_tokenizer_finds_long(
    chat, texts, max_positions, completion, qwen_tokenizer
):
    """With a byte-level BPE (the embedded model's on plain prompts, Qwen2.5's chat template with its default
    system message on conversations), the verdict equals tokenizing every row."""
    from psgrpo.data.validation import DatasetValidationError, check_prompts_fit_context
    from psgrpo.eval.generation import prompt_ids

    tokenizer = qwen_tokenizer if chat else _embedded_tokenizer()
    prompts = [[{"role": "user", "content": t or "?"}] if chat else t or "?" for t in texts]
    rows = [{"prompt": prompt} for prompt in prompts]
    lengths = [len(prompt_ids(tokenizer, prompt)) for prompt in prompts]

    def count(prompt):
        return len(prompt_ids(tokenizer, prompt))

    full = [i for i, n in enumerate(lengths) if n >= max_positions]
    if full:
        with pytest.raises(
            DatasetValidationError, match=f"row {full[0]}, field 'prompt': the prompt is {lengths[full[0]]} "
        ):
            check_prompts_fit_context(rows, "t", count, max_positions, completion)
        return
    tight = check_prompts_fit_context(rows, "t", count, max_positions, completion)
    if completion >= max_positions:  # no room for any prompt: one line about the option, not the rows
        assert tight is not None and tight.startswith(f"max_completion_length ({completion}) is not below")
        return
    expected = sum(n > max_positions - completion for n in lengths)
    assert (tight is None) == (expected == 0)
    if tight:
        assert tight.startswith(f"dataset 't': {expected} of {len(rows)} prompts")


def test_the_bound_holds_where_normalization_expands_and_rows_have_other_templates(qwen_tokenizer):
    """Two rows a first version let through (a review, 2026-12-07): NFC decomposes U+0F73 (3 bytes, 4 Qwen
    tokens), and Qwen2.5's template adds its default system prompt only to a row without a system message."""
    from psgrpo.data.validation import DatasetValidationError, check_prompts_fit_context
    from psgrpo.eval.generation import prompt_ids

    def count(prompt):
        return len(prompt_ids(qwen_tokenizer, prompt))

    expanding = "\u0f73" * 300
    assert len(expanding.encode()) == 900 and count(expanding) > 900
    with pytest.raises(DatasetValidationError, match="row 1, field 'prompt'"):
        check_prompts_fit_context(
            [{"prompt": "hi"}, {"prompt": expanding}],
            "t",
            count,
            max_positions=count(expanding),
            max_completion_length=8,
        )
    digits = [{"role": "user", "content": "1" * 1000}]
    rows = [
        {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]},
        {"prompt": digits},
    ]
    with pytest.raises(
        DatasetValidationError, match=f"row 1, field 'prompt': the prompt is {count(digits)} tokens"
    ):
        check_prompts_fit_context(rows, "t", count, max_positions=count(digits), max_completion_length=8)


def test_a_completion_length_that_reaches_the_context_is_one_line_without_tokenizing_every_row():
    from psgrpo.data.validation import check_prompts_fit_context

    counted = []

    def counting(prompt):
        counted.append(prompt)
        return _words(prompt)

    rows = [{"prompt": "a b c"} for _ in range(50)]
    note = check_prompts_fit_context(rows, "t", counting, max_positions=64, max_completion_length=64)
    assert note is not None and note.startswith(
        "max_completion_length (64) is not below the model's context of 64"
    )
    assert counted == [""]  # the empty template once, no row
