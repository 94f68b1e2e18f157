"""Tests for psgrpo.ps.scorers.flags: the one definition of a flagged step, per kind of scorer."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.ps.scorers import ArithmeticVerifier, ReferenceVerifier
from psgrpo.ps.scorers.base import StepScoreError
from psgrpo.ps.scorers.flags import first_flag, full_score, is_rule_based, score_and_flag

QUESTION = (
    "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells each egg for $2. How much?"
)
GOLD = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18"
STEPS = [
    "Janet's ducks are busy every morning.",  # no equation: neutral
    "She sells 16 - 3 - 4 = 9 eggs a day.",  # right, on the gold path
    "She makes 9 * 2 = $20 every day.",  # calculation slip
]


class FixedScores:
    """A non-rule scorer returning given scores (a stand-in for a PRM)."""

    def __init__(self, scores):
        self.scores = scores

    def __call__(self, prompts, steps, **columns):
        return self.scores


@given(st.lists(st.booleans(), max_size=12))
def test_first_flag_is_the_first_true_or_minus_one(flags):
    index = first_flag(flags)
    if index == -1:
        assert not any(flags)
    else:
        assert flags[index] and not any(flags[:index])


def test_non_rule_scorer_flags_below_threshold():
    scorer = FixedScores([[0.9, 0.5, 0.49, 0.1]])
    result = score_and_flag(scorer, [QUESTION], [["a", "b", "c", "d"]], flag_below=0.5)
    assert result.flags == [[False, False, True, True]] and result.neutral is None
    assert first_flag(result.flags[0]) == 2
    assert score_and_flag(scorer, [QUESTION], [["a", "b", "c", "d"]], flag_below=0.95).flags == [[True] * 4]


def test_non_rule_scores_are_validated():
    with pytest.raises(StepScoreError, match="expected a finite number"):
        score_and_flag(FixedScores([[0.5, math.nan]]), [QUESTION], [["a", "b"]])


def test_arithmetic_flags_a_wrong_equation_and_never_a_neutral_step():
    scorer = ArithmeticVerifier(necessary_weight=0.0, neutral_score=0.0)  # neutral below the full score
    result = score_and_flag(scorer, [QUESTION], [STEPS])
    assert is_rule_based(scorer) and full_score(scorer) == pytest.approx(0.6)
    assert result.neutral == [[True, False, False]]
    assert result.scores[0][0] == 0.0  # the scorer's real neutral score comes back, not NaN
    assert result.flags == [[False, False, True]]
    assert scorer.neutral_score == 0.0  # the scorer itself is not changed


def test_arithmetic_with_its_default_weights_needs_the_final_answer():
    # No final answer in the text: no step is necessary, so every equation scores 0.6 < 1.0 and is flagged.
    scorer = ArithmeticVerifier()
    assert score_and_flag(scorer, [QUESTION], [STEPS[:2]]).flags == [[False, True]]
    with_answer = [*STEPS[:2], "She makes 9 * 2 = $18 every day.\n#### 18"]
    assert score_and_flag(scorer, [QUESTION], [with_answer]).flags == [[False, False, False]]


def test_reference_reads_gold_columns_and_shares_its_counts():
    scorer = ReferenceVerifier(correct_weight=0.0, reference_weight=1.0)
    columns = {"solution": [GOLD], "answer": ["18"]}
    result = score_and_flag(scorer, [QUESTION], [STEPS], columns)
    assert full_score(scorer) == 1.0
    assert result.flags == [[False, False, True]]  # $20 is not a gold value
    counts = scorer.pop_counts()  # the copy's counting reached the scorer's own counts
    assert counts["steps"] == 3 and counts["no_equation"] == 1


def test_reference_flags_the_claim_it_blames_in_words_and_not_a_neutral_step():
    """A step without equations is flagged when 'reference' judges it (a claim after the last equation, short of
    the gold answer: score 0), and not when it is merely unread (neutral score)."""
    scorer = ReferenceVerifier(correct_weight=0.0, reference_weight=1.0)
    gold = "They have 35-18-3=<<35-18-3=14>>14 left.\nEach of 7 kids gets 14/7=<<14/7=2>>2\n#### 2"
    columns = {"answer": ["2", "2"], "solution": [gold, gold]}
    short = ["They have 35 - 18 - 3 = 14 s'mores left.", "So each kid can have 14 S'mores."]
    done = ["They have 35 - 18 - 3 = 14 s'mores left.", "We need to share them.", "14 / 7 = 2 each."]
    result = score_and_flag(scorer, ["q", "q"], [short, done], columns)
    assert result.scores == [[1.0, 0.0], [1.0, 0.5, 1.0]]
    assert result.flags == [[False, True], [False, False, False]]
    assert result.neutral == [[False, False], [False, True, False]]
