"""Tests for benchmarks/scorers/unread_as_wrong.py: the three flag rules on hand-made steps, and the
table re-read from a real ``score-steps`` run (the reference verifier against a hand-made gold)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from psgrpo.commands.score_steps import score_steps

PROBLEM = "Tom has 3 bags of 4 apples. He eats 2. How many are left?"
GOLD = {"question": PROBLEM, "answer": "3 * 4 = <<3*4=12>>12 apples.\n12 - 2 = <<12-2=10>>10 left.\n#### 10"}
SOLUTIONS = [  # (steps, label): ProcessBench's first wrong step, -1 when every step is right
    (["Tom has 3 bags of 4 apples.", "3 * 4 = 12 apples.", "12 - 2 = 10 left.", "The answer is 10."], -1),
    (["Tom has 3 bags of 4 apples.", "3 * 4 = 14 apples.", "14 - 2 = 12 left.", "The answer is 12."], 1),
    (["First count the apples.", "3 * 4 = 12 apples.", "12 - 2 = 10 left.", "That is what is left."], -1),
]


@pytest.fixture(scope="module")
def uw(import_benchmark):
    return import_benchmark("scorers.unread_as_wrong")


def test_a_neutral_step_with_a_number_is_flagged_only_under_the_rules_that_say_so(uw) -> None:
    steps = ["Tom has 3 bags.", "First count them.", "3 * 4 = 14", "3 * 4 = 12"]
    scores, flags = [0.5, 0.5, 0.0, 1.0], [False, False, True, False]
    assert uw.flags_under("as scored", steps, scores, flags, 0.5) == flags
    assert uw.flags_under("numbers, no equation", steps, scores, flags, 0.5) == [True, False, True, False]
    assert uw.flags_under("every unread step", steps, scores, flags, 0.5) == [True, True, True, False]
    assert uw.writes_a_number("It costs $15.") and not uw.writes_a_number("Add them up.")


def test_the_table_re_reads_a_real_score_steps_run(uw, tmp_path: Path, capsys) -> None:
    data, gold = tmp_path / "data.jsonl", tmp_path / "gold.jsonl"
    rows = [{"id": f"s{i}", "problem": PROBLEM, "steps": s, "label": y} for i, (s, y) in enumerate(SOLUTIONS)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    gold.write_text(json.dumps(GOLD) + "\n")
    kwargs = '{"correct_weight": 0.0, "reference_weight": 1.0}'
    out = tmp_path / "ss"
    run = score_steps(["--data", str(data), "--gold", str(gold), "--step_scorer", "reference",
                       "--step_scorer_kwargs", kwargs, "--output_dir", str(out)])  # fmt: skip
    capsys.readouterr()
    results = {
        r["rule"]: r for r in uw.main(["--data", str(data), "--predictions", str(out / "predictions.jsonl")])
    }
    printed = capsys.readouterr().out
    scored = run
    assert results["as scored"]["f1"] == pytest.approx(scored["f1"])
    assert (results["as scored"]["exact"], results["as scored"]["false_blame"]) == (1, 0)
    # "Tom has 3 bags of 4 apples." writes numbers and no equation: flagged under both other rules, so the
    # wrong solution's first flag comes a step early and the first correct one is blamed; the third,
    # whose unread steps are prose, is blamed only when every unread step counts as wrong
    numbers = results["numbers, no equation"]
    assert (numbers["early"], numbers["false_blame"]) == (1, 1)
    assert results["every unread step"]["false_blame"] == 2
    assert "| as scored | 1.000 (" in printed and "| every unread step | 0.000 (" in printed


@pytest.mark.parametrize(
    ("data_line", "prediction_line", "message"),
    [
        ({"id": "a", "problem": "p", "steps": ["x"], "label": -1}, {"id": "b", "label": -1, "scores": [0.5], "flags": [False]}, "id 'b' is not in"),
        ({"id": "a", "problem": "p", "steps": ["x"], "label": -1}, {"id": "a", "label": -1, "scores": [0.5, 1.0], "flags": [False, False]},
         "2 step scores for a solution of 1 steps"),
        ({"id": "a", "problem": "p", "label": -1}, {"id": "a", "label": -1, "scores": [0.5], "flags": [False]}, "data.jsonl, line 1, field 'steps'"),
        ({"id": "a", "problem": "p", "steps": ["x"], "label": -1}, {"id": "a", "label": -1}, "predictions.jsonl:1: expected the fields id, label, scores, flags; missing scores, flags"),
        ({"id": "a", "problem": "p", "steps": ["x"], "label": -1}, "{not json", "predictions.jsonl:1: not a JSON object"),
    ],
)  # fmt: skip
def test_a_bad_line_is_one_line_naming_the_file_and_line(
    uw, tmp_path: Path, data_line, prediction_line, message
) -> None:
    data, predictions = tmp_path / "data.jsonl", tmp_path / "predictions.jsonl"
    data.write_text(json.dumps(data_line) + "\n")
    predictions.write_text(
        (prediction_line if isinstance(prediction_line, str) else json.dumps(prediction_line)) + "\n"
    )
    with pytest.raises(SystemExit, match=re.escape(message)):
        uw.main(["--data", str(data), "--predictions", str(predictions)])
