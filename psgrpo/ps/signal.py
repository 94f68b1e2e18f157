"""PS-GRPO's process signal: score each step, gather, normalise over the group, lay out as tensors.

One training step, inside :class:`PsSignal` (DeepSeekMath, arXiv 2402.03300 §4.1.3; formulas
in docs/design.md)::

    completion ids ──segment_completions──► steps (text + token spans)          (local batch)
                   ──step scorer──► raw step scores r_{i,j}                      (local batch)
                   ──gather──► the whole generation batch's scores  (a group may span processes)
                   ──normalize_step_scores──► r̃_{i,j} = (r − mean R_g) / (std R + eps)
                                  (R = the group's or the batch's step scores, as TRL scales A_i)
                   ──local rows──► (B, S) step advantages + (B, T) token → step index

The result is the keyword arguments of the ``ps`` advantage estimator
(:func:`psgrpo.advantages.ps_token_advantages`, with ``ps_advantage_mode: auto`` resolved
for the scorer by :func:`resolve_process_mode`), the ``ps/*`` metrics (:func:`step_metrics`:
step shape and, for the arithmetic verifier, no-op / unnecessary shares and the equations it
gave up on, the signs of a policy gaming its steps, docs/robustness.md) and the
:class:`PsCredit` record that ``psgrpo inspect`` draws. Everything but the gather is a pure
function of its inputs.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from accelerate.utils import gather_object

from psgrpo.compatibility import ProcessScale, process_scale
from psgrpo.config.options import check_choice
from psgrpo.credit import SignalOutput
from psgrpo.distributed import local_rows
from psgrpo.ps.scorers.base import StepScoreError, validate_step_scores
from psgrpo.ps.segmentation import Span, segment_completions, spans_to_segment_index

logger = logging.getLogger("psgrpo")

StepScorer = Callable[..., list[list[float]]]


@dataclass
class PsCredit:
    """What PS-GRPO credited, per local completion (read by ``psgrpo inspect``).

    Attributes:
        steps: (B, S_i) step texts.
        step_token_spans: (B, S_i) ``(start, end)`` completion-token spans, end exclusive.
        raw_step_scores: (B, S_i) the scorer's scores (``None``: the scorer failed, outcome fallback).
        step_scores: (B, S_i) the group-normalised r̃ (``None`` likewise).
    """

    steps: list[list[str]]
    step_token_spans: list[list[Span]]
    raw_step_scores: list[list[float] | None]
    step_scores: list[list[float] | None]


def scorer_name(scorer: Any) -> str:
    """A readable name for error messages and logs."""
    return getattr(scorer, "__name__", None) or type(scorer).__name__


def score_steps(
    scorer: StepScorer,
    prompts: Sequence[Any],
    steps: list[list[str]],
    columns: dict[str, list[Any]],
    fallback: bool,
    errors: list[StepScoreError] | None = None,
) -> list[list[float] | None]:
    """Run ``scorer`` on the whole local batch and validate its output (once, here).

    Args:
        scorer: ``(prompts, steps, **columns) -> list[list[float]]``.
        prompts, steps: one entry per completion.
        columns: dataset columns (e.g. ``answer``), one list entry per completion.
        fallback: when False, any failure raises :class:`StepScoreError` naming the scorer and
            the sample. When True, the batch is re-scored one completion at a time and each
            completion that still fails gets ``None`` (the caller falls back to the outcome
            advantage for it).
        errors: when given, receives the :class:`StepScoreError` of each completion that fell back,
            in row order (``PsSignal`` quotes the first when every completion fell back).

    Returns:
        (B, S_i) the validated scores, ``None`` for a completion that fell back.
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
            scored = _call(scorer, prompts[i : i + 1], steps[i : i + 1], one)
            results.append(validate_step_scores(scored, steps[i : i + 1], name)[0])
        except StepScoreError as err:
            results.append(None)
            if errors is not None:
                errors.append(err)
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


def normalize_step_scores(
    scores: list[list[float] | None], num_generations: int, eps: float = 1e-4, scale: ProcessScale = "group"
) -> list[list[float] | None]:
    """Centre step scores per group, and divide by a std as TRL divides the outcome advantage.

    r̃ = (r − mean R_g) / (std R + eps), R_g the step scores of the group, R those of the group
    (``scale="group"``) or of the whole batch (``"batch"``); see
    :func:`psgrpo.compatibility.process_scale`.

    Args:
        scores: one list of step scores per completion, for the whole generation batch
            (gathered across processes), groups of ``num_generations`` consecutive rows.
            ``None`` marks a completion whose scorer failed (fallback): it is left out of the
            statistics and stays ``None``.
        num_generations: G.
        eps: added to the std, as for outcome rewards.
        scale: ``group`` or ``batch``: whose step-score std divides.

    Returns:
        The normalised scores, same nesting. A group whose step scores are all equal (or that
        has a single step score) gets zeros: there is nothing to prefer.
    """
    if num_generations < 1 or len(scores) % num_generations:
        raise ValueError(f"{len(scores)} completions do not split into groups of {num_generations}")
    check_choice("scale", scale, ProcessScale)
    batch_std = _std(torch.tensor([s for row in scores if row is not None for s in row], dtype=torch.float64))
    out: list[list[float] | None] = []
    for start in range(0, len(scores), num_generations):
        group = scores[start : start + num_generations]
        flat = torch.tensor([s for row in group if row is not None for s in row], dtype=torch.float64)
        # all equal: exactly zero (the float mean of equal values can differ from them in the last bit)
        no_spread = flat.numel() < 2 or bool(flat.max() == flat.min())
        mean = flat.mean() if flat.numel() else torch.tensor(0.0, dtype=torch.float64)
        std = _std(flat) if scale == "group" else batch_std
        for row in group:
            if row is None:
                out.append(None)
            elif no_spread:
                out.append([0.0] * len(row))
            else:
                out.append(((torch.tensor(row, dtype=torch.float64) - mean) / (std + eps)).tolist())
    return out


def _std(values: torch.Tensor) -> torch.Tensor:
    """Sample std of the float64 ``values``; 0 for fewer than two."""
    return values.std() if values.numel() > 1 else torch.tensor(0.0, dtype=torch.float64)


@dataclass
class StepTensors:
    """Local step signals as tensors for the ``ps`` estimator."""

    step_advantages: torch.Tensor  # (B, S) normalised step scores r̃, 0 on padding
    segment_index: torch.Tensor  # (B, T) step of each completion token, -1 on padding
    process_valid: torch.Tensor  # (B,) False where the scorer failed (outcome fallback)


def step_tensors(
    normalized: list[list[float] | None],
    token_spans: list[list[Span]],
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
    segment_index = spans_to_segment_index(token_spans, width)
    valid = torch.tensor([v is not None for v in normalized], dtype=torch.bool)
    return StepTensors(step_advantages.to(device), segment_index.to(device), valid.to(device))


def resolve_process_mode(mode: str, scorer: Any) -> str:
    """The ``ps`` estimator's mode for ``ps_advantage_mode``: ``mode`` itself, or for ``auto``
    the safest mode for ``scorer`` (docs/robustness.md: no gamed variant of an honest solution gets
    more credit in it): ``step`` for the arithmetic verifier, whose scores are exact and local;
    ``min`` for a PRM or any other callable, whose scores can overrate a step (a later weak step
    then caps the credit of everything before it). A scorer states its own with a
    ``default_process_mode`` attribute. ``scorer`` may be the scorer or its class."""
    if mode != "auto":
        return mode
    return getattr(scorer, "default_process_mode", "min")  # a scorer states it (the verifiers: step)


def scorer_counts(scorer: Any) -> dict[str, int] | None:
    """What the scorer counted since it was last asked (``pop_counts()``, e.g. the arithmetic
    verifier's :class:`~psgrpo.ps.scorers.arithmetic.VerifierCounts`), or ``None`` if it counts nothing."""
    pop = getattr(scorer, "pop_counts", None)
    return pop() if callable(pop) else None


def step_metrics(
    raw: list[list[float] | None],
    wrong_threshold: float,
    step_tokens: list[list[int]] | None = None,
    counts: list[dict[str, int] | None] | None = None,
    count_metrics: Callable[[dict[str, int]], dict[str, float]] | None = None,
) -> dict[str, float]:
    """Logged PS statistics over the whole generation batch (the gathered raw scores).

    Args:
        raw: (N, S_i) raw step scores, ``None`` for a completion whose scorer failed.
        wrong_threshold: a step scoring below this counts as wrong.
        step_tokens: (N, S_i) tokens in each step, for ``ps/tokens_per_step``.
        counts: :func:`scorer_counts` of each process, summed key by key.
        count_metrics: the scorer's own ``count_metrics``, turning the summed counts into its metrics,
            logged as ``ps/<name>`` (the verifiers: ``frac_steps_no_equation`` …, docs/metrics.md).
    """
    scored = [row for row in raw if row is not None]
    flat = [s for row in scored for s in row]
    metrics = {
        "ps/steps_per_completion": sum(len(row) for row in scored) / max(len(scored), 1),
        "ps/step_score_mean": sum(flat) / len(flat) if flat else math.nan,
        "ps/frac_steps_wrong": sum(s < wrong_threshold for s in flat) / len(flat) if flat else math.nan,
        "ps/scorer_fallbacks": float(len(raw) - len(scored)),
    }
    if step_tokens is not None:
        n_steps = sum(len(row) for row in step_tokens)
        metrics["ps/tokens_per_step"] = sum(map(sum, step_tokens)) / n_steps if n_steps else math.nan
    reported = [c for c in counts or [] if c is not None]
    if reported and count_metrics is not None:
        total = {key: sum(c[key] for c in reported) for key in reported[0]}
        metrics |= {f"ps/{name}": value for name, value in count_metrics(total).items()}
    return metrics


ONE_STEP_WARNING = (
    "method ps: every completion of step %d is one step with segmenter '%s', so all tokens of a completion "
    "get the same credit, as in grpo (its one step's score beside the outcome); choose a --segmenter that "
    "matches how the completions are written (e.g. 'newline'), or a prompt that asks for 'Step N:' lines"
)


ALL_FELL_BACK_WARNING = (
    "method ps: step scorer %r failed on every completion of step %d (first error: %s), so with "
    "ps_on_scorer_error='outcome' each got the outcome advantage only and the batch trained as grpo (counted in "
    "ps/scorer_fallbacks); fix the scorer, or set ps_on_scorer_error='raise' to stop at its first error. "
    "Warned once per run"
)


class PsSignal:
    """PS-GRPO's signal stage (see the module docstring); one instance per trainer.

    Args:
        config: the :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig` (``ps_*`` options).
        tokenizer: the policy's tokenizer (token offsets of the steps).
        accelerator: the trainer's ``Accelerator`` (gathers scores of groups split over processes).
        segmenter: text → step character spans (``psgrpo.ps.segmentation``).
        step_scorer: ``(prompts, steps, **columns) -> list[list[float]]``.
    """

    def __init__(
        self, config: Any, tokenizer: Any, accelerator: Any, segmenter: Any, step_scorer: StepScorer
    ):
        self.config, self.tokenizer, self.accelerator = config, tokenizer, accelerator
        self.segmenter, self.step_scorer = segmenter, step_scorer
        self.advantage_mode = resolve_process_mode(config.ps_advantage_mode, step_scorer)
        self.warned_one_step = False
        self.warned_all_fell_back = False

    def __call__(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        num_generations: int,
        step: int,
    ) -> SignalOutput:
        config = self.config
        mask = output["completion_mask"].bool()
        on_host = zip(output["completion_ids"].cpu(), mask.cpu(), strict=True)  # one copy, not two per row
        ids = [row[keep].tolist() for row, keep in on_host]
        segmentation = segment_completions(self.tokenizer, ids, self.segmenter)
        columns = {key: [x[key] for x in inputs] for key in inputs[0] if key != "prompt"}
        start = time.perf_counter()
        errors: list[StepScoreError] = []
        raw = score_steps(
            self.step_scorer,
            [x["prompt"] for x in inputs],
            segmentation.steps,
            columns,
            fallback=config.ps_on_scorer_error == "outcome",
            errors=errors,
        )
        scorer_seconds = time.perf_counter() - start
        all_raw = gather_object(raw)  # the whole generation batch: groups may span processes
        normalized = normalize_step_scores(all_raw, num_generations, scale=process_scale(config))
        normalized = normalized[local_rows(self.accelerator, len(ids))]
        tensors = step_tensors(normalized, segmentation.token_spans, mask.shape[1], mask.device)
        step_tokens = gather_object([[end - start for start, end in row] for row in segmentation.token_spans])
        counts = gather_object([scorer_counts(self.step_scorer)])  # one entry per process
        own = getattr(self.step_scorer, "count_metrics", None)  # the scorer's counters, its own metrics
        metrics = step_metrics(all_raw, config.ps_wrong_step_threshold, step_tokens, counts, own)
        metrics["ps/scorer_seconds"] = scorer_seconds
        self.warn_if_one_step(step_tokens, step)
        self.warn_if_all_fell_back(all_raw, errors, step)
        return SignalOutput(
            estimator_kwargs={
                "step_advantages": tensors.step_advantages,
                "segment_index": tensors.segment_index,
                "process_valid": tensors.process_valid,
                "advantage_mode": self.advantage_mode,  # ps_advantage_mode 'auto' resolved for the scorer
            },  # the other ps_* options are bound to the estimator once (psgrpo.methods.estimator_options)
            metrics=metrics,
            credit=PsCredit(segmentation.steps, segmentation.token_spans, raw, normalized),
        )

    def warn_if_one_step(self, step_tokens: list[list[int]], step: int) -> None:
        """Warn once per run when no completion of the batch splits into more than one step (and the
        segmenter is not ``single``, which asks for exactly that)."""
        segmenter = getattr(self.config, "segmenter", None)
        if self.warned_one_step or segmenter == "single" or any(len(row) > 1 for row in step_tokens):
            return
        self.warned_one_step = True
        if (
            self.accelerator is None or self.accelerator.is_main_process
        ):  # the batch is gathered: once, not per process
            logger.warning(ONE_STEP_WARNING, step, segmenter)

    def warn_if_all_fell_back(
        self, raw: list[list[float] | None], errors: list[StepScoreError], step: int
    ) -> None:
        """Warn once per run when the scorer failed on every completion of the generation batch.

        Args:
            raw: (N, S_i) the gathered raw scores, ``None`` where a completion fell back.
            errors: this process's fallback errors, in row order; the first is quoted.
            step: the training step, for the message.
        """
        if self.warned_all_fell_back or not raw or any(row is not None for row in raw):
            return
        self.warned_all_fell_back = True
        if (
            self.accelerator is None or self.accelerator.is_main_process
        ):  # the batch is gathered: once, not per process
            first = errors[0] if errors else "on another process"
            logger.warning(ALL_FELL_BACK_WARNING, scorer_name(self.step_scorer), step, first)
