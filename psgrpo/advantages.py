"""Advantage estimators: pure tensor functions in a registry (the veRL ``core_algos`` pattern).

The trainer never computes advantages itself: it looks an estimator up by name and calls it
with keyword arguments. Every estimator returns **token** advantages of shape (B, T), zero on
padding, which TRL's ``GRPOTrainer._compute_loss`` consumes directly.

Keyword arguments every estimator receives:

- ``outcome_advantages`` (B,): the group-normalised outcome advantage A_i that TRL computed
  for the local completions (docs/design.md, "Outcome GRPO").
- ``completion_mask`` (B, T): 1 on completion tokens, 0 on right padding.

The token-credit estimators (every method but ``grpo``) are one core, :func:`segment_credit`:
A_t = w·A_i + λ·v_{seg(t)}, per-segment values v (B, S) gathered onto tokens through
``segment_index`` (B, T), combined, masked. Each method supplies its values (``ps``: the credit of
each step; ``vps``: ΔC per segment; ``tree``: ΔV / σ per level), its w and λ, and which rows fall
back to A_i or to 0. They receive their signals as further keywords and ignore what they do not need.

One name per method: the estimator of method ``ps`` is registered as ``"ps"``
(:func:`ps_token_advantages`), and likewise ``grpo``, ``vps`` and ``tree``
(:data:`psgrpo.config.options.AdvantageEstimator`; :func:`estimator_name` picks one for a config). The
modes of the ``ps`` estimator are a registry of their own, :data:`PS_MODES`.

Register a new one with::

    @ADVANTAGE_ESTIMATORS.register("my_estimator")
    def my_estimator(*, outcome_advantages, completion_mask, **_): ...
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from psgrpo.config.options import (
    ProcessMode,
    TruncatedMode,
    ZeroVarianceMode,
    check_choice,
)
from psgrpo.registry import Registry

EstimatorFn = Callable[..., torch.Tensor]
"""An advantage estimator: keyword arguments (see above) → (B, T) token advantages."""

ADVANTAGE_ESTIMATORS: Registry[EstimatorFn] = Registry("advantage estimator")
"""Every estimator, by name: the built-ins are named as their methods (:data:`AdvantageEstimator`)."""


def estimator_name(method: str, advantage_estimator: str | None = None) -> str:
    """The registered estimator a config selects: ``advantage_estimator`` if set, else the method's own.

    The built-in estimators carry their method's name (:data:`psgrpo.config.options.AdvantageEstimator`), so
    ``method="ps"`` uses the estimator ``"ps"``; a method's spec may name another
    (:func:`psgrpo.methods.estimator_for` reads it). The method itself is checked with the config.
    """
    return method if advantage_estimator is None else advantage_estimator


def group_has_variance(
    advantages: torch.Tensor, num_generations: int, scorable: torch.Tensor | None = None
) -> torch.Tensor:
    """Whether each completion's group had unequal rewards, read off its outcome advantages.

    Equal rewards give every member the *same* advantage, but not always exactly 0: float32
    rounding of the group mean leaves e.g. −6e-4 after division by (std + 1e-4). So the test
    is "members' advantages differ", never "an advantage is non-zero". A row no reward function
    scored gets A = 0 from TRL whatever the others' residue, so only ``scorable`` members are compared.

    Args:
        advantages: (N,) outcome advantages of the whole generation batch, groups of
            ``num_generations`` consecutive rows.
        num_generations: G.
        scorable: (N,) bool, False for rows every reward function skipped (``None``: all scorable).

    Returns:
        (N,) bool, the same value for all members of a group (False with fewer than 2 scorable members).
    """
    grouped = advantages.view(-1, num_generations)
    if scorable is None:
        spread = grouped.max(dim=1).values - grouped.min(dim=1).values
        return (spread > 0).repeat_interleave(num_generations)
    keep = scorable.to(advantages.device).view(-1, num_generations)
    high = grouped.masked_fill(~keep, -math.inf).max(dim=1).values
    low = grouped.masked_fill(~keep, math.inf).min(dim=1).values
    varied = (keep.sum(dim=1) >= 2) & (high > low)
    return varied.repeat_interleave(num_generations)


@ADVANTAGE_ESTIMATORS.register("grpo")
def grpo_token_advantages(
    *, outcome_advantages: torch.Tensor, completion_mask: torch.Tensor, **_: object
) -> torch.Tensor:
    """Outcome GRPO: every completion token of o_i gets A_i.

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens.

    Returns:
        (B, T) A_i broadcast over the completion, 0 on padding.
    """
    return outcome_advantages.unsqueeze(1) * completion_mask.to(outcome_advantages.dtype)


# --------------------------------------------------------------------------------------------
# The one core of segment credit: ps, vps and tree each supply per-segment values


def segment_credit(
    *,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    segment_values: torch.Tensor,
    segment_index: torch.Tensor,
    outcome_weight: float,
    lambda_: float,
    outcome_only: torch.Tensor | None = None,
    zeroed: torch.Tensor | None = None,
) -> torch.Tensor:
    """Token advantages A_t = w·A_i + λ·v_{seg(t)}: per-segment values gathered onto tokens, combined, masked.

    Every token-credit estimator is this function with its method's values: ``ps`` the credit of each
    step, ``vps`` the confidence progress ΔC of each segment, ``tree`` the value gain ΔV / σ of each
    level. A token outside every segment (segment index −1 inside the completion) gets w·A_i alone.

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens, 0 on right padding.
        segment_values: (B, S) the value of each segment, finite.
        segment_index: (B, T) long, the segment of each token (0..S−1), −1 on padding.
        outcome_weight: w, the weight of A_i on every token.
        lambda_: λ, the weight of the segment values.
        outcome_only: (B,) bool, rows that get exactly A_i on every token (e.g. a failed scorer with
            the outcome fallback, a truncated vps row). None = none.
        zeroed: (B,) bool, rows that get 0 everywhere (applied after ``outcome_only``). None = none.

    Returns:
        (B, T) in the dtype of ``outcome_advantages``, 0 on padding.

    Raises:
        ValueError: when ``segment_index`` names a segment past the last column of ``segment_values``.
    """
    if segment_index.numel() and int(segment_index.max()) >= segment_values.shape[1]:
        raise ValueError(
            f"segment_index reaches segment {int(segment_index.max())} but segment_values has only "
            f"{segment_values.shape[1]} columns (one per segment)"
        )
    dtype = outcome_advantages.dtype
    mask = completion_mask.to(dtype)
    in_segment = (segment_index >= 0).to(dtype)
    gathered = torch.gather(segment_values.to(dtype), 1, segment_index.long().clamp(min=0))  # (B, T)
    outcome = outcome_advantages.unsqueeze(1) * mask
    advantages = outcome_weight * outcome + lambda_ * gathered * in_segment * mask
    if outcome_only is not None:
        advantages = torch.where(outcome_only.to(torch.bool).unsqueeze(1), outcome, advantages)
    if zeroed is not None:
        advantages = torch.where(zeroed.to(torch.bool).unsqueeze(1), torch.zeros_like(advantages), advantages)
    return advantages


def rows_last_segment(segment_index: torch.Tensor) -> torch.Tensor:
    """(B,) the highest segment index of each row (−1 for a row without tokens)."""
    return segment_index.max(dim=1).values


def _renamed(old: dict[str, object]) -> None:
    """Refuse an estimator keyword that was renamed, naming the new one."""
    if "step_index" in old:
        raise TypeError("the estimators' step_index keyword is now segment_index (one name for every method)")


# --------------------------------------------------------------------------------------------
# Process supervision (PS-GRPO, DeepSeekMath §4.1.3)

PsMode = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
"""A ``ps_advantage_mode``: (step scores r̃ (B, S), step mask (B, S), temperature) → per-step credit (B, S),
0 on padding. The ``ps`` estimator spreads the credit of step j over the tokens of step j."""

PS_MODES: Registry[PsMode] = Registry("ps advantage mode")
"""The modes of the ``ps`` estimator by name (:data:`psgrpo.config.options.ProcessMode`); ``auto`` is resolved to
one of them before the estimator runs (:func:`psgrpo.ps.signal.resolve_process_mode`)."""


@PS_MODES.register("step")
def step_credit(step_advantages: torch.Tensor, step_mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """Mode ``step`` ("backfill"): step k's credit is its own score r̃_k.

    Args:
        step_advantages: (B, S) r̃, any value where ``step_mask`` is 0.
        step_mask: (B, S) 1 for real steps.
        temperature: unused (the signature of every mode).

    Returns:
        (B, S) r̃ on real steps, 0 on padding.
    """
    return step_advantages.masked_fill(step_mask == 0, 0.0)  # not a product: NaN · 0 is NaN


@PS_MODES.register("reward_to_go")
def reward_to_go_credit(
    step_advantages: torch.Tensor, step_mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Mode ``reward_to_go`` (DeepSeekMath): step k's credit is Σ_{j≥k} r̃_j (:func:`reward_to_go`).

    Args:
        step_advantages: (B, S) r̃, any value where ``step_mask`` is 0.
        step_mask: (B, S) 1 for real steps.
        temperature: unused (the signature of every mode).

    Returns:
        (B, S), 0 on padding.
    """
    return reward_to_go(step_advantages, step_mask)


def reward_to_go(step_advantages: torch.Tensor, step_mask: torch.Tensor) -> torch.Tensor:
    """Per step k, the sum of the normalised scores of steps k..S (DeepSeekMath process return).

    Args:
        step_advantages: (B, S) r̃, any value where ``step_mask`` is 0.
        step_mask: (B, S) 1 for real steps.

    Returns:
        (B, S) reverse cumulative sum over real steps, 0 on padding.
    """
    masked = step_advantages.masked_fill(step_mask == 0, 0.0)  # a product would spread a NaN of the padding
    return masked.flip(1).cumsum(1).flip(1).masked_fill(step_mask == 0, 0.0)


@PS_MODES.register("min")
def soft_min_to_go(
    step_advantages: torch.Tensor, step_mask: torch.Tensor, temperature: float
) -> torch.Tensor:
    """Per step k, a soft minimum of r̃ over steps k..S (mode ``min``).

    The soft minimum is Σ_{j≥k} w_j r̃_j with w = softmax(−r̃_{k..S} / temperature), the weights
    renormalised over steps k..S for every k: as the temperature goes to 0 it becomes
    min_{j≥k} r̃_j, so one bad future step dominates the credit instead of being averaged away by
    good ones. Steps that all score r̃ get r̃ whatever their number. It differs from PURE's
    formula (:func:`pure_min_form`), whose weights are normalised once over the whole trajectory.

    Args:
        step_advantages: (B, S) normalised step scores r̃ (any value where ``step_mask`` is 0).
        step_mask: (B, S) 1 for real steps.
        temperature: T > 0, in the units of r̃ (group standard deviations).

    Returns:
        (B, S), 0 on padding.
    """
    if temperature <= 0:
        raise ValueError(f"soft-min temperature must be positive, got {temperature}")
    _, S = step_advantages.shape
    future = torch.triu(torch.ones(S, S, dtype=torch.bool, device=step_advantages.device))  # [k, j]: j >= k
    valid = future.unsqueeze(0) & step_mask.bool().unsqueeze(1)  # (B, k, j)
    logits = (-step_advantages / temperature).unsqueeze(1).expand(-1, S, -1)
    logits = logits.masked_fill(~valid, float("-inf"))
    weights = torch.softmax(logits, dim=-1).nan_to_num(0.0)  # rows with no valid j: all -inf → NaN → 0
    values = (weights * step_advantages.unsqueeze(1).masked_fill(~valid, 0.0)).sum(-1)
    return values * step_mask


@PS_MODES.register("pure_min")
def pure_min_form(step_rewards: torch.Tensor, step_mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """PURE's min-form credit (Cheng et al., arXiv 2504.15275; mode ``pure_min``).

    Each step reward r_j is weighted by a softmax of −r/T over *all* steps of the trajectory,
    then summed from step k to the end (the return, γ = 1)::

        w_j = exp(−r_j / T) / Σ_{l=1..S} exp(−r_l / T)
        G_k = Σ_{j=k..S} w_j · r_j

    As T → 0, G_1 → min_j r_j, and G_k → min_{j≥k} r_j while the trajectory's minimum lies at or
    after step k (G_k → 0 after it). This is the formula of the paper and of its reference code
    (``turn_process_reward_logits_to_reward``: weights ``softmax(−r/T)`` over the steps, then a
    reverse cumulative sum). Steps that all score r get G_k = r·(S − k + 1)/S, so unlike ``min``
    the credit depends on the number of steps.

    Args:
        step_rewards: (B, S) step rewards (any value where ``step_mask`` is 0).
        step_mask: (B, S) 1 for real steps.
        temperature: T > 0 (the paper uses 0.1), in the units of ``step_rewards``.

    Returns:
        (B, S) G_k, 0 on padding.
    """
    if temperature <= 0:
        raise ValueError(f"min-form temperature must be positive, got {temperature}")
    valid = step_mask.bool()
    logits = (-step_rewards / temperature).masked_fill(~valid, float("-inf"))
    weights = torch.softmax(logits, dim=-1).nan_to_num(0.0)  # a row without steps: all -inf → NaN → 0
    return reward_to_go(weights * step_rewards.masked_fill(~valid, 0.0), step_mask)


@ADVANTAGE_ESTIMATORS.register("ps")
def ps_token_advantages(
    *,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    step_advantages: torch.Tensor,
    segment_index: torch.Tensor,
    process_valid: torch.Tensor | None = None,
    advantage_mode: ProcessMode = "reward_to_go",
    outcome_weight: float = 1.0,
    lambda_: float = 1.0,
    min_temperature: float = 0.1,
    **rest: object,
) -> torch.Tensor:
    """PS-GRPO token advantages: A_t = w_o·A_i + λ·A^proc_t (DeepSeekMath, arXiv 2402.03300 §4.1.3).

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T).
        step_advantages: (B, S) group-normalised step scores r̃ (padding: any value).
        segment_index: (B, T) step of each completion token, -1 on padding.
        process_valid: (B,) bool; False where the scorer failed and the user opted into the
            outcome fallback: those rows get exactly A_i.
        advantage_mode: a mode registered in :data:`PS_MODES`: ``reward_to_go`` (A^proc_t =
            Σ_{steps j ending at or after t} r̃_j, DeepSeekMath), ``step`` (every token of step j gets
            r̃_j, "backfill"), ``min`` (soft minimum of r̃ over the current and later steps,
            :func:`soft_min_to_go`) or ``pure_min`` (PURE's min-form return on r̃, :func:`pure_min_form`).
            ``ps_advantage_mode: auto`` is resolved to one of these before the estimator is called
            (:func:`psgrpo.ps.signal.resolve_process_mode`).
        outcome_weight: w_o, weight of the outcome advantage (default 1; 0 = pure process
            supervision as in DeepSeekMath).
        lambda_: λ (``ps_lambda``).
        min_temperature: temperature of ``min`` and ``pure_min``, in units of r̃.

    Returns:
        (B, T) token advantages, 0 on padding.
    """
    _renamed(rest)
    n_steps = rows_last_segment(segment_index) + 1  # (B,) steps are numbered 0..n-1 in token order
    columns = torch.arange(step_advantages.shape[1], device=segment_index.device)
    step_mask = (columns < n_steps.unsqueeze(1)).to(step_advantages.dtype)
    check_choice("advantage_mode", advantage_mode, ProcessMode)
    per_step = PS_MODES.get(advantage_mode)(step_advantages, step_mask, min_temperature)  # (B, S)
    failed = None if process_valid is None else ~process_valid.to(torch.bool)
    return segment_credit(
        outcome_advantages=outcome_advantages,
        completion_mask=completion_mask,
        segment_values=per_step,
        segment_index=segment_index,
        outcome_weight=outcome_weight,
        lambda_=lambda_,
        outcome_only=failed,
    )


# --------------------------------------------------------------------------------------------
# GRPO-VPS (verifiable process supervision): hybrid advantage


def confidence_progress(confidence: torch.Tensor, log_form: bool = False) -> torch.Tensor:
    """Progress ΔC_k between consecutive probes, k = 1..K.

    Args:
        confidence: (B, K+1) C_0..C_K, NaN beyond each row's K_i.
        log_form: False: ΔC_k = C_k − C_{k−1}; True: ΔC_k = log C_k − log C_{k−1}, with C
            clamped to >= 1e-6 first.

    Returns:
        (B, K) ΔC clipped to [−1, 1]; a non-finite ΔC (NaN padding, a failed probe, inf) is 0.
    """
    c = confidence
    if log_form:
        c = torch.log(c.clamp(min=1e-6))  # NaN stays NaN
    delta = c[:, 1:] - c[:, :-1]
    delta = torch.where(torch.isfinite(delta), delta, torch.zeros_like(delta))
    return delta.clamp(-1.0, 1.0)


@ADVANTAGE_ESTIMATORS.register("vps")
def vps_token_advantages(
    *,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    confidence: torch.Tensor,
    segment_index: torch.Tensor,
    alpha: float = 1.2,
    log_form: bool = False,
    zero_variance: ZeroVarianceMode = "keep",
    group_has_variance: torch.Tensor | None = None,
    is_truncated: torch.Tensor | None = None,
    truncated: TruncatedMode = "outcome",
    **rest: object,
) -> torch.Tensor:
    """GRPO-VPS hybrid token advantages: Ã_t = A_i + α·ΔC_k for the tokens of segment k (arXiv 2604.20659).

    Segment k (1-based) of o_i covers tokens (b_{k−1}, b_k], i.e. 0-based segment index
    j = k − 1, and gets ΔC_k = C_k − C_{k−1} (see :func:`confidence_progress`, clipped to
    [−1, 1]). Tokens after the last boundary (segment index K_i) get A_i alone. Padding: 0.

    NaN or inf in ``confidence`` never reaches the output: a non-finite ΔC counts as 0, so the
    affected segment gets A_i alone.

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens.
        confidence: (B, K+1) probe probabilities C_0..C_K, NaN beyond each row's K_i.
        segment_index: (B, T) long, from ``psgrpo.vps.boundaries.segment_index_from_boundaries``
            (0..K_i on tokens, −1 on padding). K_i is read from it (the row's maximum).
        alpha: α, weight of the progress (1.2 is the paper's best on MATH; 0 = outcome GRPO, but for the rows
            ``truncated="zero"`` and ``zero_variance="drop"`` zero, which they zero at any α).
        log_form: use log-probability progress (see :func:`confidence_progress`).
        zero_variance: for rows where ``group_has_variance`` is False (every completion of the
            group got the same reward, so A_i = 0): ``"keep"`` uses α·ΔC alone (the same
            formula), ``"drop"`` zeroes the whole row.
        group_has_variance: (B,) bool; None = every group has variance.
        is_truncated: (B,) bool, True where the completion hit the length limit without EOS.
        truncated: for truncated rows: ``"outcome"`` → A_i only (no ΔC), ``"keep"`` → the
            hybrid formula, ``"zero"`` → 0.

    Returns:
        (B, T) token advantages in the dtype of ``outcome_advantages``, 0 on padding.
    """
    check_choice("zero_variance", zero_variance, ZeroVarianceMode)
    check_choice("truncated", truncated, TruncatedMode)
    _renamed(rest)
    delta = confidence_progress(confidence, log_form)  # (B, K): ΔC_{j+1} at column j
    delta = torch.nn.functional.pad(delta, (0, 1))  # (B, K+1): column K (no probe after it) is 0
    columns = torch.arange(delta.shape[1], device=delta.device)
    has_delta = columns < rows_last_segment(segment_index).unsqueeze(1)  # segments 0..K_i−1 get ΔC
    cut = None if is_truncated is None else is_truncated.to(torch.bool)
    dropped = None
    if zero_variance == "drop" and group_has_variance is not None:
        dropped = ~group_has_variance.to(torch.bool)
    if cut is not None and truncated == "zero":
        dropped = cut if dropped is None else dropped | cut
    return segment_credit(
        outcome_advantages=outcome_advantages,
        completion_mask=completion_mask,
        segment_values=torch.where(has_delta, delta, torch.zeros_like(delta)),
        segment_index=segment_index,
        outcome_weight=1.0,
        lambda_=alpha,
        outcome_only=cut if truncated == "outcome" else None,
        zeroed=dropped,
    )


# --------------------------------------------------------------------------------------------
# Tree sampling (method "tree"): segment advantages from the group's own tree (docs/tree.md)


@ADVANTAGE_ESTIMATORS.register("tree")
def tree_token_advantages(
    *,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    segment_advantages: torch.Tensor,
    segment_index: torch.Tensor,
    scorable: torch.Tensor | None = None,
    outcome_weight: float = 0.0,
    lambda_: float = 1.0,
    **rest: object,
) -> torch.Tensor:
    """Tree token advantages: A_t = w·A_i + λ·ΔV_k / σ for the tokens of segment k (SPO-tree / TreeRL).

    ΔV_k = V(node_k) − V(parent_k), the mean outcome reward of the leaves below the row's node of
    level k minus that of its parent (the prompt for k = 0), divided by σ, the std TRL divides A_i by
    (:func:`psgrpo.tree.values.reward_scale`); the caller passes the quotient as ``segment_advantages``.
    Along a row the ΔV_k telescope to r_i − mean(r), so with w = 0 and a one-level tree (branching [G])
    A_t = A_i: exactly outcome GRPO.

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens.
        segment_advantages: (B, D) ΔV_k / σ per level k, already finite.
        segment_index: (B, T) long, the level of each token (0..D−1), −1 on padding.
        scorable: (B,) bool, False where every reward function skipped the row (TRL gives it A_i = 0):
            the whole row gets 0. None = all scorable.
        outcome_weight: w (``tree_outcome_weight``; default 0, SPO-tree's form; 1 adds the outcome
            advantage to every token, TreeRL's global + local form).
        lambda_: λ (``tree_lambda``).

    Returns:
        (B, T) in the dtype of ``outcome_advantages``, 0 on padding.
    """
    _renamed(rest)
    return segment_credit(
        outcome_advantages=outcome_advantages,
        completion_mask=completion_mask,
        segment_values=segment_advantages,
        segment_index=segment_index,
        outcome_weight=outcome_weight,
        lambda_=lambda_,
        zeroed=None if scorable is None else ~scorable.to(torch.bool),
    )
