"""Tests for psgrpo.data.step_labels: ProcessBench-format solutions, their line-naming errors, the gold join."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from psgrpo.data.step_labels import gold_by_problem, problem_key, read_labelled_solutions
from psgrpo.data.validation import DatasetValidationError

DUCKS = (
    "Janet’s ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her "
    "friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck "
    "egg. How much in dollars does she make every day at the farmers' market?"
)
DUCKS_GOLD = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer’s market.\n#### 18"
)
GOOD = {
    "id": "ducks-1",
    "generator": "handmade",
    "problem": DUCKS,
    "steps": ["Janet uses 3 + 4 = 7 eggs a day.", "She sells 16 - 7 = 9 eggs.", "She makes 9 * 2 = $18."],
    "final_answer_correct": True,
    "label": -1,
}


def write_lines(path: Path, lines: list) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8"
    )
    return path


def test_reads_fields_and_keeps_the_others(tmp_path):
    wrong = {**GOOD, "id": 7, "steps": ["She has 16 - 3 - 4 = 8 eggs.", "8 * 2 = 16"], "label": 0}
    del wrong["final_answer_correct"]
    rows = read_labelled_solutions(write_lines(tmp_path / "d.jsonl", [GOOD, "", wrong]))
    assert [(r.id, r.label, r.line) for r in rows] == [("ducks-1", -1, 1), (7, 0, 3)]
    assert rows[0].steps == GOOD["steps"] and rows[0].problem == DUCKS
    assert rows[0].extra == {"generator": "handmade", "final_answer_correct": True}
    assert read_labelled_solutions(tmp_path / "d.jsonl", limit=1) == rows[:1]


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        ({"id": None}, "id", "a non-empty string or an integer"),
        ({"problem": ""}, "problem", "the question, a non-empty string"),
        ({"steps": "Janet uses 7 eggs."}, "steps", "a non-empty list of strings"),
        ({"steps": []}, "steps", "a non-empty list of strings"),
        ({"steps": ["a", 3]}, "steps", "a non-empty list of strings"),
        ({"label": 3}, "label", "an integer from -1 .* to 2"),
        ({"label": -2}, "label", "an integer from -1"),
        ({"label": "1"}, "label", "an integer"),
        ({"label": True}, "label", "an integer"),
        ({"final_answer_correct": "yes"}, "final_answer_correct", "true or false"),
    ],
)
def test_a_bad_field_names_file_line_and_field(tmp_path, change, field, expected):
    path = write_lines(tmp_path / "d.jsonl", [GOOD, {**GOOD, "id": "x", **change}])
    with pytest.raises(
        DatasetValidationError, match=rf"d.jsonl, line 2, field '{field}': expected {expected}"
    ):
        read_labelled_solutions(path)


def test_a_missing_field_says_so(tmp_path):
    record = {k: v for k, v in GOOD.items() if k != "label"}
    with pytest.raises(DatasetValidationError, match="line 1, field 'label'.*the field is missing"):
        read_labelled_solutions(write_lines(tmp_path / "d.jsonl", [record]))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([GOOD, '{"id": "x", "problem": '], r"line 2: not valid JSON \(Expecting value at column 24\)"),
        ([[1, 2]], "line 1: a JSON list, expected an object"),
        ([GOOD, GOOD], "line 2, field 'id': expected a unique id; 'ducks-1' is also on line 1"),
        (["", "  "], "holds no solution"),
        ([], "holds no solution"),
    ],
)
def test_file_level_errors(tmp_path, lines, message):
    with pytest.raises(DatasetValidationError, match=message):
        read_labelled_solutions(write_lines(tmp_path / "d.jsonl", lines))


def test_missing_file_names_the_flag(tmp_path):
    with pytest.raises(FileNotFoundError, match="--data .*nope.jsonl"):
        read_labelled_solutions(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError, match="--gold"):
        gold_by_problem(tmp_path / "nope.jsonl")


def test_gold_join_on_whitespace_normalised_question(tmp_path):
    gold = write_lines(tmp_path / "gold.jsonl", [{"question": DUCKS, "answer": DUCKS_GOLD}])
    index = gold_by_problem(gold)
    spaced = "  " + DUCKS.replace(" She eats", "\n She  eats") + "\n"
    assert problem_key(spaced) == problem_key(DUCKS)
    row = index[problem_key(spaced)]
    assert row == {"solution": DUCKS_GOLD, "answer": "18", "question": DUCKS}  # annotations kept
    assert problem_key(DUCKS.lower()) not in index  # case is kept


def test_bad_gold_row_is_the_gsm8k_loaders_error(tmp_path):
    gold = write_lines(tmp_path / "gold.jsonl", [{"question": DUCKS, "answer": "Janet sells 9 eggs."}])
    with pytest.raises(DatasetValidationError, match="line 1 .*field 'answer'"):
        gold_by_problem(gold)


def test_no_wrong_step_with_a_wrong_answer_gets_one_warning(tmp_path, caplog):
    """ProcessBench has no such row; a mislabelled file would otherwise score it silently as correct."""
    odd = {**GOOD, "final_answer_correct": False}
    lines = [
        GOOD,
        {**odd, "id": "odd-1"},
        {**odd, "id": "odd-2"},
        {**GOOD, "id": "wrong", "label": 1, "final_answer_correct": False},
    ]
    path = write_lines(tmp_path / "odd.jsonl", lines)
    with caplog.at_level("WARNING", logger="psgrpo.data.step_labels"):
        solutions = read_labelled_solutions(path)
    assert [s.label for s in solutions] == [-1, -1, -1, 1]  # read as labelled
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "2 solution(s) have label -1" in warnings[0] and "first on line 2" in warnings[0]


def test_consistent_labels_get_no_warning(tmp_path, caplog):
    lines = [
        GOOD,
        {**GOOD, "id": "no-field"},
        {**GOOD, "id": "wrong", "label": 0, "final_answer_correct": True},
    ]
    lines[1].pop("final_answer_correct")
    with caplog.at_level("WARNING", logger="psgrpo.data.step_labels"):
        read_labelled_solutions(write_lines(tmp_path / "ok.jsonl", lines))
    assert not caplog.records
