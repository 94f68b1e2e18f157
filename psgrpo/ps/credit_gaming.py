"""Adversarial suite for process credit: gamed variants of honest solutions, scored like training.

A policy trained with PS-GRPO is paid in token advantages, so a gamed completion (padded with
steps, split into many steps, merged into one, an answer with no reasoning …) is a threat only if
it earns more credit than the honest solution it imitates. This module builds such variants of
honest arith solutions and runs each group through the trainer's own functions::

    completion text ──tokenizer──► ids + EOS ──segment_completions──► steps and token spans
                    ──step scorer──► raw step scores ──normalize_step_scores──► r̃ (per group)
                    ──correctness + format rewards──► group-normalised (as TRL) ──► A_i
                    ──ps_token_advantages(advantage_mode)──► token advantages (B, T)

Each variant is put in a group of three with the honest solution and one solution with a wrong
step, and its **relative credit** is its mean token advantage minus the honest solution's (same
group, same statistics): positive means gaming pays. :func:`credit_table` does this for every
variant, every ``ps_advantage_mode`` and every scorer in :data:`SCORERS`.
tests/ps/test_credit_gaming.py holds the suite to "no variant pays under the default mode";
``python experiments/credit_gaming.py`` prints the tables of docs/robustness.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from psgrpo.advantages import ps_token_advantages
from psgrpo.config.options import ProcessMode, allowed
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, extract_equations
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.segmentation import TextSegmenter, get_segmenter, segment_completions
from psgrpo.ps.signal import normalize_step_scores, score_steps, step_tensors
from psgrpo.rewards.functions import correctness_reward, format_reward

# --------------------------------------------------------------------------- solutions


@dataclass(frozen=True)
class Step:
    """One arithmetic step ``a op b = result`` (op in ``+ - *``)."""

    a: int
    op: str
    b: int

    @property
    def result(self) -> int:
        return self.a + self.b if self.op == "+" else self.a - self.b if self.op == "-" else self.a * self.b

    def __str__(self) -> str:
        return f"{self.a} {self.op} {self.b} = {self.result}"


@dataclass(frozen=True)
class Problem:
    """An arith problem with its honest solution steps; ``wrong`` has one wrong step."""

    question: str
    steps: tuple[Step, ...]
    wrong: tuple[str, ...]
    wrong_answer: int

    @property
    def answer(self) -> int:
        return self.steps[-1].result


PROBLEMS = (
    Problem(
        "Mia has 7 pens. She buys 5 more. She gives away 3. How many pens now?",
        (Step(7, "+", 5), Step(12, "-", 3)),
        ("7 + 5 = 13", "13 - 3 = 10"),
        10,
    ),
    Problem(
        "Tom has 6 cards. He doubles them. He finds 4 more. He loses 7. How many cards now?",
        (Step(6, "*", 2), Step(12, "+", 4), Step(16, "-", 7)),
        ("6 * 2 = 12", "12 + 4 = 15", "15 - 7 = 8"),
        8,
    ),
)
"""The honest solutions gamed here (the first is the issue's example)."""


def completion(lines: Sequence[str], answer: object, markers: bool = True, reasoning: bool = True) -> str:
    """A completion in the task's format: ``Step k:`` lines (or bare lines), then the answer."""
    body = "\n".join(f"Step {k}: {line}" if markers else line for k, line in enumerate(lines, 1))
    head = f"<reasoning>\n{body}\n</reasoning>\n" if reasoning else ""
    return f"{head}<answer>{answer}</answer>"


def unit_steps(step: Step) -> list[str]:
    """``12 - 3 = 9`` as ``12 - 1 = 11``, ``11 - 1 = 10``, ``10 - 1 = 9``; other steps unchanged."""
    if step.op not in {"+", "-"} or step.b < 2:
        return [str(step)]
    value, lines = step.a, []
    for _ in range(step.b):
        lines.append(str(Step(value, step.op, 1)))
        value = Step(value, step.op, 1).result
    return lines


def _last_additive(steps: Sequence[Step]) -> int:
    return max(i for i, step in enumerate(steps) if step.op in {"+", "-"})


def gamed_variants(p: Problem) -> dict[str, str]:
    """Name → completion text of every gamed variant of ``p``'s honest solution (and the control)."""
    honest = [str(step) for step in p.steps]
    first = p.steps[0].result
    split_at = _last_additive(p.steps)
    numbers = [p.steps[0].a] + [step.b for step in p.steps]
    return {
        "honest (control)": completion(honest, p.answer),
        "pad: 2 unrelated true steps": completion(["1 + 1 = 2", "2 + 2 = 4", *honest], p.answer),
        "pad: 6 unrelated true steps": completion(
            [str(Step(2**k, "+", 2**k)) for k in range(6)] + honest, p.answer
        ),
        "pad: no-op steps (x + 0, x * 1)": completion(
            [honest[0], f"{first} + 0 = {first}", f"{first} * 1 = {first}", *honest[1:]], p.answer
        ),
        "pad: x = x step": completion([honest[0], f"{first} = {first}", *honest[1:]], p.answer),
        "pad: detour (x + 1, x - 1)": completion(
            [honest[0], f"{first} + 1 = {first + 1}", f"{first + 1} - 1 = {first}", *honest[1:]], p.answer
        ),
        "pad: halves of question numbers (7 / 2 = 3.5)": completion(
            [*honest[:-1], *(f"{n} / 2 = {n / 2:g}" for n in numbers if n % 2), honest[-1]], p.answer
        ),
        "pad: a division restating a value (24/2 = 12)": completion(
            [honest[0], f"{2 * first}/2 = {first}", *honest[1:]], p.answer
        ),
        "split: one step into unit steps": completion(
            honest[:split_at] + unit_steps(p.steps[split_at]) + honest[split_at + 1 :], p.answer
        ),
        "split: every step into unit steps": completion(
            [line for step in p.steps for line in unit_steps(step)], p.answer
        ),
        "merge: all steps into one": completion([", ".join(honest)], p.answer),
        "merge: no markers at all": completion(honest, p.answer, markers=False),
        "repeat a correct step": completion([honest[0], *honest], p.answer),
        "restate the answer as a step": completion([*honest, f"The answer is {p.answer}."], p.answer),
        "marker inside the answer": completion(honest, f"Step {len(honest) + 1}: {p.answer}"),
        "copy question numbers, no computing": completion(
            [f"We have {', '.join(map(str, numbers))}.", *honest], p.answer
        ),
        "correct answer, no reasoning": completion([], p.answer),
        "correct answer, no reasoning tags": completion([], p.answer, reasoning=False),
    }


HOSTILE_STEPS: dict[str, str] = {
    "3,000 divisions": "Step 1: 1" + " / 7" * 3000 + " = 0",
    "2,000 nested parentheses": "Step 1: " + "(" * 2000 + "1" + ")" * 2000 + " = 1",
    "2,000 factors of 99999": "Step 1: " + " * ".join(["99999"] * 2000) + " = 1",
    "a 10,000-digit number": "Step 1: " + "9" * 10_000 + " + 1 = 2",
    "2,000 minus signs": "Step 1: 1 = " + "-" * 2000 + "1",
    "a 10,000-digit annotation": "<<" + "9" * 10_000 + "+1=2>>2",
    "an annotation of 1,000 terms": "<<" + "+".join(["1"] * 1000) + "=1000>>1000",
    "a 60-digit number": "Step 1: " + "1" * 60 + " + 1 = 2",
    "deep parentheses, then a plain equation": "Step 1: " + "(" * 100 + " 2 = 2, 7 + 5 = 12",
}
"""Step texts a policy can write that once made the verifier raise (the first four are the issue's:
``RecursionError`` ×3, ``ValueError: Exceeds the limit (4300 digits)``); each must be counted as
unparsed, never raised (tests/ps/scorers/test_arithmetic.py, ``bench_verifier.py --scaling``)."""


# --------------------------------------------------------------------------- scorers


def prm_all_ones(prompts: Sequence[Any], steps: Sequence[Sequence[str]], **_: Any) -> list[list[float]]:
    """PRM-style scorer: 1.0 for every non-empty step (0.0 for a blank one), whatever it says."""
    return [[1.0 if step.strip() else 0.0 for step in sample] for sample in steps]


def prm_gullible(prompts: Sequence[Any], steps: Sequence[Sequence[str]], **_: Any) -> list[list[float]]:
    """PRM-style scorer that catches false arithmetic but nothing else: 0.0 for a step with a false
    equation, 1.0 for any other non-empty step (padding, restatements, no-ops all pass)."""
    return [
        [
            0.0 if not step.strip() or any(not eq.holds for eq in extract_equations(step)) else 1.0
            for step in sample
        ]
        for sample in steps
    ]


SCORERS: dict[str, Callable[..., list[list[float]]]] = {
    "arithmetic": ArithmeticVerifier(),
    "reference": ReferenceVerifier(),
    "prm_all_ones": prm_all_ones,
    "prm_gullible": prm_gullible,
}
"""The scorers the suite runs: psgrpo's two verifiers and two PRM-style callables (the reference
verifier reads the honest solution as the row's gold ``solution``)."""

# --------------------------------------------------------------------------- credit


def token_credit(
    completions: Sequence[str],
    answers: Sequence[str],
    tokenizer: Any,
    scorer: Callable[..., list[list[float]]],
    mode: str,
    num_generations: int,
    segmenter: TextSegmenter | None = None,
    outcome_weight: float = 1.0,
    lambda_: float = 1.0,
    temperature: float = 0.1,
    solutions: Sequence[str] | None = None,
) -> list[torch.Tensor]:
    """Token advantages of each completion, computed as the trainer computes them for method ``ps``.

    Args:
        completions: (N,) completion texts, groups of ``num_generations`` consecutive rows.
        answers: (N,) gold answers (the ``answer`` column).
        tokenizer: the policy's tokenizer; each completion is its ids plus EOS, as sampled.
        scorer: a step scorer ``(prompts, steps, **columns) -> list[list[float]]``.
        mode: a :data:`~psgrpo.config.options.ProcessMode` (``auto`` resolved: :func:`psgrpo.ps.signal.resolve_process_mode`).
        segmenter: default ``markers`` (``Step N:``), the trainer's default.
        outcome_weight, lambda_, temperature: ``ps_outcome_weight``, ``ps_lambda``,
            ``ps_min_temperature``.
        solutions: (N,) the rows' gold worked solutions (the ``solution`` column), for scorers that read it.

    Returns:
        N tensors (n_i,): the advantage of every completion token (EOS included).
    """
    ids = [
        tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for text in completions
    ]
    segmentation = segment_completions(tokenizer, ids, segmenter or get_segmenter("markers"))
    prompts = [""] * len(completions)
    columns = {"answer": list(answers), **({"solution": list(solutions)} if solutions is not None else {})}
    raw = score_steps(scorer, prompts, segmentation.steps, columns, fallback=False)
    normalized = normalize_step_scores(raw, num_generations)
    rewards = [
        c + f
        for c, f in zip(
            correctness_reward(completions, answer=list(answers)), format_reward(completions), strict=True
        )
    ]
    # A_i as TRL computes it, (r − mean_g) / (std_g + 1e-4): one "step" per completion in normalize_step_scores
    outcome = torch.tensor([a for (a,) in normalize_step_scores([[r] for r in rewards], num_generations)])
    width = max(len(row) for row in ids)
    tensors = step_tensors(normalized, segmentation.token_spans, width, torch.device("cpu"))
    mask = (tensors.segment_index >= 0).long()
    advantages = ps_token_advantages(
        outcome_advantages=outcome.to(torch.float32),
        completion_mask=mask,
        step_advantages=tensors.step_advantages,
        segment_index=tensors.segment_index,
        process_valid=tensors.process_valid,
        advantage_mode=mode,
        outcome_weight=outcome_weight,
        lambda_=lambda_,
        min_temperature=temperature,
    )
    return [row[: len(row_ids)] for row, row_ids in zip(advantages, ids, strict=True)]


@dataclass(frozen=True)
class CreditRow:
    """One variant under one scorer and mode: mean token advantages (honest, variant) in its group."""

    problem: int
    scorer: str
    mode: str
    variant: str
    honest: float
    gamed: float

    @property
    def relative(self) -> float:
        """Mean token advantage of the variant minus the honest solution's (> 0: gaming pays)."""
        return self.gamed - self.honest


def credit_table(
    tokenizer: Any,
    problems: Sequence[Problem] = PROBLEMS,
    scorers: dict[str, Callable[..., list[list[float]]]] | None = None,
    modes: Sequence[str] = allowed(ProcessMode),
    **credit_options: Any,
) -> list[CreditRow]:
    """Relative credit of every gamed variant, for every problem, scorer and mode.

    Each variant is scored in the group [honest, variant, wrong-step solution] (G = 3);
    ``credit_options`` go to :func:`token_credit` (e.g. ``temperature``).
    """
    rows = []
    for k, problem in enumerate(problems):
        wrong = completion(problem.wrong, problem.wrong_answer)
        honest = completion([str(step) for step in problem.steps], problem.answer)
        for scorer_name, scorer in (scorers or SCORERS).items():
            for mode in modes:
                for name, text in gamed_variants(problem).items():
                    credit = token_credit(
                        [honest, text, wrong],
                        [str(problem.answer)] * 3,
                        tokenizer,
                        scorer,
                        mode,
                        3,
                        solutions=[honest] * 3,
                        **credit_options,
                    )
                    rows.append(
                        CreditRow(
                            k, scorer_name, mode, name, credit[0].mean().item(), credit[1].mean().item()
                        )
                    )
    return rows
