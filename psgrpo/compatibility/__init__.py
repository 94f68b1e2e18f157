"""TRL's GRPO options × psgrpo's methods: what is supported, how, and what is refused. One table.

Three readers share it, so they cannot drift apart:

- :func:`check_trl_compatibility` refuses unsound combinations when a :class:`ProcessGRPOConfig`
  is built (its ``__post_init__``), with an error that names both options, says why and what to do;
- the compatibility matrix test (tests/test_compatibility.py) runs every CPU-testable row of
  :data:`psgrpo.compatibility.matrix.TRL_OPTIONS` with every method for two optimizer steps and asserts one of two outcomes:
  *supported and correct* (``grpo`` equals stock ``trl.GRPOTrainer`` in loss, gradients,
  parameters and every logged metric; for ``ps``/``vps`` the token credit reaches the gradient) or
  *refused* at construction;
- docs/compatibility.md embeds :func:`psgrpo.compatibility.matrix.render_table` (``python -m psgrpo.compatibility`` prints it,
  ``--write docs/compatibility.md`` updates the page; a test checks the page is current).

**Token credit.** Whether a configuration hands TRL's loss advantages that vary along a completion
(:func:`has_token_credit`, from the method's spec). Without it (``grpo``, a process weight of 0) TRL receives the
1-D A_i and runs its own code paths; with it, the hooks of :mod:`psgrpo.loss_hooks` keep TRL's
sequence-level pieces (GSPO ratio, off-policy mask, VESPO weight) from undoing the credit.

**The outcome/process balance follows ``scale_rewards``** (:func:`process_scale`): the ``ps`` step
scores are centred per group and divided by the step-score std of the group (``group``) or of the
whole batch (``batch``, and ``multi_objective_aggregation="normalize_then_sum"``, whose A_i TRL
divides by a batch std), exactly as TRL scales A_i. ``vps``'s ΔC is a probability difference,
unitless like the scaled A_i. ``scale_rewards="none"`` leaves A_i in reward units, which the
process term does not share, so λ and α would silently depend on the reward's scale: refused with
token credit, unless ``reward_norm_momentum`` divides the rewards by their running std first (the
process term is then normalised over the batch).
"""

from __future__ import annotations

from typing import Any, Literal

from psgrpo.methods import Refusal, all_methods, estimator_for, get_method

ProcessScale = Literal["group", "batch"]


def has_token_credit(config: Any) -> bool:
    """Whether TRL's loss gets advantages that vary along a completion (B, T), or one per completion (B,).

    The method's own estimator decides through its spec (``token_credit``: False for ``grpo``, for a
    process term weighted 0, for a one-level tree); the estimator ``grpo`` never gives token credit and
    any other custom ``advantage_estimator`` always does.
    """
    estimator = estimator_for(config)
    if estimator == "grpo":
        return False
    spec = get_method(config.method)
    return spec.token_credit(config) if estimator == spec.estimator else True


def process_scale(config: Any) -> ProcessScale:
    """The std the ``ps`` step scores are divided by, chosen as TRL scales the outcome advantage A_i.

    ``group`` with ``scale_rewards="group"``; ``batch`` when A_i is divided by a std over the whole
    batch (``scale_rewards="batch"``, ``multi_objective_aggregation="normalize_then_sum"``, or
    ``scale_rewards="none"`` with psgrpo's running reward std ``reward_norm_momentum``).
    ``scale_rewards="none"`` alone is refused with token credit (:func:`check_trl_compatibility`).
    """
    if config.multi_objective_aggregation == "normalize_then_sum" or config.scale_rewards == "batch":
        return "batch"
    if config.scale_rewards == "none" and config.reward_norm_momentum is not None:
        return "batch"
    return "group"


def _process_weight(config: Any) -> str:
    weight = get_method(config.method).process_weight
    return weight(config) if weight is not None else f"method={config.method!r}"


REFUSALS: tuple[Refusal, ...] = (
    Refusal(
        options=("scale_rewards", "method"),
        applies=lambda c: (
            get_method(c.method).process_units == "unitless"  # a tree's ΔV is in reward units, like A_i
            and has_token_credit(c)
            and c.scale_rewards == "none"
            and c.multi_objective_aggregation == "sum_then_normalize"
            and c.reward_norm_momentum is None
        ),
        message=lambda c: (
            f"scale_rewards='none' cannot be combined with method={c.method!r} ({_process_weight(c)}): without "
            "a std, the outcome advantage A_i stays in reward units while the process term does not (step "
            "scores / probability differences), so the balance between them would silently depend on the "
            "reward's scale. Use scale_rewards='batch' (no per-group std either), or keep 'none' and add "
            "reward_norm_momentum (e.g. 0.99) to divide rewards by their running std, or use method='grpo'."
        ),
        summary="refused: A_i in reward units has no common scale with the process term; use "
        "`scale_rewards='batch'` or add `reward_norm_momentum`",
    ),
)
"""Refusals of every method; each method's own are in its spec (:func:`all_refusals`)."""


def all_refusals() -> tuple[Refusal, ...]:
    """The general refusals, then those of every registered method (``MethodSpec.refusals``)."""
    return REFUSALS + tuple(r for spec in all_methods() for r in spec.refusals)


def check_trl_compatibility(config: Any) -> None:
    """Raise ValueError for a TRL option × method combination psgrpo refuses (see :func:`all_refusals`)."""
    for refusal in all_refusals():
        if refusal.applies(config):
            raise ValueError(refusal.message(config))
