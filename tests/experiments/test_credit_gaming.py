"""experiments/credit_gaming.py: the relative-credit tables of docs/robustness.md, and the raw step scores."""

from __future__ import annotations

import re

import pytest

from psgrpo.ps.credit_gaming import PROBLEMS, SCORERS, credit_table, gamed_variants

CELL = re.compile(r"\*\*([+-]\d+\.\d{3})\*\*|([+-]\d+\.\d{3})")


@pytest.fixture(scope="module")
def report(import_experiment):
    return import_experiment("credit_gaming")


def cells(line: str) -> list[tuple[float, bool]]:
    """The numeric cells of one table row: (value, printed bold)."""
    return [(float(bold or plain), bool(bold)) for bold, plain in CELL.findall(line)]


@pytest.mark.slow
def test_tables_hold_each_rows_relative_credit_bold_exactly_when_gaming_pays(report, char_tokenizer):
    scorers = {name: SCORERS[name] for name in ("arithmetic", "prm_gullible")}
    rows = credit_table(char_tokenizer, problems=PROBLEMS, scorers=scorers, modes=["step", "reward_to_go"])
    text = report.markdown_tables(rows, problem=1)
    assert [line for line in text.splitlines() if line.startswith("**")] == [
        "**arithmetic**",
        "**prm_gullible**",
    ]
    tables = text.split("**prm_gullible**")
    for table, scorer in zip(tables, scorers, strict=True):
        for variant in gamed_variants(PROBLEMS[1]):
            (line,) = [line for line in table.splitlines() if line.startswith(f"| {variant} |")]
            expected = [
                next(
                    r.relative
                    for r in rows
                    if (r.problem, r.scorer, r.mode, r.variant) == (1, scorer, mode, variant)
                )
                for mode in ("step", "reward_to_go")
            ]
            assert cells(line) == [(round(v, 3), v > 1e-3) for v in expected]
    # reward_to_go pays the arithmetic verifier for splitting the Tom problem's steps: a bold cell
    assert "**+" in tables[0]


def test_raw_prints_each_variants_steps_and_the_verifiers_scores(report, capsys):
    report.main(["--raw", "--problem", "0"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + len(gamed_variants(PROBLEMS[0]))
    assert "| honest (control) | 2 | 1.0, 1.0 |" in lines
    assert "| merge: no markers at all | 1 |" in next(line for line in lines if "no markers" in line)


def test_a_problem_index_out_of_range_is_a_usage_error(report, capsys):
    with pytest.raises(SystemExit) as exit_info:
        report.main(["--problem", str(len(PROBLEMS))])
    assert exit_info.value.code == 2
    assert "--problem" in capsys.readouterr().err


@pytest.mark.slow
def test_the_full_report_prints_every_scorer_and_its_largest_cell(report, capsys):
    report.main([])
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("**")] == [f"**{name}**" for name in SCORERS]
    values = [value for line in out.splitlines() if line.startswith("| ") for value, _ in cells(line)]
    assert len(values) == len(SCORERS) * len(gamed_variants(PROBLEMS[0])) * 4
    largest = float(re.search(r"largest relative credit over all problems: ([+-]\d+\.\d{3})", out).group(1))
    assert largest >= max(values) > 0  # over both problems, so at least problem 0's largest cell
