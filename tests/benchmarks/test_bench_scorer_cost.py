"""benchmarks/scorers/bench_scorer_cost.py: scores every step of a labelled file joined to its gold rows,
and leaves out a solution whose problem has no gold row."""

from __future__ import annotations

import json


def test_times_every_step_of_the_solutions_that_have_gold(tmp_path, import_benchmark, capsys):
    bench = import_benchmark("scorers.bench_scorer_cost")
    question = "Janet's ducks lay 16 eggs per day. She eats three and bakes with four. How many are left?"
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"question": question, "answer": "16 - 3 - 4 = <<16-3-4=9>>9\n#### 9"}) + "\n")
    data = tmp_path / "data.jsonl"
    rows = [
        {
            "id": 0,
            "problem": question,
            "steps": ["3 + 4 = 7 eggs used.", "16 - 7 = 9 eggs left."],
            "label": -1,
        },
        {"id": 1, "problem": "A question with no gold row.", "steps": ["2 + 2 = 4"], "label": -1},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = bench.main(["--data", str(data), "--gold", str(gold), "--repeats", "1"])
    assert [r["scorer"] for r in results] == ["arithmetic", "reference 0/1"]
    assert all(r["first_us"] > 0 and r["cached_us"] > 0 for r in results)
    assert "1 solutions with gold, 2 steps" in capsys.readouterr().out
