"""Tests for psgrpo.data.gsm8k: gold extraction, local/hub loading and row-level errors.

No test touches the network: hub loading is exercised through a monkeypatched
``datasets.load_dataset``. The test on the real GSM8K copy skips when it is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import datasets
import pytest

from psgrpo.data.gsm8k import (
    GSM8K_HUB_ID,
    HubLoadError,
    extract_gsm8k_gold,
    load_gsm8k,
    solution_steps,
)
from psgrpo.data.prompts import format_prompt
from psgrpo.data.validation import DatasetValidationError, validate_gold_answers
from psgrpo.rewards.numbers import parse_number

ROWS = [
    {
        "question": "Natalia sold clips to 48 friends in April and half as many in May. How many in all?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether.\n#### 72",
    },
    {
        "question": "A shop sells 1,000 pens a week. How many pens does it sell in a week?",
        "answer": "It sells 1,000 pens.\n#### 1,000",
    },
    {
        "question": "It is 3 degrees and drops by 8. What is the temperature?",
        "answer": "3 - 8 = -5\n\n  \nThe temperature is -5.\n#### -5",
    },
]


def _write_jsonl(path: Path, rows: list[Any], blank_after_first: bool = False) -> Path:
    """Write rows as JSON Lines (strings are written verbatim, to make malformed lines)."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    if blank_after_first:
        lines.insert(1, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _shared_gsm8k_dir() -> Path:
    """The real GSM8K copy: ``$PSGRPO_GSM8K_DIR`` or ``<repo>/../shared/data/gsm8k``."""
    env = os.environ.get("PSGRPO_GSM8K_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "gsm8k"


# --------------------------------------------------------------------------- gold and steps


@pytest.mark.parametrize(
    ("solution", "gold"),
    [
        ("#### 72", "72"),
        ("Some work.\n#### 1,000", "1000"),
        ("#### -5", "-5"),
        ("x\n####   18.0  ", "18"),
        ("a #### 3 then\n#### 4", "4"),  # the last marker wins
    ],
)
def test_extract_gold(solution: str, gold: str) -> None:
    assert extract_gsm8k_gold(solution) == gold


def test_extract_gold_without_marker() -> None:
    with pytest.raises(ValueError, match="no '####' gold marker"):
        extract_gsm8k_gold("The answer is 72.")


def test_extract_gold_not_a_number() -> None:
    with pytest.raises(ValueError, match="'seventy', not a number"):
        extract_gsm8k_gold("work\n#### seventy")
    with pytest.raises(ValueError, match="not a number"):
        extract_gsm8k_gold("work\n####")


@pytest.mark.parametrize("tail", ["2,5", "0,75", "1,2,3", "1,00"])
def test_a_malformed_thousands_comma_is_refused_not_read_as_another_number(tail: str) -> None:
    """``#### 2,5`` (a decimal comma) was read as 25 and ``#### 1,2,3`` as 123: a gold ten or a hundred times
    off, with no word (a review, 2026-12-07)."""
    with pytest.raises(ValueError, match=f"'{tail}', not a number"):
        extract_gsm8k_gold(f"work\n#### {tail}")
    assert extract_gsm8k_gold("work\n#### 12,345,678") == "12345678"


def test_solution_steps() -> None:
    assert solution_steps(ROWS[0]["answer"]) == [
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.",
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether.",
    ]
    assert solution_steps(ROWS[2]["answer"]) == ["3 - 8 = -5", "The temperature is -5."]
    assert solution_steps("#### 3") == []
    assert solution_steps("one\ntwo") == ["one", "two"]


# --------------------------------------------------------------------------- local files


def test_load_local_jsonl(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "train.jsonl", ROWS)
    ds = load_gsm8k(str(path))
    assert ds.column_names == ["prompt", "answer", "solution", "question", "difficulty"]
    assert ds["answer"] == ["72", "1000", "-5"]
    assert ds["difficulty"] == [2, 1, 2]
    assert ds["question"] == [row["question"] for row in ROWS]
    assert ds["solution"] == [row["answer"] for row in ROWS]
    assert ds[0]["prompt"] == format_prompt(ROWS[0]["question"], template="tags")
    assert ds[0]["prompt"].startswith("Respond in format:\n<reasoning>")


def test_load_chat_prompts(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "train.jsonl", ROWS)
    plain = load_gsm8k(str(path), chat=True, template="compact")
    assert plain[1]["prompt"] == [{"role": "user", "content": f"Question: {ROWS[1]['question']}\n"}]
    with_system = load_gsm8k(str(path), chat=True, system_prompt="Be brief.")
    assert [m["role"] for m in with_system[0]["prompt"]] == ["system", "user"]
    assert with_system[0]["prompt"][0]["content"] == "Be brief."


def test_limit_takes_first_rows_and_ignores_later_bad_ones(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "train.jsonl", [*ROWS, {"question": "q", "answer": "no gold"}])
    ds = load_gsm8k(str(path), limit=2)
    assert ds["answer"] == ["72", "1000"]
    with pytest.raises(ValueError, match="limit"):
        load_gsm8k(str(path), limit=0)


def test_directory_source_uses_split_file(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "train.jsonl", ROWS)
    _write_jsonl(tmp_path / "test.jsonl", ROWS[:1])
    assert len(load_gsm8k(str(tmp_path), split="train")) == 3
    assert len(load_gsm8k(str(tmp_path), split="test")) == 1
    with pytest.raises(FileNotFoundError, match=r"no validation\.jsonl.*\['test\.jsonl', 'train\.jsonl'\]"):
        load_gsm8k(str(tmp_path), split="validation")


def test_json_array_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(ROWS), encoding="utf-8")
    assert load_gsm8k(str(path))["answer"] == ["72", "1000", "-5"]


def test_a_pretty_printed_array_in_a_jsonl_file_says_what_it_is(tmp_path: Path) -> None:
    """It read "line 1 … is not valid JSON: '['", pointing at a file that is valid JSON."""
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ROWS, indent=2), encoding="utf-8")
    with pytest.raises(
        DatasetValidationError, match=r"holds a JSON array over several lines.*name the file \*\.json"
    ):
        load_gsm8k(str(path))
    path.with_suffix(".json").write_text(path.read_text(), encoding="utf-8")
    assert load_gsm8k(str(path.with_suffix(".json")))["answer"] == ["72", "1000", "-5"]


def test_blank_lines_are_skipped_and_lines_still_counted(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "t.jsonl", [ROWS[0], {"question": "q", "answer": "x"}], True)
    with pytest.raises(DatasetValidationError, match=rf"line 3 of {path} \(row 1\)"):
        load_gsm8k(str(path))


def test_malformed_json_line_names_path_and_line(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "train.jsonl", [ROWS[0], ROWS[1], '{"question": "q", "answer": '])
    with pytest.raises(
        DatasetValidationError, match=rf"line 3 of {path} is not valid JSON \(Expecting value at column 29\)"
    ):
        load_gsm8k(
            str(path)
        )  # the column of the line's end (28 characters), not "column 1" of the newline after it


def test_non_object_line(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "train.jsonl", [ROWS[0], "[1, 2]"])
    with pytest.raises(DatasetValidationError, match="line 2 of .* is a JSON list, not an object"):
        load_gsm8k(str(path))


def test_missing_answer_column(tmp_path: Path) -> None:
    rows = [{"question": row["question"], "answers": row["answer"]} for row in ROWS]
    path = _write_jsonl(tmp_path / "train.jsonl", rows)
    with pytest.raises(DatasetValidationError) as info:
        load_gsm8k(str(path))
    message = str(info.value)
    assert "missing required column 'answer'" in message
    assert "did you mean 'answers'?" in message
    assert str(path) in message


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetValidationError, match=rf"'GSM8K' \(from {path}\) is empty"):
        load_gsm8k(str(path))


def test_bad_gold_row_names_line_and_field(tmp_path: Path) -> None:
    bad = {"question": "How many?", "answer": "There are 4."}
    path = _write_jsonl(tmp_path / "train.jsonl", [ROWS[0], bad, ROWS[1], bad])
    with pytest.raises(DatasetValidationError) as info:
        load_gsm8k(str(path))
    message = str(info.value)
    assert f"line 2 of {path} (row 1)" in message
    assert "field 'answer'" in message
    assert "no '####' gold marker in 'There are 4.'" in message
    assert "1 more bad row: line 4" in message
    assert (info.value.row, info.value.field) == (1, "answer")


def test_row_missing_a_field_or_with_empty_question(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "a.jsonl", [ROWS[0], {"question": "q"}])
    with pytest.raises(DatasetValidationError, match=r"line 2 .*field 'answer': the field is missing"):
        load_gsm8k(str(path))
    path = _write_jsonl(tmp_path / "b.jsonl", [ROWS[0], {"question": " ", "answer": "#### 1"}])
    with pytest.raises(DatasetValidationError, match=r"line 2 .*field 'question'"):
        load_gsm8k(str(path))


def test_missing_local_file_is_not_sent_to_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the hub must not be tried for a path")

    monkeypatch.setattr(datasets, "load_dataset", fail)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_gsm8k(str(tmp_path / "nope.jsonl"))


def test_bad_template_fails_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="neither a known name"):
        load_gsm8k(str(tmp_path / "missing.jsonl"), template="bogus")


# --------------------------------------------------------------------------- hub (mocked)


def test_hub_failure_gives_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(HubLoadError) as info:
        load_gsm8k(GSM8K_HUB_ID, split="test")
    message = str(info.value)
    assert "hub access failed" in message
    assert "ConnectionError" in message
    assert "local" in message and "JSONL" in message and "test.jsonl" in message
    assert isinstance(info.value.__cause__, ConnectionError)


def test_hub_success_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    def fake_load(path: str, name: str, split: str) -> datasets.Dataset:
        calls.append((path, name, split))
        return datasets.Dataset.from_list([*ROWS, {"question": "q", "answer": "#### ?"}])

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    assert load_gsm8k(limit=3)["answer"] == ["72", "1000", "-5"]
    assert calls == [(GSM8K_HUB_ID, "main", "train")]
    with pytest.raises(
        DatasetValidationError, match=r"row 3 of openai/gsm8k \(split 'train'\), field 'answer'"
    ):
        load_gsm8k()


# --------------------------------------------------------------------------- real data


def test_real_gsm8k_test_split() -> None:
    directory = _shared_gsm8k_dir()
    if not (directory / "test.jsonl").is_file():
        pytest.skip(f"no GSM8K copy at {directory} (set PSGRPO_GSM8K_DIR)")
    ds = load_gsm8k(str(directory), split="test")
    assert len(ds) == 1319
    assert all(parse_number(answer) is not None for answer in ds["answer"])
    validate_gold_answers(ds, name="GSM8K test")
    assert min(ds["difficulty"]) >= 1
    assert ds[0]["answer"] == "18"
