"""The adversarial suite for process credit: no gamed variant beats the honest solution by default."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.ps.credit_gaming import (
    PROBLEMS,
    SCORERS,
    completion,
    credit_table,
    gamed_variants,
    prm_all_ones,
    prm_gullible,
    token_credit,
    unit_steps,
)
from psgrpo.ps.credit_gaming import Step as ArithStep
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.equations import extract_step
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.segmentation import get_segmenter
from psgrpo.ps.signal import resolve_process_mode

REQUIRED = [  # the variants the issue asks for, by the names the table uses
    "pad: 2 unrelated true steps",
    "pad: no-op steps (x + 0, x * 1)",
    "pad: x = x step",
    "split: one step into unit steps",
    "merge: all steps into one",
    "merge: no markers at all",
    "repeat a correct step",
    "restate the answer as a step",
    "marker inside the answer",
    "copy question numbers, no computing",
    "correct answer, no reasoning",
]


def test_the_suite_holds_every_required_variant_and_they_differ_from_the_honest_one():
    for problem in PROBLEMS:
        variants = gamed_variants(problem)
        honest = variants["honest (control)"]
        assert set(REQUIRED) <= set(variants)
        assert all(text != honest for name, text in variants.items() if name != "honest (control)")


def test_variants_have_the_step_counts_they_claim():
    segmenter = get_segmenter("markers")
    variants = gamed_variants(PROBLEMS[0])
    count = {name: len(segmenter(text)) for name, text in variants.items()}
    assert count["honest (control)"] == 2
    assert count["pad: 2 unrelated true steps"] == count["pad: no-op steps (x + 0, x * 1)"] == 4
    assert count["split: one step into unit steps"] == 4 and count["split: every step into unit steps"] == 8
    assert count["merge: all steps into one"] == count["merge: no markers at all"] == 1
    assert (
        count["marker inside the answer"] == 2
    )  # "<answer>Step 3: 9": a label opening no line starts no step
    assert unit_steps(ArithStep(12, "-", 3)) == ["12 - 1 = 11", "11 - 1 = 10", "10 - 1 = 9"]


@pytest.mark.parametrize("scorer", list(SCORERS))
def test_under_the_default_mode_no_gaming_variant_gets_more_credit_than_the_honest_solution(
    char_tokenizer, scorer
):
    """The default configuration: ProcessGRPOConfig's own defaults for the mode, T, w and λ."""
    defaults = {f.name: f.default for f in dataclasses.fields(ProcessGRPOConfig)}
    assert defaults["ps_advantage_mode"] == "auto"
    mode = resolve_process_mode(defaults["ps_advantage_mode"], SCORERS[scorer])
    rows = credit_table(
        char_tokenizer,
        scorers={scorer: SCORERS[scorer]},
        modes=[mode],
        temperature=defaults["ps_min_temperature"],
        outcome_weight=defaults["ps_outcome_weight"],
        lambda_=defaults["ps_lambda"],
    )
    assert len(rows) == len(PROBLEMS) * len(gamed_variants(PROBLEMS[0]))
    worst = max(rows, key=lambda row: row.relative)
    assert worst.relative <= 1e-5, worst


@pytest.mark.slow
def test_the_suite_catches_the_gaming_that_other_modes_pay_for(char_tokenizer):
    """reward_to_go pays for splitting (verifier) and padding (gullible PRM); PURE's own formula pays
    for fewer, longer steps: the table is sensitive enough to show it."""
    rows = credit_table(char_tokenizer, problems=PROBLEMS[:1], modes=["reward_to_go", "pure_min"])
    relative = {(r.scorer, r.mode, r.variant): r.relative for r in rows}
    assert relative["arithmetic", "reward_to_go", "split: every step into unit steps"] > 0.3
    assert relative["prm_gullible", "reward_to_go", "pad: 6 unrelated true steps"] > 0.3
    assert relative["prm_gullible", "pure_min", "merge: all steps into one"] > 0.05
    assert relative["arithmetic", "reward_to_go", "pad: 2 unrelated true steps"] < 0  # necessity closes it


def test_token_credit_is_the_trainer_path(char_tokenizer):
    problem = PROBLEMS[0]
    honest = completion([str(step) for step in problem.steps], problem.answer)
    wrong = completion(problem.wrong, problem.wrong_answer)
    credit = token_credit([honest, wrong], ["9", "9"], char_tokenizer, SCORERS["arithmetic"], "step", 2)
    assert [len(c) for c in credit] == [len(char_tokenizer(t)["input_ids"]) + 1 for t in (honest, wrong)]
    assert credit[0].mean() > 0 > credit[1].mean()
    # w = 0, λ = 0: no credit at all; λ alone: the outcome part is gone
    zero = token_credit(
        [honest, wrong],
        ["9", "9"],
        char_tokenizer,
        SCORERS["arithmetic"],
        "step",
        2,
        outcome_weight=0,
        lambda_=0,
    )
    assert all(torch.all(c == 0) for c in zero)


def test_prm_style_scorers():
    steps = [["Step 1: 7 + 5 = 12\n", "  \n", "Step 2: 7 + 5 = 13"]]
    assert prm_all_ones([""], steps) == [[1.0, 0.0, 1.0]]
    assert prm_gullible([""], steps) == [[1.0, 0.0, 0.0]]


def test_a_solution_that_stops_short_is_blamed_at_its_last_step_by_the_reference_verifier(char_tokenizer):
    """Leaving out the last operation: every written step is right and on the gold path, the answer is
    wrong. Judged step by step alone, its process credit cancels its outcome blame (measured in training
    on arith-hard, docs/learning.md); with the final-answer rule its last step carries the blame."""
    problem = PROBLEMS[1]
    honest = completion([str(step) for step in problem.steps], problem.answer)
    short = completion([str(step) for step in problem.steps[:-1]], problem.steps[-2].result)
    wrong = completion(problem.wrong, problem.wrong_answer)
    last_step = len(char_tokenizer(short.split("Step 2:")[0])["input_ids"])  # first token of its last step

    def credit(final_rule: bool) -> torch.Tensor:
        scorer = ReferenceVerifier(final_step_reaches_answer=final_rule)
        group = [honest, short, wrong]
        return token_credit(
            group, [str(problem.answer)] * 3, char_tokenizer, scorer, "step", 3, solutions=[honest] * 3
        )[1]

    outcome_only = token_credit(
        [honest, short, wrong], [str(problem.answer)] * 3, char_tokenizer, SCORERS["reference"], "step", 3,
        lambda_=0.0, solutions=[honest] * 3,
    )[1]  # fmt: skip
    assert torch.all(outcome_only < -0.5)  # GRPO alone blames every token
    blamed, judged_alone = credit(True), credit(False)
    assert torch.all(blamed[last_step:] < outcome_only[last_step:])  # the omission is blamed where it happens
    assert blamed[:last_step].mean() > blamed[last_step:].mean()  # its right first step is blamed less
    assert judged_alone.mean() > -0.1  # the old rule: close to no blame at all for a wrong answer


GARBLES = {  # 13 - 3 = 10 written with its operators missing, in the forms a policy could move to
    "digit for the operator": lambda step: re.sub(r" [-+*] ", " 2 ", step),  # 13 2 3 = 10
    "operator dropped, in parentheses": lambda step: re.sub(r"^(\d+) [-+*] (\d+)", r"(\1 \2)", step),
    "a digit beside the operator": lambda step: re.sub(r" ([-+*]) ", r" \1 2 ", step),  # 13 - 2 3 = 10
    "in a calculator annotation": lambda step: re.sub(
        r"^(.*) = (\d+)$", lambda m: f"<<{re.sub(r' [-+*] ', ' 2 ', m[1])}={m[2]}>>{m[2]}", step
    ),  # <<13 2 3=10>>10
    "the = as a digit": lambda step: step.replace(" = ", " 8 "),  # 13 - 3 8 10, what seed 50 wrote next
}


@pytest.mark.parametrize("garble", list(GARBLES))
@pytest.mark.parametrize(
    "scorer",
    [ArithmeticVerifier(), ReferenceVerifier(), ReferenceVerifier(correct_weight=0.0, reference_weight=1.0)],
    ids=["arithmetic", "reference", "reference 0/1"],
)
def test_a_wrong_solution_gains_nothing_by_garbling_its_wrong_steps(char_tokenizer, scorer, garble):
    """What a ``ps-ref-bin`` policy learned past 200 steps on arith-hard (docs/learning.md): write the
    operators as digits (``15 2 7 = 8``). Read as prose, such a step scored the neutral 0.5, above a wrong
    step's 0 under the 0/1 weights; read as a false equation it earns no more than the honest mistake.
    The neighbouring forms (an operator kept, parentheses, an annotation, the ``=`` as a digit) are read the
    same way."""
    for problem in PROBLEMS:
        honest = completion([str(step) for step in problem.steps], problem.answer)
        wrong = completion(problem.wrong, problem.wrong_answer)
        garbled_steps = [problem.wrong[0]] + [GARBLES[garble](step) for step in problem.wrong[1:]]
        garbled = completion(garbled_steps, problem.wrong_answer)
        assert all(any(eq.garbled for eq in extract_step(step).equations) for step in garbled_steps[1:])
        credit = token_credit(
            [honest, wrong, garbled], [str(problem.answer)] * 3, char_tokenizer, scorer, "step", 3,
            solutions=[honest] * 3,
        )  # fmt: skip
        assert credit[2].mean() <= credit[1].mean() + 1e-6, problem.question
        scores = scorer([problem.question], [garbled_steps], solution=[honest], answer=[str(problem.answer)])[
            0
        ]
        assert all(score < scorer.neutral_score for score in scores[1:])  # a false equation, not prose
