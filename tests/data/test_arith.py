"""Tests for psgrpo.data.arith: the synthetic multi-step arithmetic task."""

from __future__ import annotations

import random
import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.data.arith import (
    ARITH_VARIANTS,
    DEFAULT_SIZES,
    MAX_STEPS,
    MAX_VALUE,
    MIN_STEPS,
    ArithProblem,
    ArithSpec,
    ArithStep,
    generate_problem,
    get_arith_spec,
    make_arith_dataset,
    problem_from_chain,
    with_wrong_step,
)
from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.rewards.functions import correctness_reward, format_reward

STEP_RE = re.compile(r"^Step (\d+): (\d+) ([-+*]) (\d+) = (\d+)$")
COMPLETION_RE = re.compile(
    r"^<reasoning>\n(?P<body>.*)\n</reasoning>\n<answer>(?P<answer>\d+)</answer>$", re.DOTALL
)
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def check_problem(question: str, completion: str, answer: int, difficulty: int) -> None:
    """Assert every invariant of one arith problem (shared by the dataset and hypothesis tests)."""
    match = COMPLETION_RE.match(completion)
    assert match is not None, completion
    assert int(match["answer"]) == answer
    lines = match["body"].split("\n")
    assert MIN_STEPS <= difficulty <= MAX_STEPS
    assert len(lines) == difficulty

    first_number = int(re.search(r"\d+", question)[0])
    previous = first_number
    for k, line in enumerate(lines, start=1):
        step = STEP_RE.match(line)
        assert step is not None, line
        index, a, op, b, c = int(step[1]), int(step[2]), step[3], int(step[4]), int(step[5])
        assert index == k
        assert a == previous
        assert OPS[op](a, b) == c, line
        assert all(0 <= v <= MAX_VALUE for v in (a, b, c)), line
        previous = c
    assert previous == answer
    assert 0 <= answer <= MAX_VALUE


@pytest.fixture(scope="module")
def train():
    return make_arith_dataset("train")


@pytest.fixture(scope="module")
def test_split():
    return make_arith_dataset("test")


# -----------------------------------------------------------------------------
# determinism and splits


def test_same_split_twice_gives_identical_rows():
    assert make_arith_dataset("test", n=50).to_list() == make_arith_dataset("test", n=50).to_list()


def test_different_splits_differ():
    test_q = list(make_arith_dataset("test", n=50)["question"])
    val_q = list(make_arith_dataset("validation", n=50)["question"])
    train_q = list(make_arith_dataset("train", n=50)["question"])
    assert test_q != val_q
    assert test_q != train_q
    assert val_q != train_q


def test_default_sizes(train, test_split):
    assert len(train) == DEFAULT_SIZES["train"] == 4000
    assert len(test_split) == DEFAULT_SIZES["test"] == 200
    assert len(make_arith_dataset("validation")) == DEFAULT_SIZES["validation"] == 200


def test_n_sets_the_number_of_rows():
    assert len(make_arith_dataset("validation", n=7)) == 7


def test_held_out_questions_never_appear_in_train(train, test_split):
    train_questions = set(train["question"])
    held_out = set(test_split["question"]) | set(make_arith_dataset("validation")["question"])
    assert not held_out & train_questions


def test_columns(test_split):
    assert set(test_split.column_names) == {
        "prompt",
        "completion",
        "answer",
        "solution",
        "question",
        "difficulty",
    }


# -----------------------------------------------------------------------------
# row invariants


def test_every_row_obeys_the_invariants(train, test_split):
    for split in (train, test_split):
        for row in split:
            check_problem(row["question"], row["completion"], int(row["answer"]), row["difficulty"])


def test_solution_equals_completion(test_split):
    assert list(test_split["solution"]) == list(test_split["completion"])


def test_answer_column_is_text(test_split):
    assert all(isinstance(a, str) and a == str(int(a)) for a in list(test_split["answer"]))


def test_all_difficulties_occur(train):
    assert set(train["difficulty"]) == {2, 3, 4, 5}


def test_gold_completion_earns_full_correctness(test_split):
    rows = test_split.select(range(0, 200, 10))
    assert correctness_reward(list(rows["completion"]), answer=list(rows["answer"])) == [2.0] * len(rows)


def test_gold_completion_earns_full_format(test_split):
    rows = test_split.select(range(0, 200, 10))
    assert format_reward(list(rows["completion"])) == [0.8] * len(rows)


def test_solution_property_hand_example():
    problem = ArithProblem(
        "Mia has 7 pens. She buys 5 more. She gives away 3. How many pens now?",
        ("Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9"),
        9,
    )
    assert (
        problem.solution
        == "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"
    )


# -----------------------------------------------------------------------------
# arguments


@pytest.mark.parametrize(("lo", "hi"), [(2, 2), (3, 4), (5, 5)])
def test_min_and_max_steps_are_respected(lo, hi):
    difficulties = set(make_arith_dataset("test", n=100, min_steps=lo, max_steps=hi)["difficulty"])
    assert difficulties == set(range(lo, hi + 1))


def test_unknown_split_raises():
    with pytest.raises(ValueError, match="'dev'"):
        make_arith_dataset("dev")


@pytest.mark.parametrize("n", [0, -3])
def test_non_positive_n_raises(n):
    with pytest.raises(ValueError, match=f"got {n}"):
        make_arith_dataset("test", n=n)


@pytest.mark.parametrize("n_steps", [0, 1, 6])
def test_bad_n_steps_raises(n_steps):
    with pytest.raises(ValueError, match=f"got {n_steps}"):
        generate_problem(random.Random(0), n_steps)


@pytest.mark.parametrize("min_steps,max_steps", [(1, 5), (2, 6), (5, 2)])
def test_out_of_range_steps_raise(min_steps, max_steps):
    with pytest.raises(ValueError, match=f"min_steps={min_steps}, max_steps={max_steps}"):
        make_arith_dataset("test", n=1, min_steps=min_steps, max_steps=max_steps)


@given(seed=st.integers(min_value=0, max_value=2**32 - 1), n_steps=st.integers(MIN_STEPS, MAX_STEPS))
@settings(max_examples=100, deadline=None)
def test_generate_problem_invariants(seed, n_steps):
    problem = generate_problem(random.Random(seed), n_steps)
    assert len(problem.steps) == n_steps
    check_problem(problem.question, problem.solution, problem.answer, n_steps)


@given(seed=st.integers(min_value=0, max_value=2**32 - 1), n_steps=st.integers(MIN_STEPS, MAX_STEPS))
@settings(max_examples=50, deadline=None)
def test_generate_problem_is_deterministic(seed, n_steps):
    assert generate_problem(random.Random(seed), n_steps) == generate_problem(random.Random(seed), n_steps)


# -----------------------------------------------------------------------------
# prompt formatting


def test_compact_template_is_the_default():
    row = make_arith_dataset("test", n=3)[0]
    assert row["prompt"] == f"Question: {row['question']}\n"


def test_seed_template_is_applied():
    row = make_arith_dataset("test", n=3, template="tags")[0]
    assert row["prompt"].startswith("Respond in format:")
    assert row["prompt"].endswith(f"Question: {row['question']}")


def test_custom_template_pattern_is_applied():
    row = make_arith_dataset("test", n=3, template="Q={question}!")[0]
    assert row["prompt"] == f"Q={row['question']}!"


def test_chat_gives_a_user_message():
    row = make_arith_dataset("test", n=3, chat=True)[0]
    assert row["prompt"] == [{"role": "user", "content": f"Question: {row['question']}\n"}]


def test_chat_does_not_change_the_rows():
    plain = make_arith_dataset("test", n=5)
    chat = make_arith_dataset("test", n=5, chat=True)
    assert list(plain["question"]) == list(chat["question"])
    assert list(plain["completion"]) == list(chat["completion"])


# -----------------------------------------------------------------------------
# variants


def test_default_variant_is_the_plain_arith_task():
    assert (
        make_arith_dataset("test", n=20).to_list()
        == make_arith_dataset("test", n=20, variant="arith").to_list()
    )
    assert get_arith_spec("arith") == ArithSpec()


@pytest.mark.parametrize("variant", ["arith-long", "arith-hard"])
def test_long_variants_have_four_to_eight_operations(variant):
    data = make_arith_dataset("test", n=200, variant=variant)
    assert set(data["difficulty"]) == set(range(4, 9))
    for row in data:
        assert len(row["prompt"]) + len(row["completion"]) < 480  # the tiny model's context is 512


@given(seed=st.integers(min_value=0, max_value=2**32 - 1), variant=st.sampled_from(sorted(ARITH_VARIANTS)))
@settings(max_examples=100, deadline=None)
def test_every_variant_states_true_steps_and_its_answer(seed, variant):
    spec = ARITH_VARIANTS[variant]
    problem = generate_problem(
        random.Random(seed), random.Random(seed).randint(spec.min_steps, spec.max_steps), spec
    )
    assert len(problem.chain) == len(problem.steps)
    used = [step for step in problem.chain if step.used]
    assert problem.difficulty == len(used)
    for prev, step in pairwise(used):
        assert step.a == prev.result  # the used steps form one chain
    for k, (line, step) in enumerate(zip(problem.steps, problem.chain, strict=True), start=1):
        assert line == step.text(k) and step.written == step.result
        assert all(0 <= v <= MAX_VALUE for v in (step.a, step.b, step.result))
    assert problem.answer == used[-1].result
    verdicts = score_steps(problem.steps, str(problem.answer))
    assert all(v.correct == 1.0 for v in verdicts)
    assert [v.necessary for v in verdicts] == [
        step.used for step in problem.chain
    ]  # distractor steps: unnecessary


def test_distractor_questions_name_whom_they_ask_about():
    rows = make_arith_dataset("test", n=200, variant="arith-distractor")
    pattern = re.compile(r"^Question: (\w+) has .* How many (\w+) does \1 have now\?\n$")
    assert all(pattern.match(p) for p in rows["prompt"])
    lines = [len(c.split("\n")) - 3 for c in rows["completion"]]  # step lines: all but 3 tag lines
    with_step = sum(n > d for n, d in zip(lines, rows["difficulty"], strict=True))
    assert 70 <= with_step <= 130  # distractor_step_prob = 0.5 of 200


def test_variant_splits_keep_held_out_questions_out_of_train():
    train = set(make_arith_dataset("train", n=2000, variant="arith-hard")["question"])
    test = set(make_arith_dataset("test", n=200, variant="arith-hard")["question"])
    assert not train & test


def test_unknown_variant_and_bad_specs_raise():
    with pytest.raises(ValueError, match=r"unknown arith variant 'arith-xl'; expected one of \['arith'"):
        make_arith_dataset("test", n=1, variant="arith-xl")
    with pytest.raises(ValueError, match="min_steps=6, max_steps=5"):
        ArithSpec(min_steps=6)
    with pytest.raises(ValueError, match="max_operand must be in"):
        ArithSpec(max_operand=0)
    with pytest.raises(ValueError, match="distractor_prob must be a probability"):
        ArithSpec(distractor_prob=1.5)
    with pytest.raises(ValueError, match="min_steps=3, max_steps=9"):
        make_arith_dataset("test", n=1, variant="arith-long", min_steps=3, max_steps=9)


# -----------------------------------------------------------------------------
# one wrong step


def test_with_wrong_step_recomputes_later_steps_hand_example():
    chain = (
        ArithStep(7, "+", 5),
        ArithStep(6, "+", 3, used=False),
        ArithStep(12, "-", 3),
        ArithStep(9, "*", 2),
    )
    gold = problem_from_chain("q", chain)
    assert gold.answer == 18
    wrong = with_wrong_step(gold, 0, 13)
    assert wrong.steps == (
        "Step 1: 7 + 5 = 13",
        "Step 2: 6 + 3 = 9",
        "Step 3: 13 - 3 = 10",
        "Step 4: 10 * 2 = 20",
    )
    assert wrong.answer == 20 and wrong.question == "q"
    verdicts = score_steps(wrong.steps, str(wrong.answer))
    assert [v.correct for v in verdicts] == [0.0, 1.0, 1.0, 1.0]


def test_with_wrong_step_refuses_bad_requests():
    gold = problem_from_chain(
        "q", (ArithStep(7, "+", 5), ArithStep(6, "+", 3, used=False), ArithStep(12, "-", 9))
    )
    with pytest.raises(ValueError, match="step 2 is a distractor"):
        with_wrong_step(gold, 1, 10)
    with pytest.raises(ValueError, match="12 is its true result"):
        with_wrong_step(gold, 0, 12)
    with pytest.raises(ValueError, match="outside the chain of 3 steps"):
        with_wrong_step(gold, 3, 1)
    assert with_wrong_step(gold, 0, 8) is None  # 8 - 9 < 0: never shown


@given(seed=st.integers(min_value=0, max_value=2**32 - 1), variant=st.sampled_from(sorted(ARITH_VARIANTS)))
@settings(max_examples=100, deadline=None)
def test_a_wrong_step_is_the_only_step_the_verifier_flags(seed, variant):
    rng = random.Random(seed)
    spec = ARITH_VARIANTS[variant]
    gold = generate_problem(rng, rng.randint(spec.min_steps, spec.max_steps), spec)
    index = rng.choice([i for i, s in enumerate(gold.chain) if s.used])
    wrong = with_wrong_step(gold, index, gold.chain[index].result + rng.choice([-2, -1, 1, 2]))
    if wrong is None:
        return
    verdicts = score_steps(wrong.steps, str(wrong.answer))
    assert [v.correct < 1 for v in verdicts] == [i == index for i in range(len(gold.chain))]
    assert wrong.steps[:index] == gold.steps[:index]
    assert wrong.answer != gold.answer
