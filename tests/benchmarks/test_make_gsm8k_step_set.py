"""Tests for benchmarks/scorers/make_gsm8k_step_set.py: each rewrite's steps and label on hand-made
GSM8K-style rows (expectations computed by hand), properties of every rewrite on generated rows,
the command line, and (skipped without it) a build from the real GSM8K test split."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def mk(import_benchmark):
    return import_benchmark("scorers.make_gsm8k_step_set")


EGGS = {
    "question": "Janet’s ducks lay 16 eggs per day. She eats 3 for breakfast every morning and bakes muffins "
    "for her friends every day with 4. She sells the remainder at the farmers' market daily for $2 per "
    "fresh duck egg. How much in dollars does she make every day at the farmers' market?",
    "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer’s market.\n#### 18",
}
SHOP = {
    "question": "Tom buys 3 shirts that cost $12 each and 2 hats that cost $5 each. How much does he spend?",
    "answer": "The shirts cost 3 x $12 = $<<3*12=36>>36.\nThe hats cost 2 x $5 = $<<2*5=10>>10.\n"
    "He spends $36 + $10 = $<<36+10=46>>46 in total.\n#### 46",
}
BOXES = {
    "question": "Each of 4 boxes holds 6 red balls and 3 blue balls. How many balls are there?",
    "answer": "The boxes hold 4 * (6 + 3) = <<4*(6+3)=36>>36 balls.\n#### 36",
}
JACKET = {
    "question": "A jacket costs $80 and is on sale for 20% off. How much does it cost on sale?",
    "answer": "The discount is 80 * 20 / 100 = $<<80*20/100=16>>16.\n"
    "So the jacket costs 80 - 16 = $64 on sale.\n#### 64",
}
MARBLES = {
    "question": "Tom has 30 marbles. He gives half of them to Ann and then buys 4 more. How many does he have?",
    "answer": "He gives 30 / 2 = <<30/2=15>>15 marbles to Ann.\nThen he has 15 + 4 = <<15+4=19>>19 marbles.\n#### 19",
}
FINAL = "The answer is {}."
EGGS_STEPS = [
    "Janet sells 16 - 3 - 4 = 9 duck eggs a day.",
    "She makes 9 * 2 = $18 every day at the farmer’s market.",
    "The answer is 18.",
]


def gold_of(mk, row, index=0):
    return mk.gs.parse_gold(index, row["question"], row["answer"])


def rewrite(mk, row, kind, seed=0, answer="line"):
    """(steps, label, final_answer_correct) of ``kind`` on ``row``, the answer as 'The answer is n.'
    on a line of its own (``answer='line'``), folded into the last step, or not written (``none``)."""
    gold = gold_of(mk, row)
    draft = mk.Draft.of(gold, random.Random(seed))
    draft.answer, draft.template = answer, FINAL
    mk.KINDS[kind](draft, random.Random(seed))
    out = mk.finish(draft, kind)
    return out["steps"], out["label"], out["final_answer_correct"]


def all_seeds(mk, row, kind, seeds=range(30)):
    """Every distinct outcome of ``kind`` on ``row`` over ``seeds`` (rewrites that do not apply left out)."""
    seen = {}
    for seed in seeds:
        try:
            steps, label, correct = rewrite(mk, row, kind, seed)
        except mk.gs.Reject:
            continue
        seen[tuple(steps)] = (label, correct)
    return seen


# --------------------------------------------------------------------------- parsing


def test_parse_gold_reads_written_equations_links_and_units(mk):
    gold = gold_of(mk, EGGS)
    first, second = gold.slots
    assert (first.lhs_text, first.value, first.unit) == ("16 - 3 - 4 ", 9, "duck eggs")
    assert [x.value for x in mk.gs.leaves(first.tree)] == [16, 3, 4]
    assert first.links == [("question", -1)] * 3
    assert second.links == [("slot", 0), ("question", -1)]
    assert (gold.final, gold.final_slot) == (18, 1)
    assert gold.question_units[Fraction(16)] == ("eggs", False)
    assert gold.question_units[Fraction(2)] == ("", True)


def test_plain_equations_get_annotations(mk):
    """An equation the gold text writes without a calculator annotation is read as one (JACKET's last line)."""
    gold = gold_of(mk, JACKET)
    assert [s.value for s in gold.slots] == [16, 64]
    assert gold.final_slot == 1 and gold.slots[1].links == [("question", -1), ("slot", 0)]


def test_written_expression_with_units_and_en_dash(mk):
    gs = mk.gs
    node = gs.parse_math("$20/hour * 35 hours/week")
    assert gs.evaluate(node) == 700 and gs.render(node) == "$20/hour * 35 hours/week"
    assert gs.evaluate(gs.parse_math("30 original cars – 5 cars that exited")) == 25
    assert gs.parse_math("he has 3 apples") is None
    assert gs.evaluate(gs.parse_math("200 GB * 40%")) == 80


@pytest.mark.parametrize(
    "text, value, rendered",
    [
        ("12/3/4", 1, "12 / 3 / 4"),  # a glued fraction is the division as written, left to right
        ("2 apples x 3", 6, "2 apples x 3"),  # x before a number multiplies, after a unit too
        ("3 x bigger - 1", 2, "3 x bigger - 1"),  # otherwise it is a unit word
        ("5 kid's toys + (2)", 7, "5 kid's toys + (2)"),
        ("-$4 * 2", -8, "-$4 * 2"),
        ("$ 9 + $1", 10, "$9 + $1"),
        ("$350 000 x 5/100", 17500, "$350 000 x 5 / 100"),  # the package's number grammar
        ("8 acres x ¾", 6, "8 acres x ¾"),
    ],
)
def test_parse_math_keeps_the_written_form(mk, text, value, rendered):
    node = mk.gs.parse_math(text)
    assert mk.gs.evaluate(node) == value and mk.gs.render(node) == rendered


@pytest.mark.parametrize(
    "text",
    ["3 1/2", "3(47)", "7 // 2", "2^3", "2 ** 3", "-(3 + 4)", "--3", "+3", "$-5", "0130 - 0100", "3 (4) cm",
     "1 2 3 4 5 6 7 8", "3 a b c d e f g"],  # the last: a seventh unit word
)  # fmt: skip
def test_parse_math_refuses_what_the_rewrites_cannot_write_back(mk, text):
    assert mk.gs.parse_math(text) is None


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("She has 5 apples.\n#### 5", "no annotated calculation"),
        ("She has 2 + 3 = <<2+3=6>>6 apples.\n#### 6", "annotation result not exact"),
        ("She has 2 + 3 = <<2+3=5>>5 apples.\n#### 7", "final answer computed by no annotation"),
        ("She has 2 + 3 = <<2+3=5>>5 apples.\n#### five", "final answer not a number"),
    ],
)
def test_unusable_gold_names_the_reason(mk, answer, reason):
    with pytest.raises(mk.gs.Unusable, match=reason):
        mk.gs.parse_gold(0, "Anna has 2 apples and gets 3 more. How many?", answer)


@pytest.mark.parametrize(
    "after, unit",
    [(" duck eggs a day.", "duck eggs"), (" pupils like blue.", "pupils"), (" every day", ""),
     (" liters of water", "liters"), (" inside the jar", ""), (".", "")],
)  # fmt: skip
def test_unit_after_a_number(mk, after, unit):
    assert mk.gs.unit_after(after) == unit


def test_fmt_writes_short_decimals_and_rejects_others(mk):
    gs = mk.gs
    assert [gs.fmt(Fraction(x)) for x in ("18", "2.5", "-3", "0.05")] == ["18", "2.5", "-3", "0.05"]
    assert gs.fmt(Fraction(130000), commas=True) == "130,000"
    with pytest.raises(gs.Reject):
        gs.fmt(Fraction(1, 3))


# --------------------------------------------------------------------------- valid rewrites


def test_gold_and_the_three_answer_forms(mk):
    assert rewrite(mk, EGGS, "valid_gold") == (EGGS_STEPS, -1, True)
    steps, label, _ = rewrite(mk, EGGS, "valid_gold", answer="fold")
    assert steps == [EGGS_STEPS[0], EGGS_STEPS[1] + " The answer is 18."] and label == -1
    assert rewrite(mk, EGGS, "valid_gold", answer="none") == (EGGS_STEPS[:2], -1, True)
    row = {**EGGS, "answer": EGGS["answer"].replace("every day", "on each of 7 days")}  # ends on 7, not 18
    steps, _, _ = rewrite(mk, SHOP, "valid_gold", answer="none")
    assert steps[-1] == "He spends $36 + $10 = $46 in total." and len(steps) == 3
    assert rewrite(mk, row, "valid_gold", answer="none")[0][-1] == "The answer is 18."


def test_units_from_the_question_and_the_computing_step(mk):
    steps, label, correct = rewrite(mk, EGGS, "valid_units")
    assert steps == [
        "Janet sells 16 eggs - 3 duck eggs - 4 duck eggs = 9 duck eggs a day.",
        "She makes 9 duck eggs * $2 = $18 every day at the farmer’s market.",
        "The answer is 18.",
    ]
    assert (label, correct) == (-1, True)


def test_split_computes_a_part_first(mk):
    seen = all_seeds(mk, EGGS, "valid_split")
    firsts = set()
    for steps, (label, correct) in seen.items():
        assert (label, correct, len(steps)) == (-1, True, 4)
        assert steps[2:] == tuple(EGGS_STEPS[1:])
        if "3 + 4 = 7" in steps[0]:  # a - b - c as a - (b + c)
            assert steps[1] == "Janet sells 16 - 7 = 9 duck eggs a day."
            firsts.add("3 + 4")
        else:
            assert "16 - 3 = 13" in steps[0] and steps[1] == "Janet sells 13 - 4 = 9 duck eggs a day."
            firsts.add("16 - 3")
    assert firsts == {"3 + 4", "16 - 3"}


def test_merge_puts_the_first_calculation_in_parentheses(mk):
    steps, label, correct = rewrite(mk, EGGS, "valid_merge")
    assert steps == [
        "She makes (16 - 3 - 4) * 2 = $18 every day at the farmer’s market.",
        "The answer is 18.",
    ]
    assert (label, correct) == (-1, True)


def test_reorder_swaps_only_independent_steps(mk):
    steps, label, _ = rewrite(mk, SHOP, "valid_reorder")
    assert steps == ["The hats cost 2 x $5 = $10.", "The shirts cost 3 x $12 = $36.",
                     "He spends $36 + $10 = $46 in total.", "The answer is 46."]  # fmt: skip
    assert label == -1
    with pytest.raises(mk.gs.Reject):  # EGGS' second step uses the first's 9
        rewrite(mk, EGGS, "valid_reorder")


def test_route_distributes_and_regroups(mk):
    assert rewrite(mk, BOXES, "valid_route")[0] == [
        "The boxes hold 4 * 6 + 4 * 3 = 36 balls.",
        "The answer is 36.",
    ]
    assert rewrite(mk, EGGS, "valid_route")[0][0] == "Janet sells 16 - (3 + 4) = 9 duck eggs a day."


def test_restate_inserts_a_true_statement(mk):
    seen = all_seeds(mk, EGGS, "valid_restate")
    inserted = set()
    for steps in seen:
        extra = [s for s in steps if s not in EGGS_STEPS]
        assert len(extra) == 1 and len(steps) == 4
        inserted.add(extra[0])
        if "16 eggs" in extra[0]:
            assert steps.index(extra[0]) == 0
        elif "9 duck eggs" in extra[0]:
            assert steps.index(extra[0]) == 1
        else:
            assert extra[0] == "That is $18." and steps.index(extra[0]) == 2
    assert any("9 duck eggs" in s for s in inserted) and "That is $18." in inserted


def test_times_one_states_a_question_quantity_before_its_use(mk):
    seen = all_seeds(mk, EGGS, "valid_times_one")
    for steps in seen:
        extra = next(s for s in steps if s not in EGGS_STEPS)
        match = re.fullmatch(r"(\$?)(16|2)((?: eggs)?) (x|×|\*|/) 1 = \1\2\3\.", extra)
        assert match, extra
        assert steps.index(extra) == (0 if match[2] == "16" else 1)


def test_operators_and_percent(mk):
    outcomes = {steps[1] for steps in all_seeds(mk, EGGS, "valid_operators")}
    assert outcomes == {"She makes 9 x 2 = $18 every day at the farmer’s market.",
                        "She makes 9 × 2 = $18 every day at the farmer’s market."}  # fmt: skip
    steps, label, _ = rewrite(mk, JACKET, "valid_percent")
    assert steps[0] == "The discount is 20% of 80 = $16." and label == -1


def test_words_for_halves(mk):
    outcomes = {steps[0] for steps in all_seeds(mk, MARBLES, "valid_words")}
    assert outcomes == {
        "He gives half of 30 = 15 marbles to Ann.",
        "He gives half of 30 is 15 marbles to Ann.",
    }
    gold = gold_of(mk, MARBLES)
    draft = mk.Draft.of(gold, random.Random(0))
    draft.answer, draft.template = "line", FINAL
    draft.verbs[0] = "is"
    draft.set_tree(0, dataclasses.replace(gold.slots[0].tree, shown="words"))
    mk.rw._apply(draft, {}, {0: Fraction(14)})  # a slip in words: carried into both later steps
    out = mk.finish(draft, "error_slip")
    assert out["steps"] == ["He gives half of 30 is 14 marbles to Ann.", "Then he has 14 + 4 = 18 marbles.",
                            "The answer is 18."]  # fmt: skip
    assert out["label"] == 0


# --------------------------------------------------------------------------- errors


def test_slip_carries_the_wrong_value_forward(mk):
    seen = all_seeds(mk, EGGS, "error_slip")
    assert len(seen) > 3
    for steps, (label, correct) in seen.items():
        first = re.fullmatch(r"Janet sells 16 - 3 - 4 = ([\d.]+) duck eggs a day\.", steps[0])
        if first[1] != "9":  # the first calculation slipped: 2 * its value from then on
            twice = mk.gs.fmt(2 * Fraction(first[1]))
            assert (
                label == 0
                and steps[1] == f"She makes {first[1]} * 2 = ${twice} every day at the farmer’s market."
            )
            assert steps[2] == f"The answer is {twice}."
        else:
            assert label == 1 and steps[1].startswith("She makes 9 * 2 = $") and steps[1] != EGGS_STEPS[1]
        assert correct is False


def test_wrong_operand_is_another_question_number(mk):
    seen = all_seeds(mk, EGGS, "error_operand", range(60))
    assert len(seen) > 3
    for steps, (label, correct) in seen.items():
        tree = mk.gs.parse_math(steps[label].split("=")[0].split("sells" if label == 0 else "makes")[1])
        values = [x.value for x in mk.gs.leaves(tree)]
        gold_values = [[16, 3, 4], [9, 2]][label]
        assert sum(a != b for a, b in zip(values, gold_values, strict=True)) == 1
        assert set(values) <= {16, 3, 4, 2, 9}
        assert steps[:label] == tuple(EGGS_STEPS[:label]) and correct is False


def test_wrong_operation_flips_one_operator(mk):
    seen = all_seeds(mk, EGGS, "error_operation", range(60))
    expected = {
        ("Janet sells 16 + 3 - 4 = 15 duck eggs a day.",
         "She makes 15 * 2 = $30 every day at the farmer’s market.", "The answer is 30."),
        ("Janet sells 16 - 3 + 4 = 17 duck eggs a day.",
         "She makes 17 * 2 = $34 every day at the farmer’s market.", "The answer is 34."),
        (EGGS_STEPS[0], "She makes 9 / 2 = $4.5 every day at the farmer’s market.", "The answer is 4.5."),
    }  # fmt: skip
    assert set(seen) == expected
    assert {seen[s][0] for s in expected} == {0, 1}


def test_skipped_step_uses_the_input_in_the_later_step(mk):
    steps, label, correct = rewrite(mk, EGGS, "error_skipped")
    assert steps == ["She makes 16 * 2 = $32 every day at the farmer’s market.", "The answer is 32."]
    assert (label, correct) == (0, False)


def test_error_in_a_styled_solution(mk):
    """Units put on first, then a step skipped: the later step carries the input with its units."""
    gold = gold_of(mk, EGGS)
    draft = mk.Draft.of(gold, random.Random(0))
    draft.answer, draft.template = "line", FINAL
    mk.rw.valid_units(draft, random.Random(0))
    mk.rw.error_skipped(draft, random.Random(0))
    out = mk.finish(draft, "error_skipped")
    assert out["steps"] == [
        "She makes 16 duck eggs * $2 = $32 every day at the farmer’s market.",
        "The answer is 32.",
    ]
    assert out["label"] == 0


def test_stop_short_fails_at_the_answer(mk):
    assert rewrite(mk, EGGS, "error_stop_short") == ([EGGS_STEPS[0], "The answer is 9."], 1, False)
    steps, label, _ = rewrite(mk, EGGS, "error_stop_short", answer="fold")
    assert steps == [EGGS_STEPS[0] + " The answer is 9."] and label == 0
    assert rewrite(mk, EGGS, "error_stop_short", answer="none") == ([EGGS_STEPS[0]], 0, False)


def test_changed_value_that_is_also_a_question_number_is_rejected(mk):
    """Free text could not be updated unambiguously: 9 is the result and also a number of the question."""
    row = {"question": "A farm has 12 hens and 3 roosters. It sells 9 eggs. How many birds?",
           "answer": "It has 12 - 3 = <<12-3=9>>9 hens more than roosters.\nSo 9 + 3 = <<9+3=12>>12.\n#### 12"}  # fmt: skip
    gold = gold_of(mk, row)
    assert (
        sum(s.value == 9 for s in gold.slots) == 1
    )  # 9 is unique among the slots: only the question rule applies
    with pytest.raises(mk.gs.Reject, match=r"^the changed value is not unique in the solution$"):
        mk.gs.propagate(gold, {}, {0: Fraction(8)})


# --------------------------------------------------------------------------- properties


def _value(node: ast.AST) -> Fraction:
    """A test-side exact evaluator of + - * / over numbers (an independent check of the generator)."""
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    assert isinstance(node, ast.BinOp), ast.dump(node)
    a, b = _value(node.left), _value(node.right)
    return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.Div: a / b if b else Fraction(10**9)}[
        type(node.op)
    ]


def equations(step: str) -> list[tuple[Fraction, Fraction]]:
    """(left value, right value) of every ``expression = number`` in a step: words (units, prose)
    dropped, ``x``/``×``/``÷``, ``20% of``, ``half of``, ``twice`` read as arithmetic and ``is`` as
    ``=``; the longest readable expression before each ``=``."""
    text = re.sub(r"(?<=[\w)]) ?[x×] (?=[\d($])", " * ", step).replace("÷", "/").replace("$", "")
    text = re.sub(r"(\d+(?:\.\d+)?)% of", r"(\1/100) *", text)
    for words, factor in (("half of", "1/2"), ("a third of", "1/3"), ("a quarter of", "1/4"), ("twice", "2")):
        text = text.replace(words + " ", f"{factor} * ")
    text = re.sub(r"\bis (?=\d)", "= ", text)
    text = re.sub(r"[A-Za-z’']+", " ", text)
    parts = text.split("=")
    out = []
    for left, right in zip(parts[:-1], parts[1:], strict=True):
        number = re.match(r"\s*(-?\d+(?:\.\d+)?)", right)
        for start in range(len(left)):
            try:
                lhs = _value(ast.parse(left[start:].strip(), mode="eval"))
            except (SyntaxError, AssertionError):
                continue
            if number:
                out.append((lhs, Fraction(number[1])))
            break
    return out


def numbers(text: str) -> set[Fraction]:
    return {Fraction(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}


def answer_of(steps: list[str]) -> Fraction:
    """The answer a solution gives: 'The answer is n.' at its end, else its last number."""
    stated = re.search(r"answer is (-?[\d.]+)\.$", steps[-1])
    return Fraction(stated[1] if stated else re.findall(r"\d+(?:\.\d+)?", steps[-1].replace(",", ""))[-1])


UNITS = ["apples", "marbles", "pages", "cookies", "stickers"]


@st.composite
def chain_rows(draw):
    """A GSM8K-style row: 3-4 question numbers, 2-4 annotated steps each combining a question number
    or an earlier result with one or two others (+, -, *) or halving an even one, some results in dollars."""
    numbers = draw(st.lists(st.integers(2, 40), min_size=3, max_size=4, unique=True))
    unit = draw(st.sampled_from(UNITS))
    question = (f"Mia has {numbers[0]} {unit}. She buys {numbers[1]} packs with {numbers[2]} {unit} each"
                + (f" and gives away {numbers[3]}" if len(numbers) > 3 else "") + ". How many are left?")  # fmt: skip
    pool, lines = list(numbers), []
    for k in range(draw(st.integers(2, 4))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(numbers))
        op = draw(st.sampled_from("+-*/"))
        if op == "/" and a % 2:
            op = "+"
        expr = f"{a}{op}{2 if op == '/' else b}"  # a division halves an even value
        if op == "-" and a < b:
            expr = f"{b}-{a}"
        if draw(st.booleans()) and op not in "*/":
            expr += f"+{draw(st.sampled_from(numbers))}"
        value = _value(ast.parse(expr, mode="eval"))
        shown = re.sub(r"([-+*/])", r" \1 ", expr)
        dollar = draw(st.booleans())
        opening = draw(st.sampled_from(["Then she has", "She counts"])) if k else "She has"
        lines.append(f"{opening} {shown} = {'$' if dollar else ''}<<{expr}={value}>>{value}"
                     f"{'' if dollar else ' ' + unit} now.")  # fmt: skip
        pool.append(value)
    return {"question": question, "answer": "\n".join(lines) + f"\n#### {value}"}


def check_label_definition(mk, row: dict, gold, kind: str, out: dict) -> None:
    """A built row of ``kind`` keeps its label's definition: a valid rewrite has only true equations and
    the gold answer; an error rewrite's steps before ``label`` are true, use only gold values and
    numbers of the gold text, and its step ``label`` is the first one wrong (or a wrong final answer)."""
    gold_values = {s.value for s in gold.slots}
    steps, label = out["steps"], out["label"]
    found = [equations(s) for s in steps]
    assert out["final_answer_correct"] == (answer_of(steps) == gold.final)
    if kind in mk.VALID:
        assert label == -1 and out["final_answer_correct"], (kind, steps)
        assert all(a == b for eqs in found for a, b in eqs), (kind, steps)
    else:
        assert 0 <= label < len(steps), (kind, steps)
        assert all(a == b and b in gold_values for eqs in found[:label] for a, b in eqs), (kind, steps)
        gold_text = " ".join(t for t, _, _ in mk.Draft.of(gold, random.Random(0)).steps()) + row["question"]
        assert numbers(" ".join(steps[:label])) <= numbers(gold_text), (kind, steps)
        wrong_here = any(a != b or b not in gold_values for a, b in found[label]) or (
            label == len(steps) - 1 and answer_of(steps) != gold.final
        )
        assert wrong_here, (kind, steps, label)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=chain_rows(), seed=st.integers(0, 1000))
def test_every_rewrite_keeps_its_label_definition(mk, row, seed):
    try:
        gold = mk.gs.parse_gold(0, row["question"], row["answer"])
    except mk.gs.Unusable:
        return
    for kind in mk.KINDS:
        try:
            out = mk.build_row(gold, kind, random.Random(seed), style_share=0.5)
        except mk.gs.Reject:
            continue
        check_label_definition(mk, row, gold, kind, out)


def test_every_kind_is_built_from_the_hand_made_rows_and_keeps_its_label_definition(mk):
    """The deterministic companion of the property above: generated rows never give some kinds
    (valid_percent, valid_reorder, valid_words), the hand-made rows give every kind at least once."""
    built: dict[str, int] = dict.fromkeys(mk.KINDS, 0)
    for row in (EGGS, SHOP, BOXES, JACKET, MARBLES):
        gold = gold_of(mk, row)
        for kind in mk.KINDS:
            for seed in range(10):
                try:
                    out = mk.build_row(gold, kind, random.Random(seed), style_share=0.5)
                except mk.gs.Reject:
                    continue
                check_label_definition(mk, row, gold, kind, out)
                built[kind] += 1
    assert [kind for kind, count in built.items() if not count] == []


# --------------------------------------------------------------------------- the command


def write_gsm8k(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_main_writes_rows_and_a_summary(mk, tmp_path, capsys):
    folder = write_gsm8k(
        tmp_path / "gsm8k", [EGGS, SHOP, BOXES, JACKET, {"question": "q?", "answer": "1\n#### 1"}]
    )
    out = tmp_path / "set.jsonl"
    assert mk.main(["--gsm8k_dir", str(folder), "--n", "10", "--per_problem", "4", "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {"id", "problem", "steps", "label", "final_answer_correct", "kind", "source_row"} <= set(rows[0])
    assert len(rows) == 16 and len({r["id"] for r in rows}) == 16
    assert sum(r["label"] == -1 for r in rows) == 8
    report = capsys.readouterr().out
    assert "wrote 16 rows (8 valid, 8 with an error) from 4 problems" in report
    assert "gold solutions skipped (1): no annotated calculation: 1" in report
    again = tmp_path / "again.jsonl"
    mk.main(["--gsm8k_dir", str(folder), "--n", "10", "--per_problem", "4", "--output", str(again)])
    assert again.read_text() == out.read_text()  # deterministic


def test_main_errors_are_one_line(mk, tmp_path):
    with pytest.raises(SystemExit, match=r"psgrpo: error: --gsm8k_dir: no .*test\.jsonl"):
        mk.main(["--gsm8k_dir", str(tmp_path), "--output", str(tmp_path / "o.jsonl")])
    (tmp_path / "test.jsonl").write_text('{"question": "q", "answer": "a"}\n{oops\n')
    with pytest.raises(SystemExit, match=r"psgrpo: error: .*test\.jsonl:2: not JSON"):
        mk.main(["--gsm8k_dir", str(tmp_path), "--output", str(tmp_path / "o.jsonl")])
    assert not (tmp_path / "o.jsonl").exists()


def _shared_gsm8k_dir() -> Path:
    env = os.environ.get("PSGRPO_GSM8K_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "gsm8k"


@pytest.mark.skipif(not (_shared_gsm8k_dir() / "test.jsonl").is_file(), reason="no GSM8K copy in ../shared")
def test_builds_from_the_real_test_split(mk):
    rows = mk.read_gsm8k(_shared_gsm8k_dir() / "test.jsonl")
    out, summary = mk.build_set(rows, 40, seed=1, per_problem=2)
    assert summary.problems == 40 and len(out) == 80
    assert sum(r["label"] == -1 for r in out) == 40
    assert all(r["label"] < len(r["steps"]) and "<<" not in "".join(r["steps"]) for r in out)
    assert len({r["kind"] for r in out}) >= 12
