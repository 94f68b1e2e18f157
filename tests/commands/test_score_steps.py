"""``psgrpo score-steps`` end to end: handmade labelled GSM8K solutions + gold, errors, and the real correct ones."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from psgrpo.commands.cli import main
from psgrpo.commands.score_steps import ScoreStepsConfig, run_score_steps
from psgrpo.eval.first_error import first_error_metrics
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.scorers.flags import first_flag

DUCKS = (
    "Janet’s ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her "
    "friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck "
    "egg. How much in dollars does she make every day at the farmers' market?"
)
ROBE = "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in total does it take?"
GOLD = [
    {
        "question": DUCKS,
        "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
        "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer’s market.\n#### 18",
    },
    {
        "question": ROBE,
        "answer": "It takes 2/2=<<2/2=1>>1 bolt of white fiber\nSo the total amount of fabric is 2+1=<<2+1=3>>3 "
        "bolts of fabric\n#### 3",
    },
]
SOLUTIONS = [
    {  # the gold route in a model's words: right
        "id": "ducks-gold-route",
        "generator": "handmade",
        "problem": DUCKS,
        "steps": ["Janet sells 16 - 3 - 4 = 9 duck eggs a day.", "She makes 9 * 2 = $18 every day."],
        "final_answer_correct": True,
        "label": -1,
    },
    {  # calculation slip in step 1
        "id": "ducks-slip",
        "generator": "handmade",
        "problem": DUCKS,
        "steps": [
            "Janet has 16 eggs and uses 3 for breakfast and 4 for muffins.",
            "She sells 16 - 3 - 4 = 8 eggs.",
            "She makes 8 * 2 = $16 every day.",
        ],
        "final_answer_correct": False,
        "label": 1,
    },
    {  # problem written with other whitespace: still joins; slip in step 0
        "id": "robe-slip",
        "generator": "handmade",
        "problem": " ".join(ROBE.split()),
        "steps": ["White fiber is 2 / 2 = 2 bolts.", "In total 2 + 2 = 4 bolts."],
        "final_answer_correct": False,
        "label": 0,
    },
    {  # no gold problem
        "id": "apples",
        "generator": "handmade",
        "problem": "Tom has 3 apples and buys 4 more. How many apples does he have?",
        "steps": ["Tom has 3 + 4 = 7 apples."],
        "final_answer_correct": True,
        "label": -1,
    },
]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


@pytest.fixture()
def files(tmp_path):
    return write_jsonl(tmp_path / "solutions.jsonl", SOLUTIONS), write_jsonl(tmp_path / "gold.jsonl", GOLD)


def read_outputs(out: Path) -> tuple[dict, list[dict]]:
    summary = json.loads((out / "summary.json").read_text())
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return summary, predictions


def test_reference_end_to_end(files, tmp_path, capsys):
    data, gold = files
    out = tmp_path / "out"
    kwargs = '{"correct_weight": 0.0, "reference_weight": 1.0}'
    argv = ["score-steps", "--data", str(data), "--gold", str(gold), "--step_scorer", "reference"]
    assert main([*argv, "--step_scorer_kwargs", kwargs, "--output_dir", str(out)]) == 0
    summary, predictions = read_outputs(out)
    assert [p["id"] for p in predictions] == [s["id"] for s in SOLUTIONS]
    by_id = {p["id"]: p for p in predictions}
    # Clear-cut cases: the gold route is not flagged, each slip is flagged where it is.
    assert by_id["ducks-gold-route"]["prediction"] == -1
    assert by_id["ducks-slip"]["prediction"] == 1 and by_id["ducks-slip"]["flags"][0] is False
    assert by_id["robe-slip"]["prediction"] == 0 and by_id["robe-slip"]["gold_found"]
    # The problem without gold is skipped (reference reads the gold solution) and counted.
    assert by_id["apples"] == {**by_id["apples"], "prediction": None, "scores": None, "gold_found": False}
    assert summary["solutions_without_gold"] == 1 and summary["without_gold"].startswith("skipped")
    assert (summary["rows"], summary["wrong_rows"], summary["correct_rows"]) == (3, 2, 1)
    assert (summary["error_acc"], summary["correct_acc"], summary["f1"], summary["flagged_any"]) == (
        1,
        1,
        1,
        1,
    )
    assert summary["steps_scored"] == 7 and summary["seconds_per_step"] > 0
    assert summary["config"]["step_scorer_kwargs"] == json.loads(kwargs)
    # Extra fields are kept; the printed table holds the same numbers.
    assert (
        by_id["ducks-slip"]["generator"] == "handmade"
        and by_id["ducks-slip"]["final_answer_correct"] is False
    )
    # Perfect on 3 solutions is not certainty: F1's interval is wide (and, by Jeffreys' boundary rule, ends at 1).
    low, high = summary["f1_interval"]
    assert 0 < low < 0.6 and high == 1.0
    printed = capsys.readouterr().out
    assert (
        f"| reference | 3 (2 / 1) | 100.0 % | 100.0 % | 100.0 % ({100 * low:.1f}–{100 * high:.1f}) | 100.0 % "
        "| 2 / 0 / 0 / 0 |" in printed
    )
    assert "1 of 4 solutions found no gold problem: skipped" in printed
    # What the verifier read: one prose step ("Janet has 16 eggs and uses 3 ..."), nothing garbled.
    assert (
        summary["scorer_read"]["counts"] | {"steps": 7, "no_equation": 1, "garbled": 0}
        == summary["scorer_read"]["counts"]
    )
    assert "7 steps, 1 with no equation (14.3 %), 0 with a garbled one" in printed


def test_a_garbled_step_is_flagged_where_it_is_and_counted(tmp_path, capsys):
    """Numbers with the operators missing (``16 3 4 = 9``) are a false equation, not prose a rule-based
    scorer passes over."""
    garbled = {
        **SOLUTIONS[1],
        "id": "ducks-garbled",
        "steps": ["Janet sells 16 3 4 = 9 eggs.", "She makes 9 * 2 = $18."],
    }
    garbled["label"], garbled["final_answer_correct"] = 0, False
    data, gold = write_jsonl(tmp_path / "s.jsonl", [garbled]), write_jsonl(tmp_path / "g.jsonl", GOLD)
    for scorer in ("reference", "arithmetic"):
        summary = run_score_steps(ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer=scorer))[
            "summary"
        ]
        assert (summary["exact"], summary["scorer_read"]["counts"]["garbled"]) == (1, 1), scorer


def test_predictions_follow_the_flag_rule_and_metrics_follow_predictions(files):
    data, gold = files
    cfg = ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer="arithmetic")
    result = run_score_steps(cfg)
    rows, summary = result["rows"], result["summary"]
    # Without gold columns needed, the problem without gold is scored too.
    assert (
        all(row.prediction is not None for row in rows)
        and summary["without_gold"] == "scored without gold columns"
    )
    for row in rows:
        assert row.prediction == first_flag(row.flags) and len(row.scores) == len(row.solution.steps)
    expected = first_error_metrics([r.solution.label for r in rows], [r.prediction for r in rows])
    assert {k: summary[k] for k in expected} == expected


def test_the_summary_breaks_down_by_generator(tmp_path, capsys):
    """Rows naming their ``generator``: the same metrics (exact / early / late / missed, false blame,
    µs per step) per generator, which add up to the whole, in summary.json and the printed table."""
    solutions = [{**s, "generator": "model-a" if i % 2 else "model-b"} for i, s in enumerate(SOLUTIONS)]
    data, gold = write_jsonl(tmp_path / "s.jsonl", solutions), write_jsonl(tmp_path / "g.jsonl", GOLD)
    argv = ["score-steps", "--data", str(data), "--gold", str(gold), "--step_scorer", "arithmetic"]
    assert main([*argv, "--output_dir", str(tmp_path / "out")]) == 0
    summary, _ = read_outputs(tmp_path / "out")
    groups = summary["by_generator"]
    assert sorted(groups) == ["model-a", "model-b"]
    for key in ("rows", "exact", "early", "late", "missed", "false_blame", "steps_scored"):
        assert sum(group[key] for group in groups.values()) == summary[key]
    assert summary["missed"] == summary["never"]
    assert all(group["seconds_per_step"] > 0 for group in groups.values())
    printed = capsys.readouterr().out
    assert "| exact / early / late / missed | false blame | per step |" in printed
    assert "| arithmetic, model-a | 2 (" in printed and "| arithmetic, model-b | 2 (" in printed
    # without a generator field: no breakdown
    plain = run_score_steps(
        ScoreStepsConfig(
            data=str(
                write_jsonl(
                    tmp_path / "p.jsonl",
                    [{k: v for k, v in s.items() if k != "generator"} for s in SOLUTIONS],
                )
            ),
            gold=str(gold),
            step_scorer="arithmetic",
        )
    )
    assert plain["summary"]["by_generator"] == {}


class ThresholdScorer:
    """A registered non-rule scorer: 0.2 for a step stating '= 8' (a wrong count), else 0.9."""

    def __call__(self, prompts, steps, **columns):
        assert "solution" in columns or prompts[0].startswith("Tom")  # gold columns when found
        return [[0.2 if "= 8" in s else 0.9 for s in sample] for sample in steps]


def test_a_non_rule_scorer_is_flagged_below_flag_below(files, monkeypatch):
    monkeypatch.setitem(STEP_SCORERS._entries, "threshold_test", ThresholdScorer)
    data, gold = files
    result = run_score_steps(ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer="threshold_test"))
    predictions = {row.solution.id: row.prediction for row in result["rows"]}
    assert predictions == {"ducks-gold-route": -1, "ducks-slip": 1, "robe-slip": -1, "apples": -1}
    assert result["summary"]["never"] == 1 and result["summary"]["error_acc"] == 0.5
    strict = run_score_steps(
        ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer="threshold_test", flag_below=0.95)
    )
    assert {row.prediction for row in strict["rows"]} == {0}


def test_flag_below_with_a_rule_based_scorer_is_one_warning(files, caplog):
    """A rule-based scorer flags by its full score: a moved --flag_below changes nothing, so say so."""
    data, gold = files
    with caplog.at_level("WARNING", logger="psgrpo"):
        moved = run_score_steps(
            ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer="reference", flag_below=0.9)
        )
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert (
        len(warnings) == 1 and "--flag_below 0.9 is not used" in warnings[0] and "'reference'" in warnings[0]
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="psgrpo"):
        default = run_score_steps(ScoreStepsConfig(data=str(data), gold=str(gold), step_scorer="reference"))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.prediction for r in moved["rows"]] == [r.prediction for r in default["rows"]]


BAD_CASES = [
    ([], "--data is required"),
    (["--data", "{missing}"], "--data .*missing.jsonl' is not a file"),
    (["--data", "{bad_json}"], r"bad.jsonl, line 2: not valid JSON"),
    (["--data", "{bad_label}"], r"bad_label.jsonl, line 1, field 'label': expected an integer from -1"),
    (["--data", "{empty}"], "holds no solution"),
    (["--data", "{data}", "--step_scorer", "reference"], "reads the gold worked solution.*pass --gold"),
    (["--data", "{data}", "--gold", "{other_gold}", "--step_scorer", "arithmetic"], "no problem of --data"),
    (["--data", "{data}", "--step_scorer_kwargs", '{{"weight": 1}}'], "step_scorer_kwargs.*weight"),
    (["--data", "{data}", "--step_scorer", "prm"], "step_scorer_kwargs.*model"),
    (
        ["--data", "{data}", "--step_scorer", "prm", "--step_scorer_kwargs", '{{"model": "m", "format": 3}}'],
        "format.*must be a string",
    ),
    (["--data", "{data}", "--flag_below", "nan"], "flag_below"),
    (  # was a minute of Hub retries, then transformers' "Repo id must be in the form 'repo_name'"
        ["--data", "{data}", "--step_scorer", "prm", "--step_scorer_kwargs", '{{"model": "path/to/prm"}}'],
        r"step_scorer_kwargs\['model'\] path/to/prm: no such checkpoint directory",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD_CASES)
def test_bad_input_is_one_line_and_writes_nothing(files, tmp_path, monkeypatch, capsys, args, message):
    data, _ = files
    paths = {
        "data": data,
        "missing": tmp_path / "missing.jsonl",
        "bad_json": write_jsonl(tmp_path / "bad.jsonl", [SOLUTIONS[0], '{"id": 3,']),
        "bad_label": write_jsonl(tmp_path / "bad_label.jsonl", [{**SOLUTIONS[0], "label": 5}]),
        "empty": write_jsonl(tmp_path / "empty.jsonl", []),
        "other_gold": write_jsonl(
            tmp_path / "other.jsonl", [{"question": "What is 6 times 7?", "answer": "#### 42"}]
        ),
    }
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    out = tmp_path / "out"
    argv = ["score-steps", *(a.format(**paths) for a in args), "--output_dir", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    error_lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert len(error_lines) == 1 and "Traceback" not in err
    assert re.search(message, error_lines[0]), error_lines[0]
    assert not out.exists()


@pytest.mark.slow
def test_real_correct_solutions_all_find_their_gold(gsm8k_dir, tmp_path):
    labels = gsm8k_dir.parent / "gsm8k_step_labels" / "correct_dev.jsonl"  # beside GSM8K in ../shared
    if not labels.is_file() or not (gsm8k_dir / "test.jsonl").is_file():
        pytest.skip(f"no labelled GSM8K solutions at {labels} or no GSM8K test split in {gsm8k_dir}")
    cfg = ScoreStepsConfig(
        data=str(labels),
        gold=str(gsm8k_dir / "test.jsonl"),
        step_scorer="reference",
        step_scorer_kwargs={"correct_weight": 0.0, "reference_weight": 1.0},
        output_dir=str(tmp_path / "out"),
    )
    summary = run_score_steps(cfg)["summary"]
    assert summary["solutions_without_gold"] == 0 and summary["rows"] == summary["correct_rows"] > 900
    assert summary["error_acc"] is None and summary["f1"] is None  # no wrong solution: undefined
    assert 0.0 <= summary["correct_acc"] <= 1.0 and summary["false_blame"] == round(
        (1 - summary["correct_acc"]) * summary["rows"]
    )
