"""psgrpo.diagnostics.probe_quality end to end on a tiny random model and a few arith problems."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from psgrpo.data.arith import split_problems


@pytest.fixture(scope="module")
def probe_quality():
    from psgrpo.diagnostics import probe_quality

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


def test_gold_suffix_is_the_geometric_mean_probability_of_the_rest_of_the_gold_solution(
    probe_quality, tiny_model, char_tokenizer
):
    import torch

    problems = split_problems("test", n=3, variant="arith-hard")
    cases = probe_quality.build_cases(problems, 1, random.Random(0))
    probe_quality._tokenize(char_tokenizer, cases)
    model = tiny_model.eval()
    result = probe_quality.gold_suffix_confidence(model, char_tokenizer, cases, chunk_size=5)
    steps = [len(c.step_ends) for c in cases]
    assert result.confidence.shape == (len(cases), 1 + max(steps))
    for i, n in enumerate(steps):  # C_0..C_K filled, NaN beyond
        assert torch.isfinite(result.log_confidence[i, : n + 1]).all()
        assert torch.isnan(result.log_confidence[i, n + 1 :]).all()
    assert ((result.confidence > 0) & (result.confidence <= 1))[torch.isfinite(result.confidence)].all()

    def by_hand(context: str, suffix: str) -> float:  # one unpadded forward of prompt + context + suffix
        prompt = char_tokenizer(cases[1].prompt, add_special_tokens=False)["input_ids"]
        head = prompt + char_tokenizer(context, add_special_tokens=False)["input_ids"]
        tail = char_tokenizer(suffix, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([head + tail])).logits[0].float()
        logps = torch.log_softmax(logits[len(head) - 1 : -1], dim=-1)
        return logps.gather(1, torch.tensor(tail)[:, None]).mean().item()

    wrong = cases[1]  # the one-wrong-step copy of problem 0: its prefix, the gold text after it
    k = wrong.wrong_steps.index(True) + 1
    gold_end = probe_quality.judge_steps(wrong.gold).ends[k - 1]
    expected = by_hand(wrong.completion[: wrong.step_ends[k - 1]], wrong.gold[gold_end:])
    assert result.log_confidence[1, k].item() == pytest.approx(expected, abs=1e-5)
    assert result.log_confidence[1, 0].item() == pytest.approx(by_hand("", wrong.gold), abs=1e-5)
    assert result.log_confidence[0, 0] == result.log_confidence[1, 0]  # same prompt, same gold text

    first_step_gone = dataclasses.replace(cases[0], gold=cases[0].gold[cases[0].step_ends[0] :])
    with pytest.raises(ValueError, match="case 0: .* needs the same steps"):
        probe_quality.gold_suffix_confidence(model, char_tokenizer, [first_step_gone])
