"""A fifth credit method, from outside the package: credit by position, A_t = A_i · γ^(n − 1 − t).

The last token of a completion gets its whole outcome advantage A_i, and each earlier token γ times
the next one's: with γ < 1 the tokens nearest the answer carry most of the credit. γ = 1 is outcome
GRPO. Nobody should train with it; it is here to show that a method is one file. Use it with

    psgrpo train --method tests/methods/position_credit.py:position --position_decay 0.8

or, in Python, import this file and build the config with ``psgrpo.methods.config_class()``.
docs/design.md ("Add a method") walks through it top to bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.methods import InspectView, MethodSpec, Refusal, register_method


# 1. Its options: one dataclass, each field prefixed with the method's name and with a help text.
@dataclass
class PositionOptions:
    position_decay: float = field(
        default=0.9,
        metadata={
            "help": "γ in A_t = A_i · γ^(n − 1 − t) (method 'position'): each token gets γ times the credit of the "
            "token after it. 1.0 is outcome GRPO; lower it to put the credit near the answer."
        },
    )


# 2. Its checks: run whenever a config is built, before anything loads.
def check_position_options(config: Any) -> None:
    if not 0.0 < config.position_decay <= 1.0:
        raise ValueError(f"position_decay={config.position_decay} must be in (0, 1]")


# 3. Its estimator: a pure function of tensors, registered by name. Options arrive as keywords, bound
#    once by the trainer (position_decay → decay); shapes (B,) and (B, T) as every estimator's.
@ADVANTAGE_ESTIMATORS.register("position")
def position_token_advantages(
    *, outcome_advantages: torch.Tensor, completion_mask: torch.Tensor, decay: float = 0.9, **_: object
) -> torch.Tensor:
    """(B, T) A_i · decay^(tokens after t), 0 on padding."""
    mask = completion_mask.to(outcome_advantages.dtype)
    after = mask.flip(1).cumsum(1).flip(1) - mask  # (B, T) completion tokens after t
    return outcome_advantages.unsqueeze(1) * decay**after * mask


# 4. The spec: everything the package needs to know, registered under the name --method takes.
SPEC = register_method(
    MethodSpec(
        name="position",
        summary="credit by position: A_i · γ^(tokens after t), the tokens near the answer weigh most",
        estimator="position",
        options=PositionOptions,
        section="Credit by position (method='position', tests/methods/position_credit.py)",
        section_fields=("position_",),
        check=check_position_options,
        signal=None,  # no process signal: the estimator needs A_i and the mask only
        token_credit=lambda config: config.position_decay != 1.0,
        process_weight=lambda config: f"position_decay={config.position_decay}",
        refusals=(
            Refusal(
                options=("importance_sampling_level", "method"),
                applies=lambda c: c.method == "position" and c.importance_sampling_level == "sequence",
                message=lambda c: (
                    "importance_sampling_level='sequence' cannot be combined with method='position': one ratio "
                    "per sequence weighs every token alike, which undoes the position weights; use 'token'"
                ),
                summary="position: refused, a sequence-level ratio undoes the position weights",
            ),
        ),
        inspect=InspectView(
            legend="Credit by position: token t of completion i gets A_i · γ^(n − 1 − t), so the credit fades "
            "from the answer back to the start.",
            signal_label=lambda config: f"A_t (γ = {config.position_decay})",
        ),
    )
)
