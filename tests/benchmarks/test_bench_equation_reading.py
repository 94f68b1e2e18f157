"""benchmarks/scorers/bench_equation_reading.py: recall and precision of equation reading on hand-made
GSM8K-style gold lines, counted as its docstring defines them."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest


@pytest.fixture(scope="module")
def bench(import_benchmark):
    return import_benchmark("scorers.bench_equation_reading")


def test_annotations_and_the_text_a_model_writes(bench):
    line = "She sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs and makes 9 * 2 = $<<9*2=18>>18 a day."
    assert bench.strip_annotations(line) == "She sells 16 - 3 - 4 = 9 eggs and makes 9 * 2 = $18 a day."
    assert bench.annotations(line) == [
        bench.Annotation(Fraction(9), True),
        bench.Annotation(Fraction(18), True),
    ]
    # the value named without an '=' in the text: left out of the recall denominator
    assert bench.annotations("So she has <<16-3=13>>13 left.") == [bench.Annotation(Fraction(13), False)]


def test_hits_misses_false_reads_and_unannotated_lines_are_counted_apart(bench):
    solutions = [
        "Janet has 16 eggs - 3 eggs = <<16-3=13>>13 eggs left.\n"  # read with units: a hit
        "So she has <<13-4=9>>9 eggs to sell.\n"  # no '=' in the text: left out
        "She makes 9 x $2 = $<<9*2=18>>18 a day.\n#### 18",
        "He works 5 days a week for 3 weeks, 5 * 3 = <<5*3=15>>15 days.\n"  # the prose part is not read
        "The pool holds 4 gallons/minute ÷ 2 = <<4/2=2>>2 gallons.\n"  # a rate unit: a hit
        "24/3 = 8.\n#### 8",  # an equation on a line without annotations: counted apart
        "It costs 12 pens + 10 pens = <<12+10=22>>22 pens, and 3 + 4 = 8 more.\n#### 22",  # a false read
    ]
    counts = bench.measure(solutions)
    assert counts.lines == 7
    assert (counts.annotations, counts.with_equals, counts.without_equals) == (6, 5, 1)
    assert counts.hits == 5 and counts.recall == 1.0
    assert counts.reads == 6 and counts.true_reads == 5 and len(counts.false_reads) == 1
    assert counts.false_reads[0][0] == "3 + 4 = 8"
    assert counts.precision == pytest.approx(5 / 6)
    assert [(read, holds) for read, _, holds in counts.unlabelled_reads] == [("24/3 = 8", True)]


def test_a_miss_is_listed_and_lowers_recall(bench):
    counts = bench.measure(["x = 25 - 5 = <<25-5=20>>20 years.\n2x + 3 = <<2*10+3=23>>23\n#### 20"])
    assert counts.with_equals == 2 and counts.hits == 1 and counts.recall == 0.5
    assert counts.misses == ["2x + 3 = 23"]


def test_the_script_prints_a_markdown_table_per_split(bench, tmp_path, capsys):
    rows = [{"question": "q", "answer": "He has 2 pens + 3 pens = <<2+3=5>>5 pens.\n#### 5"}]
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    bench.main(["--gsm8k-dir", str(tmp_path), "--splits", "test"])
    out = capsys.readouterr().out
    assert "| test | 1 | 1 | 1 | 1.0000 (1) | 0 | 0 | 1 | 0 | 1.0000 | 0 (0) |" in out
    with pytest.raises(SystemExit, match="train split not found"):
        bench.main(["--gsm8k-dir", str(tmp_path), "--splits", "train"])


def test_whole_solutions_are_read_as_one_step_and_their_failures_counted(bench):
    solutions = [
        "3 x 4 = <<3*4=12>>12 pens\n(12 + 1) x 2 = <<13*2=26>>26 pens\n#### 26",  # two lines, no product
        "He has 7 + 5 = <<7+5=13>>13 eggs\n#### 13",  # a typo in the gold text: it fails
    ]
    whole = bench.measure_whole(solutions)
    assert (whole.solutions, whole.equations) == (2, 3)
    assert whole.failures == [("7 + 5 = 13", "He has 7 + 5 = 13 eggs")]
