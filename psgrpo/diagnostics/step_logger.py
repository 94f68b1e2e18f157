"""Opt-in signal-quality metrics of every training step (``--diagnostics true``), logged as ``diag/*``.

The pure measurements live in :mod:`psgrpo.diagnostics.measures`; this module applies them to the batch a
training step has just scored, so that a run's ``metrics.jsonl`` / TensorBoard say whether the
method's process signal points at the wrong steps, and whether the outcome signal says anything
about being right at all. Every metric covers the whole generation batch (all processes).

Always (any method):

* ``diag/all_equal_correct_frac`` (``diag/all_wrong_frac`` + ``diag/all_right_frac``): share of
  groups whose correctness is the same for every member (the ``correctness_reward`` at exactly
  ``correctness_exact``); outcome GRPO learns nothing about being right from them.
* ``diag/reward_share/<reward>``: which reward the outcome advantages A_i come from
  (:func:`psgrpo.diagnostics.measures.reward_shares`, with the run's weights and ``scale_rewards``).
* ``diag/unnecessary_step_frac``: share of written ``Step N:`` lines whose result is never used.

Where the arithmetic verifier can label steps (completions with ``Step N: a op b = c`` lines, i.e.
arith and GSM8K calculator annotations) and the method has a process signal:

* ``diag/process_auc``: AUC (:func:`psgrpo.diagnostics.measures.signal_quality`) of the per-segment signal
  for ranking wrong segments below correct ones; ``diag/signal_wrong_mean`` /
  ``diag/signal_correct_mean``; ``diag/labelled_segments``. The signal is, for ``vps``, ΔC_k of the
  segment ending at boundary b_k in the form the estimator uses (``vps_log_form``); for ``ps``, the
  group-normalised step score r̃; for ``tree``, the segment's ΔV_k / σ (a segment is the S tokens of
  one tree level, so leaves under one node share the labels of their common start). With
  ``step_scorer=arithmetic`` the ps signal *is* the label (AUC 1 by construction); the metric is
  meant for learned scorers (``prm``).
* ``vps`` only: ``diag/boundary_<place>_frac`` for the places of
  :data:`psgrpo.diagnostics.measures.BOUNDARY_PLACES`: where the cuts fall (inside a number, at a step
  end, at another line end, elsewhere).

The share of |A_t| that the process term carries is logged without this flag, as
``ps/process_share`` / ``vps/process_share``. Cost: decoding the completions and a regex verifier
pass over them, plus one ``gather_object`` of a few numbers per row; no forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from accelerate.utils import gather_object

from psgrpo.diagnostics.measures import (
    BOUNDARY_PLACES,
    boundary_places,
    group_correctness,
    judge_steps,
    place_shares,
    reward_shares,
    segment_labels,
    signal_quality,
    unnecessary_step_counts,
)
from psgrpo.methods import get_method
from psgrpo.ps.segmentation import token_offsets
from psgrpo.tree.values import segment_spans

PREFIX = "diag/"
CORRECTNESS = "correctness_reward"


def correctness_metrics(
    rewards_per_func: torch.Tensor,
    names: Sequence[str],
    weights: Sequence[float],
    num_generations: int,
    scale_rewards: str,
    correct_value: float,
    aggregation: str = "sum_then_normalize",
) -> dict[str, float]:
    """Group correctness and reward shares of the whole batch.

    Args:
        rewards_per_func: (N, F) raw rewards of all processes' rows, groups of ``num_generations``; NaN where
            a function skipped a row (TRL's marker).
        names, weights: the F reward functions' names and weights.
        scale_rewards: TRL's option (``group`` / ``batch`` / ``none``); ``aggregation``: its
            ``multi_objective_aggregation``.
        correct_value: the correctness reward of a right answer (``correctness_exact``).
    """
    rewards = rewards_per_func.detach().double().cpu()  # NaN = a reward the function skipped, as TRL reads it
    metrics = {}
    if CORRECTNESS in names:
        column = rewards[:, list(names).index(CORRECTNESS)].tolist()
        correct = [None if math.isnan(v) else v == correct_value for v in column]
        groups = group_correctness(correct, num_generations)
        metrics |= {
            "all_equal_correct_frac": groups.all_equal,
            "all_wrong_frac": groups.all_wrong,
            "all_right_frac": groups.all_right,
        }
    shares = reward_shares(
        rewards, num_generations, list(names), list(weights), scale_rewards, aggregation=aggregation
    )
    metrics |= {f"reward_share/{name}": share for name, share in shares.items()}
    return metrics


def vps_segments(
    text: str, offsets: Sequence[tuple[int, int]], boundaries: Sequence[int], delta: Sequence[float]
) -> tuple[list[tuple[float, bool]], list[str]]:
    """One completion's labelled ``(ΔC_k, wrong)`` pairs and the places of its cuts.

    Args:
        text, offsets: the completion and each token's character span.
        boundaries: its K token boundaries b_k (the probe follows token b_k).
        delta: its ΔC_1..ΔC_K; ΔC_k belongs to the segment that ends at b_k.
    """
    steps = judge_steps(text)
    cuts = [offsets[b][1] for b in boundaries]
    labels = segment_labels(cuts, steps)
    pairs = [(float(d), w) for d, w in zip(delta, labels, strict=False) if w is not None]
    return pairs, boundary_places(text, offsets, boundaries, steps.ends)


def tree_segments(
    text: str, offsets: Sequence[tuple[int, int]], gains: Sequence[float], ends: list[int]
) -> list[tuple[float, bool]]:
    """One leaf's labelled ``(ΔV_k / σ, wrong)`` pairs, one per non-empty tree segment.

    Args:
        text, offsets: the completion and each token's character span.
        gains: its D segment advantages ΔV_k / σ (``TreeCredit.segment_advantages`` row).
        ends: its D − 1 inner segment ends (``TreeCredit.segment_ends`` row).
    """
    segments = segment_spans(ends, len(offsets))
    pairs, _ = vps_segments(text, offsets, [end - 1 for _, end in segments], [gains[k] for k, _ in segments])
    return pairs


def ps_segments(steps: Sequence[str], scores: Sequence[float] | None) -> list[tuple[float, bool]]:
    """One completion's labelled ``(r̃_j, wrong)`` pairs: each step judged by the arithmetic verifier."""
    if scores is None:  # the scorer failed on it: outcome fallback, no process signal
        return []
    from psgrpo.ps.scorers.arithmetic import score_steps

    verdicts = score_steps(list(steps), None)
    return [
        (float(s), v.correct < 1)
        for s, v in zip(scores, verdicts, strict=True)
        if v.correct is not None and math.isfinite(s)
    ]


def signal_metrics(pairs: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """``process_auc``, the mean signal at wrong and at correct segments, and how many were labelled."""
    metrics = {"labelled_segments": float(len(pairs))}
    wrong = [w for _, w in pairs]
    if 0 < sum(wrong) < len(wrong):
        quality = signal_quality([v for v, _ in pairs], wrong)
        metrics |= {
            "process_auc": quality.auc,
            "signal_wrong_mean": quality.mean_wrong,
            "signal_correct_mean": quality.mean_correct,
        }
    return metrics


class StepDiagnostics:
    """The ``diag/*`` metrics of one scored batch (see the module docstring); one instance per trainer.

    Args:
        config: the :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`.
        tokenizer: the policy's tokenizer (decoding and token offsets).
        reward_names, reward_weights: the trainer's reward functions.
    """

    def __init__(
        self, config: Any, tokenizer: Any, reward_names: Sequence[str], reward_weights: Sequence[float]
    ) -> None:
        self.config, self.tokenizer = config, tokenizer
        self.reward_names, self.reward_weights = list(reward_names), list(reward_weights)

    def __call__(
        self,
        output: dict[str, Any],
        credit: Any,
        rewards_per_func: torch.Tensor,
        num_generations: int,
    ) -> dict[str, float]:
        """The ``diag/*`` metrics of the batch (a metric that cannot be measured is left out).

        Args:
            output: TRL's scored batch (local rows): ``completion_ids`` / ``completion_mask`` (B, T).
            credit: the method's record (``PsCredit``, ``VpsCredit``, ``TreeCredit`` or ``None``), local rows.
            rewards_per_func: (N, F) all processes' rewards.
            num_generations: G.
        """
        config = self.config
        metrics = correctness_metrics(
            rewards_per_func,
            self.reward_names,
            self.reward_weights,
            num_generations,
            config.scale_rewards,
            config.correctness_exact,
            aggregation=getattr(config, "multi_objective_aggregation", "sum_then_normalize"),
        )
        lengths = output["completion_mask"].sum(1).tolist()
        decoded = [
            token_offsets(self.tokenizer, row[:n].tolist())
            for row, n in zip(output["completion_ids"], lengths, strict=True)
        ]
        method = get_method(config.method)
        pairs: list[tuple[float, bool]] = []
        places: list[str] = []
        if method.diagnostics is not None and credit is not None:
            pairs, places = method.diagnostics(decoded, credit, config)
        counts = unnecessary_step_counts([text for text, _ in decoded])
        gathered = gather_object([(pairs, places, counts)])  # one record per process
        all_pairs = [p for record in gathered for p in record[0]]
        all_places = [p for record in gathered for p in record[1]]
        judged = sum(record[2][0] for record in gathered)
        unnecessary = sum(record[2][1] for record in gathered)
        if judged:
            metrics["unnecessary_step_frac"] = unnecessary / judged
        if method.diagnostics is not None:
            metrics |= signal_metrics(all_pairs)
        if all_places:
            shares = place_shares(all_places)
            metrics |= {f"boundary_{place}_frac": shares[place] for place in BOUNDARY_PLACES}
        return {PREFIX + key: float(value) for key, value in metrics.items() if math.isfinite(float(value))}
