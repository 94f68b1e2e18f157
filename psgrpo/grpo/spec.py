"""``method='grpo'``: outcome GRPO, the reference every other method is measured against.

No options, no process signal: the estimator ``grpo`` broadcasts A_i over the completion, and the
trainer hands TRL its own 1-D A_i, so training and every logged metric are those of
``trl.GRPOTrainer`` (tested).
"""

from __future__ import annotations

from psgrpo.methods import InspectView, MethodSpec, register_method

SPEC = register_method(
    MethodSpec(
        name="grpo",
        scores_steps=False,
        summary="one reward per completion, normalised in its group: exactly trl.GRPOTrainer",
        estimator="grpo",
        token_credit=lambda config: False,
        inspect=InspectView(
            legend="Outcome GRPO: every token of completion i gets the same advantage A_i = (r_i − mean of its "
            "group) / (std of its group + 1e-4), where r_i is the weighted sum of the reward functions.",
        ),
        colour="C0",
    )
)
