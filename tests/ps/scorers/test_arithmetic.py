"""psgrpo.ps.scorers.arithmetic: step scores, the scorer interface, gold solutions, and never raising on model text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.credit_gaming import HOSTILE_STEPS
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, StepScore, score_steps
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.rewards.functions import extract_answer


def scores(steps: list[str], final_answer: str | None = None, **weights: float) -> list[float]:
    """Combined scores of one completion's steps."""
    return [s.score(**weights) for s in score_steps(steps, final_answer)]


# --------------------------------------------------------------------------- scoring and necessity


def test_correct_chain_scores_one():
    assert scores(["Step 1: 16 - 3 - 4 = 9", "Step 2: 9 * 2 = 18"], "18") == [1.0, 1.0]


def test_wrong_intermediate_result_loses_correctness_only():
    assert scores(["Step 1: 16 - 3 - 4 = 8", "Step 2: 8 * 2 = 16"], "16") == pytest.approx([0.4, 1.0])


def test_half_correct_step():
    assert scores(["3 + 4 = 7 and 7 * 2 = 15"], "7") == pytest.approx([0.6 * 0.5 + 0.4])


def test_step_without_equation_is_neutral_and_not_necessary():
    [verdict] = score_steps(["First, count the eggs."], None)
    assert verdict == StepScore(None, False, [])
    assert verdict.score() == 0.5


def test_unused_intermediate_result_is_not_necessary():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "Step 2: 5 + 5 = 10"], "10")
    assert [v.necessary for v in verdicts] == [False, True]
    assert [v.score() for v in verdicts] == pytest.approx([0.6, 1.0])


def test_result_used_in_later_prose_is_on_the_path():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "So she keeps 12 of them."], "12")
    assert [v.necessary for v in verdicts] == [True, False]


def test_without_a_final_answer_no_step_is_necessary():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "Step 2: 12 + 1 = 13"], None)
    assert [v.necessary for v in verdicts] == [False, False]


def test_last_step_necessary_only_if_it_gives_the_final_answer():
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], "12")] == [True]
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], "13")] == [False]
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], None)] == [False]


def test_step_markers_and_later_results_are_not_operands():
    # "Step 2" is a label, and a later step that merely also computes 2 does not use step 1's 2.
    verdicts = score_steps(["Step 1: 1 + 1 = 2", "Step 2: 6 / 3 = 2", "Step 3: 3 + 4 = 7"], "7")
    assert [v.necessary for v in verdicts] == [False, False, True]


def test_segments_with_tags_and_markers():
    steps = ["<reasoning>\nStep 1: 1 + 1 = 2\n", "Step 2: 3 + 4 = 7\n</reasoning>\n<answer>7</answer>"]
    assert ArithmeticVerifier()(["Q"], [steps]) == [pytest.approx([0.6, 1.0])]


def test_divide_by_zero_step_scores_as_wrong():
    assert scores(["Step 1: 5 / 0 = 3", "Step 2: 3 + 1 = 4"], "4") == pytest.approx([0.4, 1.0])


# --------------------------------------------------------------------------- the scorer interface


def test_batch_returns_one_score_per_step():
    verifier = ArithmeticVerifier()
    steps = [
        ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"],
        ["Step 1: 7 + 5 = 13", "I think so."],
    ]
    prompts = ["Q1", [{"role": "user", "content": "Q2"}]]
    result = verifier(prompts, steps, answer=["9", "12"])
    assert [len(r) for r in result] == [3, 2]
    assert result == [pytest.approx([1.0, 1.0, 0.5]), pytest.approx([0.0, 0.5])]


def test_final_answer_comes_from_the_steps_not_the_gold_column():
    verifier = ArithmeticVerifier()
    steps = [["7 + 5 = 12", "<answer>12</answer>"]]
    assert verifier(["Q"], steps, answer=["99"]) == [pytest.approx([1.0, 0.5])]
    assert extract_answer("\n".join(steps[0])) == "12"


def test_weights_are_configurable():
    verifier = ArithmeticVerifier(correct_weight=1.0, necessary_weight=0.0, neutral_score=-1.0)
    assert verifier(["Q"], [["Step 1: 3 * 4 = 12", "Step 2: 2 + 2 = 5", "Hmm."]]) == [
        pytest.approx([1.0, 0.0, -1.0])
    ]
    verdicts = verifier.score_steps(["Step 1: 3 * 4 = 12"], "12")
    assert verdicts[0].score(0.5, 0.5, 0.0) == 1.0


def test_mismatched_batch_is_an_error():
    with pytest.raises(ValueError, match="2 prompts"):
        ArithmeticVerifier()(["a", "b"], [["1 + 1 = 2"]])


def test_arith_gold_solutions_score_one():
    from psgrpo.data.arith import make_arith_dataset

    verifier = ArithmeticVerifier()
    for row in make_arith_dataset("test", n=50):
        steps = [line for line in row["solution"].splitlines() if line.startswith("Step")]
        verdicts = verifier.score_steps(steps, extract_answer(row["solution"]))
        assert all(v.correct == 1.0 and v.necessary for v in verdicts), (steps, verdicts)
        assert verifier(["Q"], [steps + [f"<answer>{row['answer']}</answer>"]])[0][:-1] == [1.0] * len(steps)


# --------------------------------------------------------------------------- never raises, bounded work


@pytest.mark.parametrize("name", list(HOSTILE_STEPS))
def test_hostile_arithmetic_is_counted_not_raised(name):
    [verdict] = ArithmeticVerifier().score_steps([HOSTILE_STEPS[name]], None)
    assert verdict.unparsed >= 1
    assert all(eq.holds is not None for eq in verdict.equations)


def test_hostile_steps_next_to_honest_ones_leave_the_honest_verdicts_alone():
    verifier = ArithmeticVerifier()
    steps = [
        "Step 1: 7 + 5 = 12\n",
        HOSTILE_STEPS["3,000 divisions"] + "\n",
        "Step 3: 12 - 3 = 9\n<answer>9</answer>",
    ]
    assert verifier(["Q"], [steps]) == [pytest.approx([1.0, 0.5, 1.0])]
    assert verifier.pop_counts() == {
        "steps": 3, "no_equation": 1, "noop": 0, "unnecessary": 0, "garbled": 0, "unparsed_equations": 1
    }  # fmt: skip
    assert verifier.pop_counts()["steps"] == 0  # popping resets


@st.composite
def hostile_arithmetic(draw):
    """Arithmetic a policy could write: long chains, deep nesting, huge numbers, stray signs and '='."""
    atoms = st.one_of(
        st.integers(0, 10**6).map(str),
        st.integers(1, 400).map(lambda n: "9" * n),
        st.sampled_from(["½", "3/4", "3 1/2", "$1,000", "50%", ".5", "0", "1e5", "7x", "x", "2^3"]),
    )
    parts = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            parts.append("(" * draw(st.integers(1, 80)))
        elif kind == 1:
            parts.append(")" * draw(st.integers(1, 80)))
        elif kind == 2:
            parts.append(
                draw(st.sampled_from(["+", "-", "*", "/", "//", "×", "÷", "=", "−", " = "]))
                * draw(st.integers(1, 3))
            )
        else:
            parts.append(draw(atoms))
    return " ".join(parts) if draw(st.booleans()) else "".join(parts)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.text(max_size=300), hostile_arithmetic()), min_size=1, max_size=4),
    st.one_of(st.none(), st.text(max_size=40)),
)
def test_any_text_is_scored_without_raising(steps, final_answer):
    verifier = ArithmeticVerifier()
    verdicts = verifier.score_steps(steps, final_answer)
    assert len(verdicts) == len(steps)
    for verdict in verdicts:
        assert 0.0 <= verdict.score() <= 1.0 and verdict.unparsed >= 0
        assert verdict.correct is None or 0.0 <= verdict.correct <= 1.0
    scores = verifier(["Q"], [steps])[0]
    assert len(scores) == len(steps) and all(0.0 <= s <= 1.0 for s in scores)


@pytest.mark.parametrize(
    ("scorer", "weights"),
    [
        (ArithmeticVerifier, {"correct_weight": 0.0, "necessary_weight": 0.0}),
        (ArithmeticVerifier, {"correct_weight": 1.0, "necessary_weight": -0.5}),
        (ReferenceVerifier, {"correct_weight": 0.0, "reference_weight": 0.0}),
        (ReferenceVerifier, {"correct_weight": -1.0, "reference_weight": 1.0}),
    ],
)
def test_weights_that_give_no_honest_signal_are_refused(scorer, weights):
    """All zero: a right and a wrong equation both score 0; negative: a wrong step outscores a right one."""
    with pytest.raises(ValueError, match="must be >= 0, with one above 0"):
        scorer(**weights)


def test_one_weight_may_be_zero():
    assert ReferenceVerifier(correct_weight=0.0, reference_weight=1.0).weights() == {
        "correct_weight": 0.0,
        "reference_weight": 1.0,
    }
    assert ArithmeticVerifier(correct_weight=1.0, necessary_weight=0.0).weights()["necessary_weight"] == 0.0
    with pytest.raises(ValueError, match="rel_tol must be >= 0"):
        ArithmeticVerifier(rel_tol=-1e-6)


@pytest.mark.parametrize("scorer", [ArithmeticVerifier(), ReferenceVerifier()])
def test_one_string_of_steps_is_refused_not_scored_by_character(scorer):
    """``steps`` holds one list of step strings per completion; a bare string was scored as one step per character."""
    columns = {"solution": ["3 + 4 = 7"], "answer": ["7"]}
    with pytest.raises(
        ValueError, match=r"steps\[0\] must be the completion's list of step strings, got str"
    ):
        scorer(["Q"], ["Step 1: 3 + 4 = 7"], **columns)
    assert len(scorer(["Q"], [["Step 1: 3 + 4 = 7"]], **columns)[0]) == 1
