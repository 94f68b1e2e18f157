"""Arith data for GRPO-VPS's confidence probe: one-wrong-step copies and early-answer SFT rows.

GRPO-VPS probes ``C_k = P(gold answer | prompt, reasoning up to boundary k, "</reasoning>\\n<answer>")``.
A model fine-tuned on full solutions only has never seen an answer after unfinished reasoning, so
at intermediate step ends C is far out of distribution (about 1e-8 on the embedded checkpoint)
and its changes ΔC carry no information about which step went wrong. Two pieces here:

* :func:`random_wrong_step` makes a copy of a solution with **exactly one** wrong step result
  (later steps recomputed from it), the ground truth that ``psgrpo diagnose``
  (:mod:`psgrpo.commands.diagnose`) ranks ΔC against.
* :func:`probe_sft_rows` turns a share of the warm-start SFT rows into **early-answer** rows: the
  reasoning truncated after step ``k`` (``0 <= k < steps``), the probe's opening, and the answer
  that prefix leads to. The prefix and the opening are the row's *prompt*, so with TRL's
  completion-only loss the model learns the answer after the opening but is never trained to
  *write* the opening early (its own generations keep reasoning to the end). An on-track prefix
  is answered with the gold answer; with probability ``wrong_prob`` the prefix instead holds one
  wrong step and is answered with the value that wrong chain ends at, so the answer has to
  depend on the prefix, not on the question alone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from psgrpo.data.arith import ArithProblem, with_wrong_step

PROBE_OPEN = "</reasoning>\n<answer>"
PROBE_CLOSE = "</answer>"
"""The probe's text around the answer (the trainer's ``vps_probe_open`` / ``vps_probe_close`` defaults)."""


def reasoning_prefix(problem: ArithProblem, k: int) -> str:
    """The gold completion up to and including the newline after step ``k`` ("" for ``k = 0``).

    It is the completion text a step-end probe follows: ``<reasoning>\\nStep 1: …\\n…Step k: …\\n``.
    """
    if not 0 <= k <= len(problem.steps):
        raise ValueError(f"k={k} is outside [0, {len(problem.steps)}] steps")
    if k == 0:
        return ""
    return "<reasoning>\n" + "".join(f"{line}\n" for line in problem.steps[:k])


def random_wrong_step(
    problem: ArithProblem,
    rng: random.Random,
    max_delta: int = 3,
    steps: Sequence[int] | None = None,
    tries: int = 20,
) -> tuple[int, ArithProblem] | None:
    """``(index, copy)``: ``problem`` with one used step's result off by ``±1..max_delta``.

    The step is drawn uniformly from ``steps`` (chain indices; default: every used step), the
    offset uniformly from ``±1..max_delta``; later steps are recomputed (:func:`with_wrong_step`).
    Draws whose recomputed values leave [0, 99] are redrawn, up to ``tries`` times; ``None``
    when none fits.
    """
    if max_delta < 1:
        raise ValueError(f"max_delta must be at least 1, got {max_delta}")
    candidates = [i for i, step in enumerate(problem.chain) if step.used] if steps is None else list(steps)
    if not candidates:
        return None
    for _ in range(tries):
        index = rng.choice(candidates)
        delta = rng.choice([d for d in range(-max_delta, max_delta + 1) if d])
        copy = with_wrong_step(problem, index, problem.chain[index].result + delta)
        if copy is not None:
            return index, copy
    return None


def early_answer_row(
    prompt: str, problem: ArithProblem, k: int, open_text: str = PROBE_OPEN
) -> dict[str, str]:
    """An SFT row answering after step ``k``: prompt = question + reasoning prefix + opening, completion = answer."""
    return {
        "prompt": prompt + reasoning_prefix(problem, k) + open_text,
        "completion": f"{problem.answer}{PROBE_CLOSE}",
    }


def probe_sft_rows(
    prompts: Sequence[str],
    problems: Sequence[ArithProblem],
    rng: random.Random,
    early_answer_prob: float,
    wrong_prob: float = 0.0,
) -> list[dict[str, str]]:
    """SFT rows (``prompt``, ``completion``): the full gold solution, or with probability
    ``early_answer_prob`` an early-answer row (see the module docstring).

    An early-answer row truncates after ``k`` steps, ``k`` uniform in ``[0, steps - 1]``; with
    probability ``wrong_prob`` (and ``k >= 1``) one used step among the first ``k`` is wrong and
    the completion is the answer that wrong chain leads to. Deterministic given ``rng``.

    Raises:
        ValueError: a probability outside [0, 1], or prompts and problems of different lengths.
    """
    for name, value in (("early_answer_prob", early_answer_prob), ("early_answer_wrong_prob", wrong_prob)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    if len(prompts) != len(problems):
        raise ValueError(f"{len(prompts)} prompts for {len(problems)} problems")
    rows = []
    for prompt, problem in zip(prompts, problems, strict=True):
        if rng.random() >= early_answer_prob:
            rows.append({"prompt": prompt, "completion": problem.solution})
            continue
        k = rng.randrange(len(problem.steps))
        shown = problem
        if k and rng.random() < wrong_prob:
            wrong = random_wrong_step(problem, rng, steps=[i for i in range(k) if problem.chain[i].used])
            shown = wrong[1] if wrong is not None else problem
        rows.append(early_answer_row(prompt, shown, k))
    return rows
