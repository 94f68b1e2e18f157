"""The process-signal stage of PS-GRPO: score each step, normalise over the group, lay out as tensors.

Data flow inside one training step (DESIGN.md §1)::

    completion ids ──segmentation──► steps (text + token spans)
                   ──step scorer──► raw step scores r_{i,j}       (local batch)
                   ──gather──► all scores of the generation batch  (groups may span processes)
                   ──normalize_step_scores──► r̃_{i,j}             (per group, over all its steps)
                   ──slice──► local (B, S) step advantages + (B, T) token→step index

The trainer then hands these to the ``process`` advantage estimator. Everything here except
the gather is a pure function of its inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from psgrpo.scorers.base import StepScoreError, validate_step_scores
from psgrpo.segmentation import spans_to_step_index

StepScorer = Callable[..., list[list[float]]]


def scorer_name(scorer: Any) -> str:
    """A readable name for error messages and logs."""
    return getattr(scorer, "__name__", None) or type(scorer).__name__


def score_steps(
    scorer: StepScorer,
    prompts: Sequence[Any],
    steps: list[list[str]],
    columns: dict[str, list[Any]],
    fallback: bool,
) -> list[list[float] | None]:
    """Run ``scorer`` on the whole local batch and validate its output.

    Args:
        scorer: ``(prompts, steps, **columns) -> list[list[float]]``.
        prompts, steps: one entry per completion.
        columns: dataset columns (e.g. ``answer``), one list entry per completion.
        fallback: when False, any failure raises :class:`StepScoreError` naming the scorer and
            the sample. When True, the batch is re-scored one completion at a time and each
            completion that still fails gets ``None`` (the caller falls back to the outcome
            advantage for it).
    """
    name = scorer_name(scorer)
    try:
        return validate_step_scores(_call(scorer, prompts, steps, columns), steps, name)
    except StepScoreError:
        if not fallback:
            raise
    results: list[list[float] | None] = []
    for i in range(len(steps)):
        one = {key: values[i : i + 1] for key, values in columns.items()}
        try:
            results.append(
                validate_step_scores(
                    _call(scorer, prompts[i : i + 1], steps[i : i + 1], one), steps[i : i + 1], name
                )[0]
            )
        except StepScoreError:
            results.append(None)
    return results


def _call(scorer: StepScorer, prompts: Sequence[Any], steps: list[list[str]], columns: dict[str, list[Any]]):
    try:
        return scorer(list(prompts), steps, **columns)
    except StepScoreError:
        raise
    except Exception as err:  # a user's scorer may raise anything: name it, keep the cause
        raise StepScoreError(
            f"step scorer {scorer_name(scorer)!r} raised {type(err).__name__}: {err}"
        ) from err


@dataclass
class StepTensors:
    """Local step signals as tensors for the ``process`` estimator."""

    step_advantages: torch.Tensor  # (B, S) normalised step scores r̃, 0 on padding
    step_index: torch.Tensor  # (B, T) step of each completion token, -1 on padding
    process_valid: torch.Tensor  # (B,) False where the scorer failed (outcome fallback)


def step_tensors(
    normalized: list[list[float] | None],
    token_spans: list[list[tuple[int, int]]],
    width: int,
    device: torch.device,
) -> StepTensors:
    """Pack per-completion step values and token spans into padded tensors.

    Args:
        normalized: r̃ per step for the local completions (``None`` = scorer failed).
        token_spans: token spans per completion, one per step, in completion-token indices.
        width: T, the padded completion length.
    """
    max_steps = max([len(spans) for spans in token_spans] + [1])
    step_advantages = torch.zeros(len(token_spans), max_steps, dtype=torch.float32)
    for i, values in enumerate(normalized):
        if values:
            step_advantages[i, : len(values)] = torch.tensor(values, dtype=torch.float32)
    step_index = spans_to_step_index(token_spans, width)
    valid = torch.tensor([v is not None for v in normalized], dtype=torch.bool)
    return StepTensors(step_advantages.to(device), step_index.to(device), valid.to(device))


def step_metrics(raw: list[list[float] | None], wrong_threshold: float) -> dict[str, float]:
    """Logged PS statistics over the whole generation batch (the gathered raw scores)."""
    scored = [row for row in raw if row is not None]
    flat = [s for row in scored for s in row]
    return {
        "ps/steps_per_completion": sum(len(row) for row in scored) / max(len(scored), 1),
        "ps/step_score_mean": sum(flat) / len(flat) if flat else math.nan,
        "ps/frac_steps_wrong": sum(s < wrong_threshold for s in flat) / len(flat) if flat else math.nan,
        "ps/scorer_fallbacks": float(len(raw) - len(scored)),
    }
