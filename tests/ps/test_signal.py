"""psgrpo.ps.signal: the PS metrics, the scorer's counts and the ``auto`` advantage mode."""

from __future__ import annotations

import math

import pytest

from psgrpo.ps.scorers import build_step_scorer
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.signal import resolve_process_mode, scorer_counts, step_metrics


def test_step_metrics_without_counts_keep_the_old_keys():
    metrics = step_metrics([[1.0, 0.0], None, [0.5]], wrong_threshold=0.5)
    assert metrics == pytest.approx(
        {
            "ps/steps_per_completion": 1.5,
            "ps/step_score_mean": 0.5,
            "ps/frac_steps_wrong": 1 / 3,
            "ps/scorer_fallbacks": 1.0,
        }
    )


def test_step_metrics_tokens_per_step_and_verifier_shares():
    counts = [
        {"steps": 6, "no_equation": 1, "noop": 1, "unnecessary": 2, "unparsed_equations": 3},
        None,  # a process whose scorer counts nothing is skipped
        {"steps": 4, "no_equation": 1, "noop": 0, "unnecessary": 0, "unparsed_equations": 0},
    ]
    metrics = step_metrics([[1.0] * 3, [1.0] * 2], 0.5, step_tokens=[[10, 20, 30], [5, 5]], counts=counts)
    assert metrics["ps/tokens_per_step"] == pytest.approx(70 / 5)
    assert metrics["ps/frac_steps_no_equation"] == pytest.approx(0.2)
    assert metrics["ps/frac_steps_noop"] == pytest.approx(0.1)
    assert metrics["ps/frac_steps_unnecessary"] == pytest.approx(0.2)
    assert metrics["ps/unparsed_equations"] == 3.0
    empty = step_metrics(
        [[]],
        0.5,
        step_tokens=[[]],
        counts=[{"steps": 0, "no_equation": 0, "noop": 0, "unnecessary": 0, "unparsed_equations": 0}],
    )
    assert math.isnan(empty["ps/tokens_per_step"]) and math.isnan(empty["ps/frac_steps_noop"])


def test_scorer_counts_come_from_the_verifier_only():
    verifier = ArithmeticVerifier()
    verifier(
        ["Q"], [["Step 1: 7 + 5 = 12\n", "Step 2: 12 * 1 = 12\n", "Step 3: 12 - 3 = 9\n<answer>9</answer>"]]
    )
    assert scorer_counts(verifier) == {
        "steps": 3,
        "no_equation": 0,
        "noop": 1,
        "unnecessary": 1,
        "unparsed_equations": 0,
    }
    assert (
        scorer_counts(build_step_scorer(lambda prompts, steps, **kw: [[1.0] * len(s) for s in steps])) is None
    )


@pytest.mark.parametrize(
    ("scorer", "expected"),
    [
        (ArithmeticVerifier(), "step"),
        (build_step_scorer("arithmetic"), "step"),
        (build_step_scorer(ArithmeticVerifier()), "step"),  # a verifier instance passed as a callable
        (build_step_scorer(lambda prompts, steps, **kw: []), "min"),
    ],
)
def test_auto_mode_depends_on_the_scorer(scorer, expected):
    assert resolve_process_mode("auto", scorer) == expected
    assert resolve_process_mode("reward_to_go", scorer) == "reward_to_go"
