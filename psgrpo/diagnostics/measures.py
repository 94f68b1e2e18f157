"""Signal-quality diagnostics of process credit: pure functions over lists and tensors.

Does a method's process signal point at the wrong step? How much of the token advantage does it
carry, next to the outcome term? Which reward pays for the outcome term? These functions answer
that from quantities a training step already has; ``psgrpo diagnose`` (:mod:`psgrpo.commands.diagnose`)
applies them offline to GRPO-VPS probes (docs/learning.md has the results).

* :func:`signal_quality`: AUC (Mann–Whitney, ties count ½) of a per-step signal for ranking the
  steps labelled wrong (e.g. by :mod:`psgrpo.ps.scorers.arithmetic`) below the correct ones, and the
  mean signal at each.
* :func:`process_share`: the share of Σ|A_t| that comes from the process term ``A_t − w·A_i``
  rather than the outcome term ``w·A_i``.
* :func:`reward_parts` / :func:`reward_shares`: the exact split of the group-normalised outcome
  advantage A_i into one part per reward function (e.g. format against correctness).
* :func:`group_correctness`: the share of groups whose correctness is all equal (all wrong, all
  right): groups where outcome GRPO learns nothing about being right.
* :func:`boundary_places`: where segment boundaries fall in the text: inside a number, at a step
  end, at a line end, or elsewhere.
* :func:`judge_steps` / :func:`segment_labels`: the ground truth: the arithmetic verifier's verdict
  on each ``Step N:`` line, and the wrong/correct label of segments ending at given characters.
* :func:`unnecessary_step_share`: the share of written steps whose result is never used (does a
  method shorten reasoning by dropping needless steps?).

Shapes: ``N`` completions (groups of ``G = num_generations`` consecutive rows), ``T`` completion
tokens (right-padded), ``F`` reward functions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from psgrpo.config.options import TrlScaleRewards, check_choice
from psgrpo.ps.segmentation import STEP_LABEL

# --------------------------------------------------------------------------------------------
# Does the signal rank wrong steps below correct ones?


@dataclass(frozen=True)
class SignalQuality:
    """How well a per-step signal separates wrong steps (low) from correct ones (high).

    Attributes:
        auc: P(signal at a random wrong step < signal at a random correct step), ties counting ½;
            0.5 is chance, 1 a perfect ranking.
        mean_wrong, mean_correct: mean signal at wrong and at correct steps (the signal's units).
        n_wrong, n_correct: how many steps of each.
    """

    auc: float
    mean_wrong: float
    mean_correct: float
    n_wrong: int
    n_correct: int


def _midranks(values: Sequence[float]) -> list[float]:
    """1-based ranks in ascending order, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start : end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def signal_quality(signal: Sequence[float], wrong: Sequence[bool]) -> SignalQuality:
    """AUC and means of a per-step signal against wrong/correct labels.

    The AUC is the Mann–Whitney statistic ``U / (n_wrong · n_correct)`` with ``U`` counting the
    (wrong, correct) pairs where the correct step's signal is higher (ties ½), from mid-ranks in
    O(n log n).

    Args:
        signal: one finite value per step (e.g. ΔC_k of the segment ending at the step).
        wrong: one label per step, True for a wrong step.

    Raises:
        ValueError: lengths differ, a value is not finite (naming its index), or one class is empty.
    """
    if len(signal) != len(wrong):
        raise ValueError(f"{len(signal)} signal values for {len(wrong)} labels")
    values = [float(v) for v in signal]
    for i, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(f"signal[{i}] = {value} is not finite")
    n_wrong = sum(bool(w) for w in wrong)
    n_correct = len(values) - n_wrong
    if not n_wrong or not n_correct:
        raise ValueError(f"need both wrong and correct steps, got {n_wrong} wrong and {n_correct} correct")
    ranks = _midranks(values)
    rank_sum_correct = sum(r for r, w in zip(ranks, wrong, strict=True) if not w)
    u = rank_sum_correct - n_correct * (n_correct + 1) / 2
    return SignalQuality(
        auc=u / (n_wrong * n_correct),
        mean_wrong=sum(v for v, w in zip(values, wrong, strict=True) if w) / n_wrong,
        mean_correct=sum(v for v, w in zip(values, wrong, strict=True) if not w) / n_correct,
        n_wrong=n_wrong,
        n_correct=n_correct,
    )


# --------------------------------------------------------------------------------------------
# How much of the advantage is process credit, and what pays for the outcome term?


def process_share(
    token_advantages: torch.Tensor,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    outcome_weight: float = 1.0,
) -> float:
    """Share of Σ|A_t| over completion tokens that the process term carries.

    With ``A_t = w·A_i + P_t`` (PS-GRPO: ``P_t = λ·A^proc_t``; GRPO-VPS: ``P_t = α·ΔC_k``), the
    share is ``Σ|P_t| / (Σ|P_t| + Σ|w·A_i|)``, sums over tokens where ``completion_mask`` is 1:
    0 for outcome GRPO, 1 when the outcome term vanishes (e.g. a group with equal rewards).

    Args:
        token_advantages: (N, T) A_t, as the estimator returned them.
        outcome_advantages: (N,) A_i.
        completion_mask: (N, T) 1 on completion tokens.
        outcome_weight: w (PS-GRPO's ``ps_outcome_weight``; 1 for GRPO-VPS).

    Returns:
        The share in [0, 1]; NaN when every advantage is 0.
    """
    if (
        token_advantages.shape != completion_mask.shape
        or token_advantages.shape[:1] != outcome_advantages.shape
    ):
        raise ValueError(
            f"token_advantages {tuple(token_advantages.shape)}, completion_mask {tuple(completion_mask.shape)} and "
            f"outcome_advantages {tuple(outcome_advantages.shape)} must be (N, T), (N, T) and (N,)"
        )
    mask = completion_mask.bool()
    outcome = (outcome_weight * outcome_advantages.double()).unsqueeze(1).expand_as(token_advantages)[mask]
    process = token_advantages.double()[mask] - outcome
    total_process, total_outcome = process.abs().sum().item(), outcome.abs().sum().item()
    total = total_process + total_outcome
    return total_process / total if total > 0 else math.nan


def reward_parts(
    rewards_per_func: torch.Tensor,
    num_generations: int,
    weights: Sequence[float] | None = None,
    scale: str = "group",
    eps: float = 1e-4,
    aggregation: str = "sum_then_normalize",
) -> torch.Tensor:
    """The outcome advantages A_i split exactly into one signed part per reward function, as TRL forms A_i.

    ``sum_then_normalize`` (TRL's default): A_i = (r_i − mean_g r) / s with r_i = Σ_f w_f r_{f,i} and ``s`` the
    group std + eps (``scale="group"``), the batch std + eps (``"batch"``) or 1 (``"none"``); the mean is
    linear, so A_i = Σ_f a_{f,i} with a_{f,i} = w_f (r_{f,i} − mean_g r_f) / s. ``normalize_then_sum``: each
    function's rewards normalised per group first, n_{f,i} = (r_{f,i} − mean_g r_f) / (std_g r_f + eps), then
    A_i = (Σ_f w_f n_{f,i} − mean_batch) / (std_batch + eps), split the same way. As in TRL, a reward a function
    skipped (NaN) counts 0 in its row's sum, a row every function skipped is left out of every mean and std,
    and its parts are 0 (its A_i).

    Args:
        rewards_per_func: (N, F) raw rewards, groups of ``num_generations`` consecutive rows; NaN = skipped.
        weights: F reward weights (default all 1).
        scale, eps: as TRL's ``scale_rewards`` (unbiased std, as ``torch.std``); ``aggregation``: TRL's
            ``multi_objective_aggregation``.

    Returns:
        (N, F) float64 parts a_{f,i}; each row sums to A_i.
    """
    from trl.trainer.utils import nanstd

    check_choice("scale", scale, TrlScaleRewards)
    n, f = rewards_per_func.shape
    if num_generations < 1 or n % num_generations:
        raise ValueError(f"{n} completions do not split into groups of num_generations={num_generations}")
    w = torch.tensor(list(weights) if weights is not None else [1.0] * f, dtype=torch.float64)
    raw = rewards_per_func.detach().double().cpu()
    unscorable = torch.isnan(raw).all(dim=1)  # (N,)
    if aggregation == "normalize_then_sum":
        grouped = raw.view(-1, num_generations, f)
        std_k = (
            nanstd(grouped, dim=1, keepdim=True)
            if num_generations > 1
            else torch.zeros(1, dtype=torch.float64)
        )
        raw = ((grouped - torch.nanmean(grouped, dim=1, keepdim=True)) / (std_k + eps)).view(n, f)
    elif aggregation != "sum_then_normalize":
        raise ValueError(
            f"aggregation={aggregation!r}: expected 'sum_then_normalize' or 'normalize_then_sum'"
        )
    weighted = torch.nan_to_num(raw, nan=0.0) * w  # (N, F): a skipped reward counts 0, as TRL's nansum
    weighted[unscorable] = torch.nan  # out of every mean and std below
    total = weighted.sum(1)  # NaN on unscorable rows
    if aggregation == "normalize_then_sum":
        centred = weighted - torch.nanmean(weighted, dim=0, keepdim=True)
        divisor = ((nanstd(total) if n > 1 else torch.zeros((), dtype=torch.float64)) + eps).expand(n)
    else:
        grouped = weighted.view(-1, num_generations, f)
        centred = (grouped - torch.nanmean(grouped, dim=1, keepdim=True)).view(n, f)
        if scale == "group":
            groups = total.view(-1, num_generations)
            std = (
                nanstd(groups, dim=1)
                if num_generations > 1
                else torch.zeros(groups.shape[0], dtype=torch.float64)
            )
            divisor = (std + eps).repeat_interleave(num_generations)
        elif scale == "batch":
            divisor = ((nanstd(total) if n > 1 else torch.zeros((), dtype=torch.float64)) + eps).expand(n)
        else:
            divisor = torch.ones(n, dtype=torch.float64)
    return torch.nan_to_num(centred / divisor.unsqueeze(1), nan=0.0)


def reward_shares(
    rewards_per_func: torch.Tensor,
    num_generations: int,
    names: Sequence[str],
    weights: Sequence[float] | None = None,
    scale: str = "group",
    eps: float = 1e-4,
    aggregation: str = "sum_then_normalize",
) -> dict[str, float]:
    """Which reward function the outcome advantages come from: Σ_i |a_{f,i}| / Σ_{f', i} |a_{f', i}|.

    With correctness and format rewards: how much of the outcome signal rewards being right rather
    than being well formatted (parts from :func:`reward_parts`, same arguments; ``names``: F keys).

    Returns:
        ``{name: share}``, shares summing to 1; all NaN when every A_i is 0.
    """
    if len(names) != rewards_per_func.shape[1]:
        raise ValueError(f"{len(names)} names for {rewards_per_func.shape[1]} reward functions")
    parts = reward_parts(rewards_per_func, num_generations, weights, scale, eps, aggregation).abs().sum(0)
    whole = parts.sum().item()
    return {
        name: (part / whole if whole > 0 else math.nan)
        for name, part in zip(names, parts.tolist(), strict=True)
    }


@dataclass(frozen=True)
class GroupCorrectness:
    """Groups by the spread of their correctness.

    Attributes:
        all_equal: share of groups whose members are all right or all wrong (no correctness signal).
        all_wrong, all_right: the two parts of ``all_equal``.
        groups: number of groups.
    """

    all_equal: float
    all_wrong: float
    all_right: float
    groups: int


def group_correctness(correct: Sequence[bool | None], num_generations: int) -> GroupCorrectness:
    """Share of groups whose correctness is all equal, from one right/wrong flag per completion.

    Args:
        correct: N flags, groups of ``num_generations`` consecutive rows; ``None`` for a completion the
            correctness reward skipped (TRL gives it A = 0), left out of its group.
    """
    if num_generations < 1 or not correct or len(correct) % num_generations:
        raise ValueError(
            f"{len(correct)} completions do not split into groups of num_generations={num_generations}"
        )
    groups = [
        [c for c in correct[i : i + num_generations] if c is not None]
        for i in range(0, len(correct), num_generations)
    ]
    wrong = sum(not any(g) for g in groups)
    right = sum(bool(g) and all(g) for g in groups)
    return GroupCorrectness(
        (wrong + right) / len(groups), wrong / len(groups), right / len(groups), len(groups)
    )


# --------------------------------------------------------------------------------------------
# Where do boundaries fall?

BOUNDARY_PLACES = ("inside_number", "step_end", "line_end", "elsewhere")
"""Classes of a boundary, in the order they are tested."""


def boundary_place(text: str, cut: int, step_ends: Sequence[int] = ()) -> str:
    """Where a boundary at character position ``cut`` of ``text`` falls (the probe sees ``text[:cut]``).

    * ``inside_number``: a digit on both sides (``Step 1: 2|3``);
    * ``step_end``: only whitespace between ``cut`` and the end of a step (``step_ends``: exclusive
      character ends of the steps, e.g. from a segmenter), on either side: ``= 12|\\n`` and
      ``= 12\\n|`` both end step 1;
    * ``line_end``: only spaces between ``cut`` and a newline on one side (a line end that is not
      a step end, e.g. after ``<reasoning>``);
    * ``elsewhere``: anything else (inside words, after an operator …).
    """
    if not 0 <= cut <= len(text):
        raise ValueError(f"cut {cut} is outside the text of {len(text)} characters")
    before, after = text[:cut], text[cut:]
    if before[-1:].isdigit() and after[:1].isdigit():
        return "inside_number"
    for end in step_ends:
        if not text[min(cut, end) : max(cut, end)].strip():
            return "step_end"
    left, right = before.rstrip(" \t"), after.lstrip(" \t")
    if not left or left.endswith("\n") or not right or right.startswith("\n"):
        return "line_end"
    return "elsewhere"


def boundary_places(
    text: str, offsets: Sequence[tuple[int, int]], boundaries: Sequence[int], step_ends: Sequence[int] = ()
) -> list[str]:
    """:func:`boundary_place` of each token boundary ``b`` (the probe follows token ``b``).

    Args:
        text: the completion text; ``offsets``: each token's character span in it
            (:func:`psgrpo.ps.segmentation.token_offsets`).
        boundaries: token indices.
        step_ends: exclusive character ends of the steps.
    """
    return [boundary_place(text, offsets[b][1], step_ends) for b in boundaries]


def place_shares(places: Sequence[str]) -> dict[str, float]:
    """Share of each of :data:`BOUNDARY_PLACES` among ``places`` (all 0 for none)."""
    counts = Counter(places)
    unknown = set(counts) - set(BOUNDARY_PLACES)
    if unknown:
        raise ValueError(f"unknown boundary places {sorted(unknown)}; expected {BOUNDARY_PLACES}")
    return {place: counts[place] / len(places) if places else 0.0 for place in BOUNDARY_PLACES}


def number_safe_cuts(text: str, offsets: Sequence[tuple[int, int]]) -> list[int]:
    """Token indices after which a cut is not inside a number: the ``snap_positions`` that
    :func:`psgrpo.vps.boundaries.select_boundaries` needs to move entropy cuts out of numbers."""
    return [t for t, (_, end) in enumerate(offsets) if boundary_place(text, end) != "inside_number"]


# --------------------------------------------------------------------------------------------
# Ground truth: the arithmetic verifier's verdict on each written step


@dataclass(frozen=True)
class JudgedSteps:
    """The ``Step N:`` lines of one completion as the arithmetic verifier judges them.

    Attributes:
        ends: per step, the exclusive character end of its line (just past its newline).
        result_chars: per step, the index of the line's last non-blank character (where its result is written).
        wrong: per step, True when one of its equations fails, False when all hold, None when it states none.
        necessary: per step, its result is used later or is the final answer (the verifier's ``necessary``).
    """

    ends: list[int]
    result_chars: list[int]
    wrong: list[bool | None]
    necessary: list[bool]


STEP_LINE = re.compile(rf"(?m)^[^\S\n]*{STEP_LABEL}[^\n]*\n?")


def judge_steps(text: str) -> JudgedSteps:
    """Find the step lines of ``text`` (lines that start with a ``Step N:`` marker) and judge them with
    :func:`psgrpo.ps.scorers.arithmetic.score_steps` against the completion's own final answer."""
    from psgrpo.ps.scorers.arithmetic import score_steps
    from psgrpo.rewards.functions import extract_answer

    lines = [m for m in STEP_LINE.finditer(text) if m.group().strip()]
    verdicts = score_steps([m.group().strip() for m in lines], extract_answer(text))
    return JudgedSteps(
        ends=[m.end() for m in lines],
        result_chars=[m.start() + len(m.group().rstrip()) - 1 for m in lines],
        wrong=[None if v.correct is None else v.correct < 1 for v in verdicts],
        necessary=[v.necessary for v in verdicts],
    )


def segment_labels(cut_chars: Sequence[int], steps: JudgedSteps) -> list[bool | None]:
    """Wrong/correct labels of the segments that end at ``cut_chars`` (ascending character positions).

    Segment ``k`` covers characters ``[c_{k-1}, c_k)`` (``c_{-1} = 0``); it is wrong (True) when it
    holds the result character of a wrong step, correct (False) when it holds only results of steps
    whose equations hold, and unlabelled (None) when it holds no judged result.
    """
    labels: list[bool | None] = []
    start = 0
    for cut in cut_chars:
        inside = [
            w
            for c, w in zip(steps.result_chars, steps.wrong, strict=True)
            if start <= c < cut and w is not None
        ]
        labels.append(any(inside) if inside else None)
        start = cut
    return labels


# --------------------------------------------------------------------------------------------
# How much of the reasoning is unnecessary?


def unnecessary_step_counts(completions: Sequence[str]) -> tuple[int, int]:
    """``(judged, unnecessary)``: step lines that state an equation, and those among them whose result is
    never used (not an operand of a later step, not the answer; :func:`judge_steps`)."""
    judged = unnecessary = 0
    for text in completions:
        steps = judge_steps(text)
        for wrong, necessary in zip(steps.wrong, steps.necessary, strict=True):
            if wrong is not None:
                judged += 1
                unnecessary += not necessary
    return judged, unnecessary


def unnecessary_step_share(completions: Sequence[str]) -> float:
    """Share of written steps whose result is never used: not an operand of a later step, not the answer.

    Steps are the ``Step N:`` lines, judged by the arithmetic verifier against the completion's own
    final answer (:func:`judge_steps`); only steps that state an equation count. On
    ``arith-distractor`` the computed distractor is such a step; a policy that stops writing it
    lowers the share.

    Returns:
        The share in [0, 1]; NaN when no completion states an equation.
    """
    judged, unnecessary = unnecessary_step_counts(completions)
    return unnecessary / judged if judged else math.nan
