"""psgrpo.ps.scorers.reference: the verifier plus the gold solution's intermediate values."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainer_helpers import length_reward, tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset, split_problems, with_wrong_step
from psgrpo.ps.credit_gaming import HOSTILE_STEPS
from psgrpo.ps.scorers import STEP_SCORERS, build_step_scorer, check_scorer_columns
from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.ps.scorers.reference import (
    ReferenceCounts,
    ReferenceVerifier,
    on_reference,
    question_numbers,
    reference_values,
)
from psgrpo.ps.signal import resolve_process_mode
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

GOLD = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"


def score(steps: list[str], solution: str = GOLD, answer: str = "9", **weights: float) -> list[float]:
    return ReferenceVerifier(**weights)(["q"], [steps], solution=[solution], answer=[answer])[0]


# --------------------------------------------------------------------------- reference values


def test_reference_values_are_the_gold_path_results():
    assert reference_values(GOLD, "9") == Counter({Fraction(12): 1, Fraction(9): 1})


def test_a_distractor_the_gold_solution_computes_is_not_a_reference_value():
    gold = "Step 1: 8 * 2 = 16\nStep 2: 18 + 7 = 25\nStep 3: 16 - 7 = 9"
    assert reference_values(gold, "9") == Counter({Fraction(16): 1, Fraction(9): 1})


def test_repeated_values_on_the_path_count_twice():
    gold = "Step 1: 8 * 2 = 16\nStep 2: 16 - 7 = 9\nStep 3: 9 * 2 = 18\nStep 4: 18 - 9 = 9"
    assert reference_values(gold, "9")[Fraction(9)] == 2


def test_gsm8k_annotations_give_reference_values():
    gold = (
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72"
    )
    assert reference_values(gold, "72") == Counter({Fraction(24): 1, Fraction(72): 1})


def test_a_solution_without_equations_gives_no_reference_values():
    assert reference_values("Just count them: nine.", "9") == Counter()
    assert reference_values(GOLD, None) == Counter()


# --------------------------------------------------------------------------- on reference


def test_a_right_step_claims_a_value_once():
    verdicts = score_steps(["Step 1: 7 + 5 = 12", "Step 2: 7 + 5 = 12", "Step 3: 12 - 3 = 9"], "9")
    assert on_reference(verdicts, reference_values(GOLD, "9")) == [True, False, True]


def test_noops_and_steps_without_equations_are_off_reference():
    verdicts = score_steps(
        ["Step 1: 7 + 5 = 12", "Step 2: 12 + 0 = 12", "So far so good.", "Step 3: 12 - 3 = 9"], "9"
    )
    assert on_reference(verdicts, reference_values(GOLD, "9")) == [True, False, False, True]


# --------------------------------------------------------------------------- scores


def test_right_logic_and_calculation_errors_score_apart():
    assert score(["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"]) == [1.0, 1.0, 0.5]
    # logic error: a wrong operation with true arithmetic (the arithmetic verifier gives it 1.0)
    assert score(["Step 1: 7 + 5 = 12", "Step 2: 12 + 3 = 15", "<answer>15</answer>"]) == [1.0, 0.5, 0.5]
    # calculation error, and the step after it, whose arithmetic holds but carries the wrong value
    assert score(["Step 1: 7 + 5 = 13", "Step 2: 13 - 3 = 10"]) == [0.0, 0.5]


def test_weights_and_neutral_score():
    steps = ["Step 1: 7 + 5 = 12", "Step 2: 12 + 3 = 15", "Hmm."]
    assert score(steps, correct_weight=0.2, reference_weight=0.8, neutral_score=0.1) == pytest.approx(
        [1.0, 0.2, 0.1]
    )


def test_every_gold_step_of_arith_hard_scores_one_and_the_unused_distractor_does_not():
    verifier = ReferenceVerifier()
    distractors = 0
    for problem in split_problems("test", n=50, variant="arith-hard"):
        lines = [line for line in problem.solution.splitlines() if line.startswith("Step")]
        assert len(lines) == len(problem.chain)
        scores = verifier(["q"], [lines], solution=[problem.solution], answer=[str(problem.answer)])[0]
        # a used step is true and on the gold path (1.0); the unused distractor is true arithmetic off it (0.5)
        assert scores == [1.0 if step.used else 0.5 for step in problem.chain], problem.solution
        distractors += sum(not step.used for step in problem.chain)
    assert distractors > 0  # the 50 problems hold distractor steps, so the 0.5 case is checked


def test_the_wrong_step_of_a_corrupted_gold_solution_scores_below_one():
    verifier = ReferenceVerifier()
    checked = 0
    for problem in split_problems("test", 40, variant="arith-hard"):
        index = next(k for k, step in enumerate(problem.chain) if step.used)
        wrong = with_wrong_step(problem, index, (problem.chain[index].result + 1) % 100)
        if wrong is None:
            continue
        lines = [line for line in wrong.solution.splitlines() if line.startswith("Step")]
        scores = verifier(["q"], [lines], solution=[problem.solution], answer=[str(problem.answer)])[0]
        assert scores[index] < 1.0
        checked += 1
    assert checked >= 20


GOLD3 = "Step 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\nStep 3: 9 * 2 = 18\n<answer>18</answer>"


def test_a_solution_that_stops_short_is_off_reference_at_its_last_step():
    short = ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9 <answer>9</answer>"]  # leaves out "doubles"
    assert score(short, GOLD3, "18") == [1.0, 0.5]
    assert score(short, GOLD3, "18", final_step_reaches_answer=False) == [1.0, 1.0]  # the old rule


def test_a_wrong_conclusion_of_its_own_is_blamed_at_the_last_step_with_equations():
    """A last step without equations that states a wrong answer (``So the answer is 9.``) after
    reasoning on the gold path: the reasoning stopped short at its last step with equations, which
    takes the blame (as people label real solutions: 5 more exact on wrong_dev.jsonl than blaming
    the conclusion); ``blame_stop="conclusion"`` blames the conclusion, with score 0, instead."""
    short = ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"]
    assert score(short, GOLD3, "18") == [1.0, 0.5, 0.5]
    assert score(short[:2] + ["So the answer is 9."], GOLD3, "18") == [1.0, 0.5, 0.5]
    assert score(short, GOLD3, "18", blame_stop="conclusion") == [1.0, 1.0, 0.0]
    assert score(short[:2] + ["So the answer is 9."], GOLD3, "18", blame_stop="conclusion") == [1.0, 1.0, 0.0]
    assert score(short, GOLD3, "18", final_step_reaches_answer=False) == [1.0, 1.0, 0.5]  # the old rule
    # a conclusion that states the gold answer: the reasoning reached it in words the verifier does not read
    worded = ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "Twice that makes 18, so the answer is 18."]
    assert score(worded, GOLD3, "18") == [1.0, 1.0, 0.5]
    right = ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "Step 3: 9 * 2 = 18", "<answer>18</answer>"]
    assert score(right, GOLD3, "18") == [1.0, 1.0, 1.0, 0.5]  # the last step *with equations* is judged
    verifier = ReferenceVerifier()
    verifier(["q", "q"], [short, right], solution=[GOLD3, GOLD3], answer=["18", "18"])
    counts = verifier.pop_counts()
    assert (counts["stop_short"], counts["off_reference"]) == (1, 1)  # its last step with equations is off
    # after a step that left the gold path, the blame is already there: the conclusion stays neutral
    logic = ["Step 1: 7 + 5 = 12", "Step 2: 12 + 3 = 15", "So the answer is 15."]
    assert score(logic, GOLD3, "18") == [1.0, 0.5, 0.5]


def test_the_final_rule_needs_a_reference_and_a_gold_answer():
    short = ["Step 1: 7 + 5 = 12"]
    plain = score(short, "no equations here", "18", final_step_reaches_answer=False)
    assert (
        score(short, "no equations here", "18") == plain
    )  # no reference values: the rule has nothing to say
    verdicts = score_steps(short, None)
    assert on_reference(verdicts, reference_values(GOLD3, "18"), None) == [True]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["Step: 7 + 5 = 12", "Step: 12 - 3 = 9", "Step: 9 * 2 = 18", "Step: 12 + 3 = 15",
                                 "Step: 9 - 1 = 8", "no equation", "Step: 18 + 0 = 18"]), max_size=6))  # fmt: skip
def test_the_final_rule_only_ever_clears_the_last_equation_step(steps):
    verdicts = score_steps(steps, None)
    reference = reference_values(GOLD3, "18")
    plain, final = on_reference(verdicts, reference), on_reference(verdicts, reference, Fraction(18))
    changed = [i for i, (a, b) in enumerate(zip(plain, final, strict=True)) if a != b]
    assert all(plain[i] and not final[i] for i in changed)
    equation_steps = [i for i, v in enumerate(verdicts) if v.correct is not None]
    assert changed in ([], equation_steps[-1:])
    if equation_steps and any(eq.rhs_value == 18 for eq in verdicts[equation_steps[-1]].equations):
        assert changed == []


# --------------------------------------------------------------------------- interface


def test_registered_counts_and_mode():
    verifier = build_step_scorer("reference")
    assert isinstance(verifier, ReferenceVerifier) and STEP_SCORERS.get("reference") is ReferenceVerifier
    assert resolve_process_mode("auto", verifier) == "step"  # exact, local scores, like the verifier
    verifier(["q"], [["Step 1: 7 + 5 = 12", "Step 2: 12 + 3 = 15"]], solution=[GOLD], answer=["9"])
    counts = verifier.pop_counts()
    assert counts["steps"] == 2 and counts["off_reference"] == 1 and counts["rows_without_reference"] == 0
    assert verifier.counts == ReferenceCounts()  # reset, same type


def test_missing_columns_and_length_mismatch_say_what_is_wrong():
    verifier = ReferenceVerifier()
    with pytest.raises(ValueError, match=r"needs the dataset columns \['solution'\]"):
        verifier(["q"], [["Step 1: 1 + 1 = 2"]], answer=["2"])
    with pytest.raises(ValueError, match="2 solutions"):
        verifier(["q"], [["Step 1: 1 + 1 = 2"]], solution=[GOLD, GOLD], answer=["2"])


def test_rows_without_reference_are_a_logged_share():
    """A row whose gold solution gives no reference value is scored on arithmetic alone: counted, and logged as
    ps/frac_rows_without_reference through step_metrics (a bad-input sweep, F12: it was counted, never logged)."""
    from psgrpo.ps.signal import step_metrics

    verifier = ReferenceVerifier()
    steps = [["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9"]] * 4
    solutions = [GOLD, "", "She thinks hard about it.", GOLD]  # no solution, no readable equation
    verifier(["q"] * 4, steps, solution=solutions, answer=["9"] * 4)
    counts = verifier.pop_counts()
    assert counts["rows"] == 4 and counts["rows_without_reference"] == 2
    other = ReferenceCounts(steps=2, rows=4, rows_without_reference=1)  # a second process
    metrics = step_metrics([[1.0]], 0.5, counts=[counts, asdict(other)], count_metrics=verifier.count_metrics)
    assert metrics["ps/frac_rows_without_reference"] == pytest.approx(3 / 8)
    assert metrics["ps/frac_steps_off_reference"] == pytest.approx(counts["off_reference"] / 10)  # kept
    assert math.isnan(ReferenceCounts.metrics(asdict(ReferenceCounts()))["frac_rows_without_reference"])


def test_a_row_without_a_solution_is_scored_on_arithmetic_and_counted():
    """Arrow fills a row's missing key with None: it was read as the text 'None', silently; it is now a row without
    reference, counted in ps/frac_rows_without_reference."""
    verifier = ReferenceVerifier()
    steps = [["Step 1: 7 + 5 = 12"]] * 2
    assert verifier(["q", "q"], steps, solution=[None, ""], answer=["9", "9"]) == verifier(
        ["q", "q"], steps, solution=["", ""], answer=["9", "9"]
    )
    assert verifier.pop_counts()["rows_without_reference"] == 4


@pytest.mark.parametrize("bad", [12, ["Step 1: 7 + 5 = 12"]])
def test_a_solution_that_is_not_a_string_is_refused_naming_the_row(bad):
    """A number or a list is no worked solution."""
    verifier = ReferenceVerifier()
    with pytest.raises(
        ValueError,
        match=rf"ReferenceVerifier: row 1, field 'solution': got .* of type {type(bad).__name__}; expected the "
        "gold worked solution as a string, or None",
    ):
        verifier(["q", "q"], [["Step 1: 7 + 5 = 12"]] * 2, solution=[GOLD, bad], answer=["9", "9"])
    assert verifier.counts == ReferenceCounts()  # refused before any row was scored


def test_check_scorer_columns_before_training():
    dataset = make_arith_dataset("test", n=4).remove_columns(["solution", "completion"])
    with pytest.raises(ValueError, match=r"lacks \['solution'\]"):
        check_scorer_columns(ReferenceVerifier(), dataset)
    check_scorer_columns(ReferenceVerifier(), make_arith_dataset("test", n=4))
    check_scorer_columns(build_step_scorer("arithmetic"), dataset)  # reads no column


@pytest.mark.parametrize("as_dict", [False, True])
def test_an_evaluation_dataset_without_the_scorers_columns_is_refused_when_the_trainer_is_built(
    tmp_path, char_tokenizer, as_dict
):
    """TRL's evaluation scores its completions too: without `solution` there, the reference scorer failed at the
    first evaluation, mid-training (a review, 2026-12-07)."""
    evaluation = make_arith_dataset("test", n=8).remove_columns(["solution"])
    args = tiny_run_args(tmp_path, method="ps", step_scorer="reference", eval_strategy="steps", eval_steps=1)
    with pytest.raises(ValueError, match=r"the evaluation (dataset|'hard' dataset) lacks \['solution'\]"):
        ProcessGRPOTrainer(
            model=build_tiny_model(
                char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64
            ),
            reward_funcs=[length_reward],
            args=ProcessGRPOConfig(**args),
            train_dataset=make_arith_dataset("train", n=16),
            eval_dataset={"hard": evaluation} if as_dict else evaluation,
            processing_class=char_tokenizer,
        )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.text(max_size=80), st.sampled_from(list(HOSTILE_STEPS.values()))), max_size=6),
    st.text(max_size=120),
)
@pytest.mark.slow
def test_never_raises_and_scores_stay_in_range(steps, solution):
    scores = ReferenceVerifier()(["q"], [steps], solution=[solution], answer=["9"])[0]
    assert len(scores) == len(steps) and all(0.0 <= s <= 1.0 for s in scores)


# --------------------------------------------------------------------------- the completion's own route

GSM_GOLD = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18"
)


def test_a_valid_partial_result_the_gold_never_states_is_carried_by_its_own_dependencies():
    """Issue 26's example: ``3 + 4 = 7 eggs used`` then ``16 - 7 = 9``: both steps are right."""
    steps = [
        "Janet uses 3 + 4 = 7 eggs a day.",
        "She sells 16 - 7 = 9 eggs.",
        "She makes 9 * $2 = $18 a day.",
    ]
    assert score(steps, GSM_GOLD, "18", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0, 1.0]


def test_blame_falls_where_the_chain_leaves_the_gold_path():
    # the partial result is right; the step that uses it wrongly is blamed, not the partial result
    slip = ["Janet uses 3 + 4 = 7 eggs a day.", "She sells 16 - 7 = 8 eggs.", "She makes 8 * $2 = $16."]
    assert score(slip, GSM_GOLD, "18", correct_weight=0.0, reference_weight=1.0) == [1.0, 0.0, 0.0]
    # a partial result no later step on the gold path uses stays off it (an unused computation)
    unused = [
        "Janet eats 3 * 7 = 21 eggs a week.",
        "She sells 16 - 3 - 4 = 9 eggs.",
        "She makes 9 * $2 = $18.",
    ]
    assert score(unused, GSM_GOLD, "18", correct_weight=0.0, reference_weight=1.0) == [0.0, 1.0, 1.0]


def test_a_wrong_chain_that_lands_on_a_gold_value_by_chance_carries_nothing_back():
    gold = "Step 1: 11 * 2 = 22\nStep 2: 22 - 3 = 19\nStep 3: 19 - 8 = 11\nStep 4: 11 + 1 = 12\n<answer>12</answer>"
    steps = ["Step 1: 11 * 2 = 23", "Step 2: 23 - 3 = 20", "Step 3: 20 - 8 = 12", "Step 4: 12 + 1 = 13"]
    assert score(steps, gold, "12") == [0.0, 0.5, 1.0, 0.5]


def test_the_route_to_the_right_answer_is_carried_whatever_its_intermediate_values():
    gold = "The flock needs 10 x 3.5 = <<10*3.5=35>>35 pounds a week.\nThat is 35 / 7 = <<35/7=5>>5 a day.\n#### 5"
    steps = ["Each duck needs 3.5/7 = 0.5 pounds a day.", "Ten ducks need 0.5*10 = 5 pounds a day."]
    assert score(steps, gold, "5", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0]
    # the same first step before a wrong answer is not carried: nothing on the path uses it
    wrong = ["Each duck needs 3.5/7 = 0.5 pounds a day.", "Ten ducks need 0.5*12 = 6 pounds a day."]
    assert score(wrong, gold, "5", correct_weight=0.0, reference_weight=1.0) == [0.0, 0.0]


def test_a_question_quantity_times_one_that_the_solution_uses_is_not_blamed():
    gold = "He sells 3 + 4 = <<3+4=7>>7 DVDs.\nHe makes 7 * 5 = $<<7*5=35>>35.\n#### 35"
    steps = ["3 customers × 1 DVD each = 3 DVDs.", "He sells 3 + 4 = 7 DVDs.", "He makes 7 * $5 = $35."]
    assert score(steps, gold, "35", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0, 1.0]
    # padding with a value already computed is still a no-op, off the path
    padded = ["He sells 3 + 4 = 7 DVDs.", "That is 7 * 1 = 7 DVDs.", "He makes 7 * $5 = $35."]
    assert score(padded, gold, "35", correct_weight=0.0, reference_weight=1.0) == [1.0, 0.0, 1.0]


def test_a_conversion_the_gold_solution_states_twice_is_on_its_path():
    gold = "She makes 3 * 12 = <<3*12=36>>36 cups.\nShe sells them for 36 * $1 = $<<36*1=36>>36.\n#### 36"
    steps = ["She makes 3 pitchers * 12 cups = 36 cups.", "She sells 36 cups * $1 = $36."]
    assert score(steps, gold, "36", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0]


def test_a_gold_solution_without_equations_judges_steps_on_their_arithmetic():
    steps = ["He makes 100/1000 * 100 = 10 percent more.", "So 2 + 2 = 5."]
    assert score(steps, "They make 10% more.\n#### 10", "10", correct_weight=0.0, reference_weight=1.0) == [
        1.0,
        0.0,
    ]


# --------------------------------------------------------------------------- valid steps off the gold route


def test_a_valid_step_before_a_slip_is_not_blamed_and_the_slip_is():
    """``3 * 2 = 6`` is off the gold route (gold: 7 + 5, 12 - 3, 9 * 2), valid, and used by the slip
    after it: the slip is the certain error, so it takes the blame."""
    steps = ["Step 1: 3 * 2 = 6", "Step 2: 6 + 7 + 5 = 19", "Step 3: 19 - 1 = 18"]
    assert score(steps, GOLD3, "18") == [1.0, 0.0, 1.0]
    assert score(steps, GOLD3, "18", credit_before_slip=False) == [0.5, 0.0, 1.0]
    # an unused valid step (a distractor computed) stays blamed, and so does a no-op
    unused = ["Step 1: 3 * 2 = 6", "Step 2: 7 + 5 = 13"]
    assert score(unused, GOLD3, "18")[0] == 0.5


def test_credit_valid_question_credits_steps_built_from_the_question_numbers():
    steps = ["Step 1: 300 * 10 = 3000", "Step 2: 3000 / 20 = 150"]
    gold = "20 * 300 = <<20*300=6000>>6000\n6000 * 10 = <<6000*10=60000>>60000"
    question = (
        "The number of songs in a playlist is 300. If John has 20 playlists, and each song is 10 hours long"
    )
    verifier = ReferenceVerifier(0.5, 0.5, credit_valid="question")
    scores = verifier([question], [steps], solution=[gold], answer=["60000"])[0]
    assert scores == [1.0, 0.5]  # the valid partial result is credited, the step off the answer is not
    assert score(steps, gold, "60000") == [0.5, 0.5]
    assert question_numbers("ten apples and 5% of $1,200, half of them") >= {
        Fraction(10),
        Fraction(5),
        Fraction(1, 20),
        Fraction(1200),
        Fraction(1, 2),
        Fraction(60),
    }


@pytest.mark.parametrize("kwargs", [{"blame_stop": "nowhere"}, {"credit_valid": "all"}])
def test_unknown_option_values_are_refused(kwargs):
    with pytest.raises(ValueError, match="must be one of"):
        ReferenceVerifier(**kwargs)


# --------------------------------------------------------------------------- real-solution judgements (issue 36)

POINTS_GOLD = (
    "Betty's total is 50 + 15 = <<50+15=65>>65 points.\nTom has 65 - 30 = <<65-30=35>>35 points.\n"
    "Marta has 3 * 35 = <<3*35=105>>105 points.\nIn total 50 + 65 + 35 + 105 = <<50+65+35+105=255>>255 points.\n"
    "The class is missing 400 - 255 = <<400-255=145>>145 points."
)


def test_a_false_equation_is_never_on_the_path_even_when_it_states_a_gold_value():
    """``3 * (65 - 30) = 145`` is false; that 145 is the gold answer does not put it on the path
    (it used to: with weights 0/1 it was not flagged at all)."""
    steps = ["Betty has 50 + 15 = 65 points.", "Marta has 3 * (65 - 30) = 145 points.", "#### 145"]
    assert score(steps, POINTS_GOLD, "145", correct_weight=0.0, reference_weight=1.0) == [1.0, 0.0, 0.5]
    assert score(steps, POINTS_GOLD, "145") == [1.0, 0.0, 0.5]
    assert score(
        steps[:1] + ["Marta has 3 * 35 = 105 points."], POINTS_GOLD, "145", final_step_reaches_answer=False
    ) == [
        1.0,
        1.0,
    ]


def test_a_percentage_reaches_the_gold_value_it_writes():
    """``6/12 = 0.5`` then ``0.5 x 100% = 50%``: the gold states 50, the step writes 50 %."""
    gold = "She has 7 + 5 = <<7+5=12>>12 hours.\nSoccer is 6 / 12 * 100 = <<6/12*100=50>>50 percent."
    steps = ["She has 7 + 5 = 12 hours.", "That is 6/12 = 0.5 of them.", "So 0.5 x 100% = 50%."]
    assert score(steps, gold, "50", correct_weight=0.0, reference_weight=1.0)[2] == 1.0


def test_a_solution_that_stops_on_a_gold_value_is_blamed_at_the_step_that_says_what_it_means():
    """``35 - 18 - 3 = 14`` is a gold value; the next step (``each kid can have 14``) is the wrong
    idea, so it takes the blame (score 0) and the right calculation keeps its credit. Answer lines
    (``#### 14``, ``The answer is 14``) are never that step; without one, the last equation is
    blamed as before (``blame_stop="last_equation"`` always does)."""
    gold = (
        "They used 9 + 9 + 3 = <<9+9+3=21>>21 marshmallows.\nThere are 35 - 21 = <<35-21=14>>14 left.\n"
        "They can each make 14 / 2 = <<14/2=7>>7 more."
    )
    steps = [
        "Together, they use 9 + 9 = 18 marshmallows.",
        "There are 35 - 18 - 3 = 14 marshmallows left.",
        "Step 3: Each kid can have 14 S'mores.",
        "Step 4: #### 14",
    ]
    weights = {"correct_weight": 0.0, "reference_weight": 1.0}
    assert score(steps, gold, "7", **weights) == [1.0, 1.0, 0.0, 0.5]
    assert score(steps, gold, "7", blame_stop="last_equation", **weights) == [1.0, 0.0, 0.5, 0.5]
    assert score(steps[:2] + ["Step 3: The answer is: 14"], gold, "7", **weights) == [1.0, 0.0, 0.5]
    assert score(steps[:2], gold, "7", **weights) == [1.0, 0.0]


def test_credit_valid_unused_credits_a_true_step_the_solution_does_not_need():
    """``8 + 6 = 14 people`` (true, from the question's numbers, never used) is not blamed with
    ``credit_valid="unused"``; a valid off-route step a later step builds on still is."""
    question = "There are 8 males and 6 females. Each male ate 4 dumplings and each female ate 3."
    gold = "The males ate 8 * 4 = <<8*4=32>>32.\nThe females ate 6 * 3 = <<6*3=18>>18.\nIn all 32 + 18 = <<32+18=50>>50."
    steps = [
        "There are 8 + 6 = 14 people.",
        "The males ate 8 * 4 = 32.",
        "The females ate 6 * 3 = 18.",
        "In all 32 + 18 = 50.",
    ]
    weights = {"correct_weight": 0.0, "reference_weight": 1.0}
    unused = ReferenceVerifier(credit_valid="unused", **weights)
    assert unused([question], [steps], solution=[gold], answer=["50"])[0] == [1.0, 1.0, 1.0, 1.0]
    assert ReferenceVerifier(**weights)([question], [steps], solution=[gold], answer=["50"])[0][0] == 0.0
    used = ["There are 8 + 6 = 14 people.", "They ate 14 * 3 = 42.", "#### 42"]
    assert unused([question], [used], solution=[gold], answer=["50"])[0][:2] == [0.0, 0.0]


def test_a_question_quantity_times_one_is_carried_even_when_the_gold_also_computes_that_value():
    """``6 x 1 = 6 pieces to her children`` restates the question's 6 (which the gold solution uses),
    and ``12 - 6 = 6`` uses it: the restatement is on the path though the gold also *computes* a 6."""
    gold = (
        "She was left with 12 - 6 = <<12-6=6>>6 rolls.\nShe fed 6 x 8 = <<6*8=48>>48 pieces to the chickens."
    )
    steps = ["She fed 6 x 1 = 6 pieces to her children.", "So 12 - 6 = 6 are left.", "So 6 x 8 = 48 pieces."]
    assert score(steps, gold, "48", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0, 1.0]


def test_without_reference_values_a_wrong_final_answer_still_blames_the_last_equation():
    """The gold solution is algebra (no reference values): the steps are judged on arithmetic, but a
    solution ending on a wrong answer is off the path at its last equation; a right one is not."""
    gold = "Let x be Sam's share. Then 2x + 60 = 100, so x = 20."
    wrong = [
        "Sam gets 20 feet, Harry 20 + 60 = 80 feet.",
        "So 20 - 80 = -60 feet are left for Sam.",
        "#### 60",
    ]
    right = ["Harry gets 100 - 20 = 80 feet.", "So Sam gets 100 - 80 = 20 feet.", "#### 20"]
    weights = {"correct_weight": 0.0, "reference_weight": 1.0}
    assert score(wrong, gold, "20", **weights) == [1.0, 0.0, 0.5]
    assert score(right, gold, "20", **weights) == [1.0, 1.0, 0.5]
    assert score(wrong, gold, "20", final_step_reaches_answer=False, **weights) == [1.0, 1.0, 0.5]
    zero = ["He has 5 - 5 = 0 apples.", "#### 0"]  # a stated answer of 0 is an answer
    assert score(zero, "Let x be the apples; x = 3.", "3", **weights) == [0.0, 0.5]


MARSH_GOLD = (
    "They used 9 + 9 + 3 = <<9+9+3=21>>21 marshmallows.\nThere are 35 - 21 = <<35-21=14>>14 left.\n"
    "They can each make 14 / 2 = <<14/2=7>>7 more."
)
MARSH = ["Together, they use 9 + 9 = 18 marshmallows.", "There are 35 - 18 - 3 = 14 marshmallows left."]
W01 = {"correct_weight": 0.0, "reference_weight": 1.0}


@pytest.mark.parametrize(
    "tail",
    [
        "$\\boxed{14}$",
        "\\(\\boxed{14}\\)",
        "**Final Answer:** 14",
        "Final answer: 14",
        "Answer: 14",
        "**Step 3:** The answer is 14",
        "3. The answer is 14",
        "Therefore, the answer is $\\boxed{14}$",
        "Step 3: ####",
    ],
)
def test_an_answer_line_in_any_markup_is_never_the_step_that_takes_the_blame(tail):
    assert score([*MARSH, tail], MARSH_GOLD, "7", **W01) == [1.0, 0.0, 0.5]


def test_the_tags_of_a_segmented_completion_never_take_the_blame():
    """Segmented at newlines, ``</reasoning>`` is a step of its own: the blame stays on the equation."""
    steps = [
        "<reasoning>",
        "They use 9 + 9 = 18.",
        "There are 35 - 18 - 3 = 14 left.",
        "</reasoning>",
        "<answer>14</answer>",
    ]
    assert score(steps, MARSH_GOLD, "7", **W01) == [0.5, 1.0, 0.0, 0.5, 0.5]


def test_a_claim_step_without_a_numeric_conclusion_after_it():
    """The last step states no number (so no conclusion of its own): the claim after the last equation
    is blamed when it says something else than the gold answer, and nothing is when it states it."""
    wrong = [*MARSH, "Each kid can have 14 S'mores.", "That is all."]
    assert score(wrong, MARSH_GOLD, "7", **W01) == [1.0, 1.0, 0.0, 0.5]
    right = [*MARSH, "Split between the two kids, each gets 7 more.", "That is the result."]
    assert score(right, MARSH_GOLD, "7", **W01) == [1.0, 1.0, 0.5, 0.5]


def test_a_wrong_conclusion_after_the_answer_was_reached_is_the_step_blamed():
    """The last equation reaches the gold answer and the conclusion states another: the conclusion
    takes the blame, not a prose step between them."""
    steps = [
        "They use 9 + 9 + 3 = 21.",
        "There are 35 - 21 = 14 left.",
        "Each makes 14 / 2 = 7 more.",
        "That is good news for the kids.",
        "So the answer is 14.",
    ]
    assert score(steps, MARSH_GOLD, "7", **W01) == [1.0, 1.0, 1.0, 0.5, 0.0]


def test_a_step_marker_is_not_a_stated_answer():
    """``Step 4: Done.`` states no answer (its 4 is the marker): a right solution stays unflagged."""
    steps = [
        "They use 9 + 9 + 3 = 21.",
        "There are 35 - 21 = 14 left.",
        "Each makes 14 / 2 = 7 more.",
        "Step 4: Done.",
    ]
    assert score(steps, MARSH_GOLD, "7", **W01) == [1.0, 1.0, 1.0, 0.5]


def test_credit_valid_unused_builds_on_right_earlier_results():
    """An unused valid step may use a right earlier result (32 below), not only the question's numbers."""
    question = "There are 8 males and 6 females. Each male ate 4 dumplings and each female ate 3."
    gold = "The males ate 8 * 4 = <<8*4=32>>32.\nThe females ate 6 * 3 = <<6*3=18>>18.\nIn all 32 + 18 = <<32+18=50>>50."
    steps = [
        "The males ate 8 * 4 = 32.",
        "Half of that is 32 / 2 = 16.",
        "The females ate 6 * 3 = 18.",
        "In all 32 + 18 = 50.",
    ]
    unused = ReferenceVerifier(credit_valid="unused", **W01)
    assert unused([question], [steps], solution=[gold], answer=["50"])[0] == [1.0, 1.0, 1.0, 1.0]
    assert ReferenceVerifier(**W01)([question], [steps], solution=[gold], answer=["50"])[0][1] == 0.0


BUS_GOLD = (
    "3/4 * 40 people = <<3/4*40=30>>30 people entered at the second station.\n"
    "After it there were 20 + 40 + 30 = <<20+40+30=90>>90 people.\n"
    "They doubled: 90 * 2 = <<90*2=180>>180 people.\n"
    "So 200 - 180 = <<200-180=20>>20 more people fill the bus."
)


def test_a_second_route_to_a_claimed_gold_value_is_on_the_path():
    """``200 - 20 = 180`` (seats left) claims the gold's 180 first; ``90 * 2 = 180`` (people on board)
    reaches it again by other work, and the next step uses it: the error is that next step."""
    steps = [
        "It started with 20, so 200 - 20 = 180 spaces remain.",
        "At the first stop 20 + 40 = 60 people are on the bus.",
        "At the second 3/4 * 40 = 30 people entered.",
        "Now there are 60 + 30 = 90 people.",
        "At the third station they doubled: 90 * 2 = 180 people.",
        "To fill the bus we need 180 - 180 = 0 people.",
        "#### 0",
    ]
    assert score(steps, BUS_GOLD, "20", correct_weight=0.0, reference_weight=1.0) == [1, 1, 1, 1, 1, 0, 0.5]


@pytest.mark.parametrize(
    ("steps", "off"),
    [
        # a detour back to 21 builds on the step that claimed it
        (["Step 1: 14 + 7 = 21", "Step 2: 21 + 8 = 29", "Step 3: 29 - 8 = 21", "Step 4: 21 + 6 = 27"], 2),
        # a repeated step: the same operands
        (["Step 1: 14 + 7 = 21", "Step 2: 7 + 14 = 21", "Step 3: 21 + 6 = 27"], 1),
    ],
)
def test_a_detour_or_a_repeat_back_to_a_claimed_value_stays_off_the_path(steps: list[str], off: int):
    gold = "Step 1: 14 + 7 = 21\nStep 2: 21 + 6 = 27"
    scores = score(steps, gold, "27", correct_weight=0.0, reference_weight=1.0)
    assert scores[off] == 0.0
    assert scores[-1] == 1.0


FELIX_GOLD = "He climbed 105 / .25 = <<105/.25=420>>420 branches.\nA day: 420 / 7 = <<420/7=60>>60 branches."


def test_a_wrong_final_answer_with_nothing_off_the_path_blames_the_conclusion():
    """The error is in algebra the verifier does not read (``x = 420`` is right, ``per day`` is not):
    no equation is off the path, but the answer is wrong, so the last step that says more than the
    answer takes the blame."""
    steps = [
        "Felix made $105.",
        "Let x be the branches: .25 * x = 105.",
        "Simplifying, x = 420.",
        "So he climbed 420 branches per day.",
        "#### 420",
    ]
    assert score(steps, FELIX_GOLD, "60", correct_weight=0.0, reference_weight=1.0) == [
        0.5,
        0.5,
        0.5,
        0.0,
        0.5,
    ]
    assert score(steps, FELIX_GOLD, "420", correct_weight=0.0, reference_weight=1.0) == [0.5] * 5
    assert score(steps, FELIX_GOLD, "60", final_step_reaches_answer=False) == [0.5] * 5


@pytest.mark.parametrize(
    "steps",
    [
        ["14 + 7 = 21", "14 + 7 + 0 = 21", "21 + 6 = 27"],
        ["14 + 7 = 21", "(14 + 7) * 1 = 21", "21 + 6 = 27"],
        ["14 + 7 = 21", "2 * 7 + 7 = 21", "21 + 6 = 27"],
        ["14 + 7 = 21", "20 + 1 = 21", "21 + 6 = 27"],
        ["14 + 7 = 21", "7 + 14 = 21", "21 + 8 = 29", "29 - 8 = 21", "21 + 6 = 27"],
        ["14 + 7 = 21", "21 + 6 = 27", "20 + 7 = 27", "27 + 0 = 27"],
    ],
)
def test_padding_that_restates_a_gold_value_earns_no_second_route(steps: list[str]):
    """Found by review: restatements from the question's numbers, a detour through an uncredited
    repeat, and a route only a no-op uses are padding, not a second route."""
    gold = "Step 1: 14 + 7 = 21\nStep 2: 21 + 6 = 27"
    scores = score(steps, gold, "27", correct_weight=0.0, reference_weight=1.0)
    assert sum(scores) == 2.0


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        # the last equation reaches the gold answer: the wrong answer glued to it blames no earlier step
        (["Mia has 7 pens and buys 5: 7 + 5 = 12", "12 - 3 = 9 \\boxed{10}"], [1.0, 1.0]),
        (["7 + 5 = 12", "12 - 3 = 9 #### 10"], [1.0, 1.0]),
        (
            ["7 + 5 = 12", "12 - 4 = 8", "\\boxed{8}", "Let me know if anything is unclear."],
            [1.0, 0.0, 0.5, 0.5],
        ),
    ],
)
def test_a_wrong_answer_never_blames_a_right_earlier_step_or_chatter(steps, expected):
    gold = "7 + 5 = <<7+5=12>>12\n12 - 3 = <<12-3=9>>9"
    assert score(steps, gold, "9", correct_weight=0.0, reference_weight=1.0) == expected


ICE_CREAM_GOLD = (
    "Chocolate: 100 / 2 = <<100/2=50>>50 quarts an hour.\nVanilla: 50 / 4 = <<50/4=12.5>>12.5 quarts an hour.\n"
    "48 * 50 = <<48*50=2400>>2400 quarts.\n48 * 12.5 = <<48*12.5=600>>600 quarts.\n2400 + 600 = <<2400+600=3000>>3000"
)


@pytest.mark.parametrize(
    "announcement",
    [
        "To find the quarts made in 48 hours, we need to add the quarts made in 2 hours and in 4 hours.",
        "If we add the two amounts, we get the total for 48 hours.",
        "We add what is made in 2 hours and in 4 hours.",
    ],
)
def test_the_step_announcing_a_wrong_operation_takes_the_blame(announcement: str):
    """A wrong idea written in words first (``we need to add ...``) and then carried out by a true
    equation off the gold path is blamed where it is written (real dev solution mr-da43dfa2)."""
    steps = [
        "In 2 hours, the factory makes 100 quarts of chocolate.",
        announcement,
        "100 quarts + 50 quarts = 150 quarts",
        "#### 150",
    ]
    scores = score(steps, ICE_CREAM_GOLD, "3000", correct_weight=0.0, reference_weight=1.0)
    assert scores == [0.5, 0.0, 0.0, 0.5]
    off = score(
        steps, ICE_CREAM_GOLD, "3000", correct_weight=0.0, reference_weight=1.0, blame_announcement=False
    )
    assert off == [0.5, 0.5, 0.0, 0.5]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        # the operation announced is carried out by a slip (a false equation): the slip is the error
        (["We need to add the two amounts.", "100 + 50 = 160", "#### 160"], [0.5, 0.0, 0.5]),
        # the announced step is on the path: nothing to blame there
        (["We divide 100 quarts by 2 hours.", "100 / 2 = 50", "50 / 4 = 12.5", "48 * 50 = 2400"], None),
        # words that do not announce an operation
        (["The factory can add a night shift.", "100 + 50 = 150", "#### 150"], [0.5, 0.0, 0.5]),
        (["To find the total, we look at both flavours.", "100 + 50 = 150", "#### 150"], [0.5, 0.0, 0.5]),
    ],
)
def test_an_announcement_is_blamed_only_before_a_true_step_off_the_path(steps, expected):
    scores = score(steps, ICE_CREAM_GOLD, "3000", correct_weight=0.0, reference_weight=1.0)
    assert scores[0] == 0.5
    if expected is not None:
        assert scores == expected


def test_a_wrong_step_landing_on_a_sub_sum_of_the_gold_by_chance_is_not_carried():
    """Real dev solution mr-8a48fcf0: the gold adds 30 + 10 + 60 + 20, so 30 (= 10 + 20), 90 and 50
    are sub-sums; ``60 / 2 = 30 sheep`` (the zoo's cows halved) reaches 30 by a division, not as the
    gold does, and is blamed; ``30 + 60 = 90`` and ``30 + 20 = 50`` add two of the gold's own terms
    (the scorer cannot tell which 30 the second one means) and stay carried by the final sum."""
    gold = "The zoo has 2 * 30 = <<2*30=60>>60 cows.\nThe farm has 1/2 * 20 = <<1/2*20=10>>10 sheep.\n"
    gold += "Combined: 30 + 10 + 60 + 20 = <<30+10+60+20=120>>120 animals."
    steps = [
        "The zoo has 2 * 30 = 60 cows.",
        "The farm has 60 / 2 = 30 sheep.",
        "Cows: 30 + 60 = 90 cows.",
        "Sheep: 30 + 20 = 50 sheep.",
        "In all, 90 + 50 = 140 animals.",
    ]
    assert score(steps, gold, "120", correct_weight=0.0, reference_weight=1.0) == [1.0, 0.0, 1.0, 1.0, 0.0]
    right = [
        "The zoo has 2 * 30 = 60 cows.",
        "Cows: 30 + 60 = 90.",
        "Sheep: 1/2 * 20 = 10.",
        "90 + 10 + 20 = 120",
    ]
    assert score(right, gold, "120", correct_weight=0.0, reference_weight=1.0) == [1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        # a half of a question number pads: no later step uses 2.5, although 12 - 3 uses a 3
        (["5 / 2 = 2.5", "7 + 5 = 12", "12 - 3 = 9", "<answer>9</answer>"], [0.5, 1.0, 1.0, 0.5]),
        (["9 / 2 = 4.5", "7 + 5 = 13", "13 - 3 = 10", "<answer>10</answer>"], [0.5, 0.0, 0.5, 0.5]),
        # ``24/2 = 12`` divides: it does not use the 12 a pad computed before it
        (
            ["7 + 5 = 12", "5 + 7 = 12", "24/2 = 12", "12 - 3 = 9", "<answer>9</answer>"],
            [1.0, 0.5, 0.5, 1.0, 0.5],
        ),
    ],
)
def test_padding_with_halves_or_a_spaceless_division_earns_nothing(steps, expected):
    """Found by review: a link from a whole number to an earlier result rounded, or from ``24/2`` to
    an earlier 12, made padding steps "used" and paid them."""
    assert score(steps, GOLD, "9") == expected


def test_an_announcement_of_another_operation_is_not_blamed():
    """Found by review: ``we need to multiply`` announces the gold's idea; the step after it adds."""
    gold = "Step 1: 100 * 2 = 200\nStep 2: 200 + 50 = 250"
    steps = ["We need to multiply the price by 2.", "100 + 50 = 150", "<answer>150</answer>"]
    assert score(steps, gold, "250", correct_weight=0.0, reference_weight=1.0) == [0.5, 0.0, 0.5]
    steps[0] = "We need to add the two prices."
    assert score(steps, gold, "250", correct_weight=0.0, reference_weight=1.0) == [0.0, 0.0, 0.5]
