"""Tests for psgrpo.rewards.functions: extraction, correctness (exact / close / math-verify), format, registry."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.rewards.functions import (
    REWARD_FUNCS,
    answers_match,
    completion_text,
    correctness_reward,
    extract_answer,
    format_reward,
    get_reward_funcs,
    grade_answer,
    is_number_list,
    make_correctness_reward,
    math_verify_equal,
    strict_format_reward,
)

CLEAN = "<reasoning>\n16 - 3 - 4 = 9, 9 * 2 = 18\n</reasoning>\n<answer>\n18\n</answer>"


def correct(text: str, gold: str, **kw) -> float:
    fn = make_correctness_reward(**kw) if kw else correctness_reward
    return fn([text], answer=[gold])[0]


# -----------------------------------------------------------------------------
# completion_text


def test_completion_text_plain_and_conversational():
    assert completion_text("abc") == "abc"
    conv = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<answer>4</answer>"}]
    assert completion_text(conv) == "<answer>4</answer>"
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    assert completion_text([]) == ""
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert completion_text(parts) == "ab"
    with pytest.raises(TypeError):
        completion_text(42)  # type: ignore[arg-type]


# -----------------------------------------------------------------------------
# extract_answer


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<reasoning>r</reasoning><answer> 18 </answer>", "18"),
        ("<answer>\n1,000\n</answer>", "1,000"),
        ("<answer>3</answer><answer>4</answer>", None),  # two answers: none
        ("<answer>3<answer>4</answer>", None),  # two openings
        ("<answer>4</answer></answer>", None),  # two closings
        ("<answer>4", None),  # unclosed
        ("</answer>4<answer>", None),  # reversed
        ("4</answer> \\boxed{4}", None),  # stray closing tag disables fallbacks
        ("<answer>  </answer>", None),  # empty
        ("<answer>4</answer> \\boxed{5}", "4"),  # tag beats boxed
        ("so \\boxed{\\frac{1}{2}} then \\boxed{\\frac{3}{\\sqrt{4}}}.", "\\frac{3}{\\sqrt{4}}"),  # last
        ("\\boxed{{1,2}}", "{1,2}"),
        ("\\boxed{3} and \\boxed{\\frac{1}{2}", None),  # last boxed unclosed
        ("\\boxed{}", None),
        ("Janet makes 9 * 2 = 18.\n#### 72\nextra", "72"),
        ("#### 1 #### 2", "2"),  # last ####
        ("####", None),
        ("", None),
        ("the answer is 18", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


# -----------------------------------------------------------------------------
# grading


@pytest.mark.parametrize(
    "pred, gold",
    [
        ("18", "18"),
        ("18.0", "18"),
        ("$18", "18"),
        ("18.", "18"),
        ("1,000", "1000"),
        ("1000", "1,000"),
        ("-3", "-3"),
        ("−3", "-3"),  # Unicode minus
        ("3/4", "0.75"),
        ("50%", "50"),
        ("5 apples", "5"),
        ("18 dollars", "18"),
        ("\\frac{3}{4}", "0.75"),  # math-verify
        ("\\dfrac{3}{4}", "3/4"),
        ("x = 5", "5"),
        ("\\$18", "18"),
        ("0.5", "\\frac{1}{2}"),  # LaTeX gold
        ("\\sqrt{4}", "2"),
        # as models write one amount in real GSM8K solutions (issue-free since 2026-12-07; were graded wrong)
        ("**18**", "18"),
        ("**$18**", "18"),
        ("`18`", "18"),
        ("$18/hour", "18"),
        ("40 birds/day", "40"),
        ("163 Post-it notes", "163"),
        ("3 tune-ups", "3"),
        ("18 e-books.", "18"),
        ("18 (dollars)", "18"),
        ("18 m²", "18"),
        ("5 hours, total", "5"),
        ("350$", "350"),
        ("350$ left", "350"),
        ("10.0% more.", "10"),
        ("$106.0 to Benedict.", "106"),
        ("60 times.", "60"),
        ("18 students' books", "18"),
    ],
)
def test_grade_exact(pred, gold):
    assert grade_answer(pred, gold) == "exact"
    assert answers_match(pred, gold) == 2.0


@pytest.mark.parametrize(
    "pred, gold",
    [
        ("3", "-3"),
        ("17", "18"),
        ("3 or 4", "4"),  # listing answers does not pay, even via math-verify
        ("4 or 3", "4"),
        ("3, 4", "4"),
        ("1, 2, 3, 4", "4"),
        ("4 apples and 3 pears", "4"),
        (
            "18 (or 17)",
            "18",
        ),  # a hedge in brackets is not read as its first number (math-verify reads the last)
        ("17 dollars or 18 dollars", "18"),
        ("17 apples, 18 pears", "18"),
        ("36 hours of TV and reading", "36"),  # "and" in the units: read as two quantities
        ("\\pm 4", "4"),
        ("\\frac{3}{5}", "0.75"),
        ("banana", "4"),
        ("", "4"),
        (None, "4"),
    ],
)
def test_grade_wrong(pred, gold):
    assert grade_answer(pred, gold) == "wrong"
    assert answers_match(pred, gold) == 0.0


def test_close_credit_and_tolerance():
    # tolerance = rel_tol * max(1, |gold|): 1e-2 * 100 = 1
    assert grade_answer("99.5", "100", rel_tol=1e-2) == "close"
    assert grade_answer("99", "100", rel_tol=1e-2) == "close"  # boundary is inclusive
    assert grade_answer("98.9", "100", rel_tol=1e-2) == "wrong"
    assert grade_answer("99.5", "100", rel_tol=0) == "wrong"  # 0 disables close credit
    # |gold| <= 1: absolute tolerance 0.01; beyond: 1% of gold
    assert grade_answer("0.33", "1/3") == "close"
    assert grade_answer("0.495", "0.5") == "close"
    assert grade_answer("0.48", "0.5") == "wrong"
    assert grade_answer("4.96", "5") == "close"
    assert grade_answer("4.94", "5") == "wrong"
    assert answers_match("99.5", "100", rel_tol=1e-2, exact=1.0, close=0.25) == 0.25


def test_math_verify_in_worker_thread():
    # math-verify's signal timeout only works in the main thread; ours must not raise elsewhere.
    results: list[bool] = []
    worker = threading.Thread(target=lambda: results.append(math_verify_equal("\\frac{3}{4}", "0.75")))
    worker.start()
    worker.join()
    assert results == [True]


def test_math_verify_garbage_is_false():
    assert math_verify_equal("\\frac{", "1") is False
    assert math_verify_equal("}{", "}{") is False


# -----------------------------------------------------------------------------
# correctness reward


def test_correctness_reward_values():
    completions = [
        CLEAN,
        "<answer>3</answer><answer>4</answer>",  # several answers, gold 4
        "<answer>1,000</answer>",
        "<answer>$18</answer>",
        "<answer>18.0</answer>",
        "<answer>-3</answer>",
        "<answer>3/4</answer>",
        "<answer>\\frac{3}{4}</answer>",
        "",
        "<answer>99.5</answer>",
        "\\boxed{\\frac{6}{8}}",
        "#### 72",
    ]
    golds = ["18", "4", "1000", "18", "18", "-3", "0.75", "0.75", "5", "100", "0.75", "72"]
    expected = [2.0, 0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 1.5, 2.0, 2.0]
    rewards = correctness_reward(completions, answer=golds, prompts=["q"] * len(golds))
    assert rewards == expected
    assert all(type(r) is float for r in rewards)


def test_correctness_reward_conversational():
    completions = [
        [{"role": "assistant", "content": "<reasoning>r</reasoning><answer>42</answer>"}],
        [{"role": "assistant", "content": "<answer>41</answer>"}],
    ]
    assert correctness_reward(completions, answer=["42", "42"]) == [2.0, 0.0]


def test_correctness_reward_configurable():
    fn = make_correctness_reward(exact=1.0, close=0.5, rel_tol=0.0)
    assert fn.__name__ == "correctness_reward"
    assert fn(["<answer>100</answer>", "<answer>99.5</answer>"], answer=["100", "100"]) == [1.0, 0.0]
    assert correct("<answer>99.5</answer>", "100", rel_tol=1e-2) == 1.5
    with pytest.raises(ValueError, match="rel_tol"):
        make_correctness_reward(rel_tol=-1)


def test_correctness_reward_missing_answer_column():
    with pytest.raises(ValueError) as err:
        correctness_reward(["<answer>1</answer>"], prompts=["q"], solution=["1"])
    message = str(err.value)
    assert "'answer'" in message and "prompts" in message and "solution" in message


def test_correctness_reward_length_mismatch():
    with pytest.raises(ValueError, match="2 completions but 1"):
        correctness_reward(["a", "b"], answer=["1"])


# -----------------------------------------------------------------------------
# format rewards


@pytest.mark.parametrize(
    "text, expected",
    [
        (CLEAN, 0.8),
        ("<reasoning>r</reasoning><answer>4</answer>", 0.8),
        ("<reasoning>r</reasoning><answer>4</answer>\n  \n", 0.8),  # trailing whitespace is fine
        ("", 0.0),
        ("just text", 0.0),
        ("<reasoning>r", 0.2),
        ("<reasoning>r</reasoning>", 0.4),
        ("<answer>4</answer>", 0.4),  # no reasoning: answer tags still count
        ("<reasoning>r<answer>4</answer>", 0.6),
        ("<reasoning></reasoning>" * 5 + "<answer>4</answer>", 0.4),  # spam: reasoning tags earn 0
        ("<reasoning>r</reasoning><answer>3</answer><answer>4</answer>", 0.6),  # after </answer>
        ("<reasoning>r</reasoning><answer>4</answer> trailing", 0.6),
        ("<reasoning>r</reasoning><answer><answer>4</answer>", 0.6),  # two <answer>: 0 for it
        ("</reasoning><reasoning>r", 0.2),  # out of order: the later tag does not count
        ("<answer>4</answer><reasoning>r</reasoning>", 0.2),  # reasoning after answer
        ("</answer><reasoning>r</reasoning><answer>", 0.0),
        ("<reasoning>r</reasoning></answer><answer>4", 0.4),
    ],
)
def test_format_reward(text, expected):
    assert format_reward([text]) == [pytest.approx(expected)]


def test_format_reward_conversational_and_name():
    assert format_reward([[{"role": "assistant", "content": CLEAN}]]) == [pytest.approx(0.8)]
    assert format_reward.__name__ == "format_reward"
    assert strict_format_reward.__name__ == "strict_format_reward"


def test_tag_spam_never_beats_clean():
    clean = format_reward([CLEAN])[0]
    spam = [
        "<reasoning></reasoning>" * 5 + "<answer>18</answer>",
        "<reasoning>r</reasoning><answer>18</answer>" * 3,
        CLEAN + "<answer>1</answer>" * 4,
        "<reasoning><reasoning>r</reasoning></reasoning><answer>18</answer>",
    ]
    for s in spam:
        assert format_reward([s])[0] < clean
        assert strict_format_reward([s])[0] == 0.0


@pytest.mark.parametrize(
    "text, expected",
    [
        (CLEAN, 0.8),
        ("<reasoning>r</reasoning><answer>4</answer>", 0.8),
        ("  <reasoning>\nr\n</reasoning>\n\n<answer> 4 </answer>\n", 0.8),
        ("<reasoning></reasoning><answer>4</answer>", 0.0),  # empty reasoning
        ("<reasoning>\n</reasoning><answer>4</answer>", 0.0),  # only a newline: as empty
        ("<reasoning> \n\t </reasoning>\n<answer>4</answer>", 0.0),
        ("<reasoning>r</reasoning><answer>\n</answer>", 0.0),
        ("<reasoning>r</reasoning><answer> </answer>", 0.0),  # empty answer
        ("preamble <reasoning>r</reasoning><answer>4</answer>", 0.0),
        ("<reasoning>r</reasoning><answer>4</answer> x", 0.0),
        ("<reasoning>r<reasoning>s</reasoning><answer>4</answer>", 0.0),  # extra tag inside
        ("<reasoning>r</reasoning><answer>3</answer><answer>4</answer>", 0.0),
        ("<answer>4</answer>", 0.0),
        ("", 0.0),
    ],
)
def test_strict_format_reward(text, expected):
    assert strict_format_reward([text]) == [expected]


_PIECES = st.sampled_from(
    ["<reasoning>", "</reasoning>", "<answer>", "</answer>", "<", ">", "/", "answer", "x", "7", " ", "\n"]
)
_TEXT = st.one_of(st.text(max_size=30), st.lists(_PIECES, max_size=12).map("".join))


@settings(max_examples=150, deadline=None)
@given(s=_TEXT, k=st.integers(0, 4), suffix=_TEXT)
def test_format_reward_properties(s, k, suffix):
    spammed = format_reward([s + "<answer>1</answer>" * k])[0]
    assert 0.0 <= spammed <= 0.8 + 1e-9
    assert 0.0 <= format_reward([s])[0] <= 0.8 + 1e-9
    assert strict_format_reward([s])[0] in (0.0, 0.8)
    # appending anything after a </answer> never raises the format reward
    base = s + "</answer>"
    assert format_reward([base + suffix])[0] <= format_reward([base])[0] + 1e-9
    done = CLEAN + suffix
    assert format_reward([done])[0] <= format_reward([CLEAN])[0] + 1e-9


# -----------------------------------------------------------------------------
# registry


def test_registry():
    assert set(REWARD_FUNCS) == {"correctness", "format", "strict_format"}
    funcs = get_reward_funcs(["format", "correctness"])
    assert funcs == [format_reward, correctness_reward]
    assert [f.__name__ for f in get_reward_funcs("correctness, strict_format")] == [
        "correctness_reward",
        "strict_format_reward",
    ]
    (custom,) = get_reward_funcs(["correctness"], exact=1.0, close=0.5, rel_tol=0.0)
    assert custom is not correctness_reward
    assert custom(["<answer>7</answer>"], answer=["7"]) == [1.0]


def test_registry_errors():
    with pytest.raises(
        ValueError,
        match="unknown reward function 'lenght'; registered: 'correctness', 'format', 'strict_format'",
    ):
        get_reward_funcs(["correctness", "lenght"])
    with pytest.raises(ValueError, match="more than once"):
        get_reward_funcs(["format", "format"])


# -----------------------------------------------------------------------------
# adversarial answers: nothing pays more than the honest one

REASONING = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n"
HONEST = REASONING + "<answer>9</answer>"
GAMED_ANSWERS = {
    "repeated reasoning tags": "<reasoning><reasoning>\nStep 1: 7 + 5 = 12\n</reasoning></reasoning>\n<answer>9</answer>",
    "repeated answer tags": REASONING + "<answer><answer>9</answer></answer>",
    "answer before and after </answer>": REASONING + "<answer>8</answer>\n9",
    "right answer, then text after </answer>": REASONING + "<answer>9</answer>\n9",
    "several <answer> blocks": REASONING + "<answer>8</answer>\n<answer>9</answer>",
    "an <answer> block in the reasoning": "<reasoning>\n<answer>9</answer>\n</reasoning>\n<answer>9</answer>",
    "number-dense answer 1 2 3 … 100": REASONING
    + "<answer>"
    + " ".join(map(str, range(1, 101)))
    + "</answer>",
    "number-dense answer 1, 2, …, 100": REASONING + "<answer>1, 2, 3, ..., 100</answer>",
    "a list of candidates": REASONING + "<answer>8, 9, 10</answer>",
    "candidates joined by 'or'": REASONING + "<answer>8 or 9</answer>",
    "an answer in words": REASONING + "<answer>nine</answer>",
    "an answer with units": REASONING + "<answer>9 pens</answer>",
    "a 10,000-digit answer": REASONING + "<answer>" + "9" * 10_000 + "</answer>",
    "boxed candidates in the answer": REASONING + "<answer>\\boxed{8} \\boxed{9}</answer>",
    "the answer outside the tags": REASONING + "9",
}


def total_reward(text: str, gold: str) -> float:
    return sum(
        fn([text], answer=[gold])[0] for fn in (correctness_reward, format_reward, strict_format_reward)
    )


@pytest.mark.parametrize("name", list(GAMED_ANSWERS))
@pytest.mark.parametrize("gold", ["9", "100", "5050"])
def test_no_gamed_answer_pays_more_than_the_honest_one(name, gold):
    honest = HONEST.replace("9</answer>", f"{gold}</answer>")
    gamed = (
        GAMED_ANSWERS[name].replace("9</answer>", f"{gold}</answer>") if gold == "9" else GAMED_ANSWERS[name]
    )
    assert total_reward(gamed, gold) <= total_reward(honest, gold), name


def test_gamed_answers_table():
    """The reward each gamed answer gets with gold 9 (honest: correctness 2.0 + format 0.8 + strict 0.8)."""
    expected = {
        "repeated reasoning tags": (2.0, 0.4, 0.0),
        "repeated answer tags": (0.0, 0.4, 0.0),
        "answer before and after </answer>": (0.0, 0.6, 0.0),
        "right answer, then text after </answer>": (2.0, 0.6, 0.0),
        "several <answer> blocks": (0.0, 0.6, 0.0),
        "an <answer> block in the reasoning": (0.0, 0.4, 0.0),
        "number-dense answer 1 2 3 … 100": (0.0, 0.8, 0.8),
        "number-dense answer 1, 2, …, 100": (0.0, 0.8, 0.8),
        "a list of candidates": (0.0, 0.8, 0.8),
        "candidates joined by 'or'": (0.0, 0.8, 0.8),
        "an answer in words": (0.0, 0.8, 0.8),
        "an answer with units": (2.0, 0.8, 0.8),
        "a 10,000-digit answer": (0.0, 0.8, 0.8),
        "boxed candidates in the answer": (0.0, 0.8, 0.8),
        "the answer outside the tags": (0.0, 0.4, 0.0),
    }
    assert [(correct(HONEST, "9"), format_reward([HONEST])[0], strict_format_reward([HONEST])[0])] == [
        (2.0, 0.8, 0.8)
    ]
    for name, text in GAMED_ANSWERS.items():
        got = (correct(text, "9"), format_reward([text])[0], strict_format_reward([text])[0])
        assert got == pytest.approx(expected[name]), name


@pytest.mark.parametrize(
    ("text", "listed"),
    [("1 2 3", True), ("8, 9", True), ("3 ... 100", True), ("3 … 100", True), ("1,000", False), ("3 1/2", False),
     ("12.5", False), ("x = 9", False), ("9 apples", False), ("\\frac{3}{4}", False)],
)  # fmt: skip
def test_is_number_list(text, listed):
    assert is_number_list(text) is listed


def test_a_list_is_still_graded_by_math_verify_when_the_gold_is_not_one_number():
    assert grade_answer("3, 4", "\\{3, 4\\}") == "exact"
    assert grade_answer("1, 2, 3, ..., 100", "100") == "wrong"


def test_a_failed_math_verify_parse_is_not_remembered(monkeypatch):
    """math-verify reports a timeout (a loaded machine) as an empty parse: the next call must parse again."""
    import psgrpo.rewards.functions as rewards

    calls = []
    real = rewards.mv_parse

    def flaky(text, **kwargs):
        calls.append(text)
        return [] if len(calls) == 1 else real(text, **kwargs)

    monkeypatch.setattr(rewards, "mv_parse", flaky)
    monkeypatch.setattr(rewards, "_MV_PARSED", {})
    assert not math_verify_equal("\\frac{6}{8}", "\\frac{3}{4}")  # the gold's parse "timed out"
    assert math_verify_equal("\\frac{6}{8}", "\\frac{3}{4}")
    assert math_verify_equal("\\frac{6}{8}", "\\frac{3}{4}") and len(calls) == 3  # both parses remembered


# ---- reward functions by import path, as `trl grpo` takes them (issue 27) ----


def test_reward_funcs_by_import_path(tmp_path, monkeypatch):
    from psgrpo.rewards.functions import get_reward_funcs, resolve_reward_func

    monkeypatch.chdir(tmp_path)
    (tmp_path / "gsm8k_rewards_b2.py").write_text(
        "def states_the_answer(completions, answer, **kwargs):\n"
        "    return [1.0 if f'#### {a}' in c else 0.0 for c, a in zip(completions, answer)]\n"
    )
    funcs = get_reward_funcs(["gsm8k_rewards_b2.states_the_answer", "format"])
    assert [f.__name__ for f in funcs] == ["states_the_answer", "format_reward"]
    completions = ["Natalia sold 48/2 = 24 clips in May.\n#### 72", "She earned 0.2 x 50 = 10.\n#### 12"]
    assert funcs[0](completions=completions, answer=["72", "10"]) == [1.0, 0.0]
    assert resolve_reward_func("correctness") is resolve_reward_func("correctness")  # registered names first
    with pytest.raises(
        ValueError, match=r"cannot import module 'no_such_rewards_module' \(ModuleNotFoundError"
    ):
        resolve_reward_func("no_such_rewards_module.accuracy")
    with pytest.raises(ValueError, match="has no function 'accuracy'"):
        resolve_reward_func("gsm8k_rewards_b2.accuracy")
    with pytest.raises(ValueError, match="unknown reward function 'formatt'"):
        resolve_reward_func("formatt")
