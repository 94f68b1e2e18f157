"""psgrpo.eval.probe_quality end to end on a tiny random model and a few arith problems."""

from __future__ import annotations

import math
import random

import pytest

from psgrpo.data.arith import split_problems


@pytest.fixture(scope="module")
def probe_quality():
    from psgrpo.eval import probe_quality

    return probe_quality


def test_cases_are_gold_then_one_wrong_step_copies(probe_quality):
    problems = split_problems("test", n=6, variant="arith-hard")
    cases = probe_quality.build_cases(problems, 2, random.Random(0))
    assert len(cases) == 18
    for gold, *copies in (cases[i : i + 3] for i in range(0, 18, 3)):
        assert not any(gold.wrong_steps) and not gold.error_chars
        for copy in copies:
            assert sum(copy.wrong_steps) == 1 and len(copy.error_chars) == 1
            assert copy.completion[copy.error_chars[0]].isdigit() and copy.answer == gold.answer
            assert [copy.completion[e - 1] for e in copy.step_ends] == ["\n"] * len(copy.step_ends)


def test_measure_reports_every_boundary_kind_and_form(probe_quality, tiny_model, char_tokenizer):
    cases = probe_quality.build_cases(split_problems("test", n=4), 2, random.Random(0))
    report = probe_quality.measure(tiny_model.eval(), char_tokenizer, cases, group_size=3)
    assert report["groups"] == 4 and report["wrong_steps"] == 8
    assert report["mean_abs_A_scaled"] > 0 and report["mean_abs_A_unscaled"] > 0
    step_end = report["step_end"]
    assert step_end["places"]["step_end"] == 1.0
    assert step_end["segments"] == sum(len(c.step_ends) for c in cases) and step_end["wrong_segments"] == 8
    for kind in probe_quality.BOUNDARY_KINDS:
        for form in probe_quality.DELTA_FORMS:
            stats = report[kind][form]
            assert stats["mean_abs_alpha_delta"] >= 0
            if "auc" in stats:
                assert 0.0 <= stats["auc"] <= 1.0
        assert math.isclose(sum(report[kind]["places"].values()), 1.0) or report[kind]["segments"] == 0
    assert report["entropy_snapped"]["places"]["inside_number"] == 0.0
    assert "| step_end | prob |" in probe_quality.markdown(report)


def test_step_end_cuts_follow_each_step_line(probe_quality, tiny_model, char_tokenizer):
    cases = probe_quality.build_cases(split_problems("test", n=2), 1, random.Random(1))
    probe_quality._tokenize(char_tokenizer, cases)
    probed = probe_quality.probe(tiny_model.eval(), char_tokenizer, cases, "step_end")
    assert probed.cut_chars == [c.step_ends for c in cases]
    assert [w for row in probed.wrong for w in row] == [w for c in cases for w in c.wrong_steps]
    assert all(row[-1] and not any(row[:-1]) for row in probed.last)
