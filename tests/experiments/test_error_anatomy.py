"""experiments/error_anatomy.py: wrong answers against the gold solution (stops short, fewer steps)."""

from __future__ import annotations

import json

import pytest

from psgrpo.data.tasks import TaskConfig, load_task_split

GOLD = (
    "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 4 + 4 = 8\nStep 3: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"
)
# step 2 is a distractor: off the dependency path, so the gold path has 2 steps


def _completion(*steps: str, answer: str) -> str:
    lines = "\n".join(f"Step {k}: {s}" for k, s in enumerate(steps, start=1))
    return f"<reasoning>\n{lines}\n</reasoning>\n<answer>{answer}</answer>"


@pytest.fixture(scope="module")
def anatomy(import_experiment):
    return import_experiment("error_anatomy")


def test_each_kind_of_wrong_answer(anatomy):
    right = anatomy.anatomy(_completion("7 + 5 = 12", "12 - 3 = 9", answer="9"), GOLD, "9", "correct")
    assert (right.steps, right.gold_path, right.stops_short) == (2, 2, False)
    short = anatomy.anatomy(_completion("7 + 5 = 12", answer="12"), GOLD, "9", "logic")
    assert (short.steps, short.stops_short) == (1, True)  # a correct prefix of the gold path
    misread = anatomy.anatomy(_completion("7 + 5 = 12", "12 - 4 = 8", answer="8"), GOLD, "9", "logic")
    assert misread.stops_short is False  # 8 is the distractor's value, but not a gold-path one
    slip = anatomy.anatomy(_completion("7 + 5 = 13", answer="13"), GOLD, "9", "calculation")
    assert slip.stops_short is False  # a failed equation is no correct prefix
    s = anatomy.summary([right, short, misread, slip])
    assert s == {
        "completions": 4.0,
        "accuracy": 0.25,
        "logic": 0.5,
        "stops_short": 0.25,
        "fewer_steps": 0.25,  # short: 1 step against 2
        "delta_steps": -0.5,  # (1 − 2 + 2 − 2) / 2
        "unread_steps": 0.0,
    }
    assert "| x | 4 | 0.250 | 0.500 | 0.250 | 0.250 | -0.50 | 0.000 |" in anatomy.markdown({"x": s})


def test_a_step_without_equations_between_linked_steps_keeps_the_links(anatomy):
    """A drifting policy wrote this (arith-hard, 240 steps): ``1 - 1 = = 1`` states no equation the
    verifier reads (``11 1 9 = 2`` is a garbled one, read as false). Dropping such a step before the path
    was traced shifted every later step's ``depends_on`` (an IndexError here, misplaced links elsewhere);
    the reference verifier scores it as written."""
    gold = (
        "<reasoning>\nStep 1: 13 - 6 = 7\nStep 2: 7 + 4 = 11\nStep 3: 11 - 1 = 10\nStep 4: 10 - 6 = 4\n"
        "Step 5: 4 - 2 = 2\nStep 6: 2 - 1 = 1\nStep 7: 11 + 9 = 20\nStep 8: 1 * 2 = 2\nStep 9: 2 * 2 = 4\n"
        "</reasoning>\n<answer>4</answer>"
    )
    completion = _completion(
        "13 - 6 = 7", "7 + 1 = 8", "8 - 6 = 2", "2 - 2 = 1", "1 - 1 = = 1", "11 1 9 = 2", "2 * 2 = 4",
        "4 * 2 = 8", answer="8",
    )  # fmt: skip
    result = anatomy.anatomy(completion, gold, "4", "calculation")
    assert (result.error_type, result.gold_path, result.stops_short) == ("calculation", 8, False)
    assert result.steps == 7  # the steps with equations (step 5 has none the verifier reads)
    assert (result.written, result.unread) == (8, 1)
    assert anatomy.summary([result])["unread_steps"] == 1 / 8


def test_reads_psgrpo_eval_samples_and_refuses_another_dataset(anatomy, tmp_path, capsys):
    rows = load_task_split(TaskConfig(dataset="arith-hard"), "test", 3)
    records = [
        {"prompt_index": i, "prompt": row["prompt"], "completion": row["solution"], "error_type": "correct"}
        for i, row in enumerate(rows)
    ]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = anatomy.main(["--dataset", "arith-hard", f"gold={path}"])
    assert result["gold"]["accuracy"] == 1.0 and result["gold"]["stops_short"] == 0.0
    assert "| gold | 3 |" in capsys.readouterr().out
    pooled = anatomy.main(["--dataset", "arith-hard", f"two={path},{path}"])  # several files under one label
    assert pooled["two"]["completions"] == 6.0
    with pytest.raises(ValueError, match=r"samples.jsonl line 1: prompt 0 is not row 0 of the dataset given"):
        anatomy.main(["--dataset", "arith", f"gold={path}"])
    with pytest.raises(SystemExit):
        anatomy.main(["--dataset", "arith-hard", str(path)])  # no LABEL=


def test_reads_the_rows_a_1000_problem_evaluation_used(anatomy, tmp_path, capsys):
    """psgrpo eval --max_eval_examples 1000 (the docstring's command) writes rows past the split's default 200."""
    rows = load_task_split(TaskConfig(dataset="arith-hard"), "test", 1000)
    records = [
        {
            "prompt_index": i,
            "prompt": rows[i]["prompt"],
            "completion": rows[i]["solution"],
            "error_type": "correct",
        }
        for i in (0, 998, 999)
    ]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert anatomy.main(["--dataset", "arith-hard", f"last={path}"])["last"]["accuracy"] == 1.0
    with pytest.raises(SystemExit):
        anatomy.main(["--dataset", "arith-hard", f"gone={tmp_path / 'missing.jsonl'}"])
    assert "missing.jsonl: no such file" in capsys.readouterr().err


def test_a_label_given_twice_is_a_usage_error(anatomy, tmp_path, capsys):
    """``A=s_a A=s_b`` kept only s_b's table under A; pooling is ``A=s_a,s_b``."""
    rows = load_task_split(TaskConfig(dataset="arith-hard"), "test", 1)
    record = {"prompt_index": 0, "prompt": rows[0]["prompt"], "completion": rows[0]["solution"],
              "error_type": "correct"}  # fmt: skip
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        anatomy.main(["--dataset", "arith-hard", f"A={path}", f"B={path}", f"A={path}"])
    assert exit_info.value.code == 2 and "label 'A' given twice" in capsys.readouterr().err
