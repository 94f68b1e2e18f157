"""``ProcessGRPOTrainer``: TRL's ``GRPOTrainer`` with pluggable, token-level credit assignment.

The subclass is thin glue. TRL generates the rollout, computes the outcome rewards and the
group advantage A_i (B,). This trainer then asks the advantage estimator of the configured
method (:mod:`psgrpo.advantages`) for token advantages (B, T) and hands them to TRL's
unchanged clipped policy loss. With ``method="grpo"`` the token advantage is A_i on every
completion token, so training is identical to ``trl.GRPOTrainer`` (tested).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from psgrpo.advantages import METHOD_ESTIMATORS, get_advantage_estimator
from psgrpo.config import ProcessGRPOConfig
from psgrpo.rewards import get_reward_funcs

logger = logging.getLogger(__name__)

IMPLEMENTED_METHODS = ("grpo",)


class ProcessGRPOTrainer(GRPOTrainer):
    """GRPO trainer whose per-token advantages come from a registered estimator.

    Args are those of ``trl.GRPOTrainer``; ``args`` must be a :class:`ProcessGRPOConfig`.
    ``reward_funcs`` defaults to the built-ins named in ``args.reward_funcs``.
    """

    def __init__(
        self, model: Any, reward_funcs: Any = None, args: ProcessGRPOConfig | None = None, **kwargs: Any
    ):
        if args is None:
            args = ProcessGRPOConfig(output_dir="psgrpo-output")
        if not isinstance(args, ProcessGRPOConfig):
            raise TypeError(
                f"ProcessGRPOTrainer needs a ProcessGRPOConfig, got {type(args).__name__}; build one with the "
                "same fields (it extends trl.GRPOConfig)."
            )
        if args.method not in IMPLEMENTED_METHODS:
            raise NotImplementedError(
                f"method={args.method!r} is not implemented yet in this version of psgrpo; use method='grpo'."
            )
        estimator_name = args.advantage_estimator or METHOD_ESTIMATORS[args.method]
        self.advantage_estimator = get_advantage_estimator(estimator_name)
        if reward_funcs is None:
            reward_funcs = get_reward_funcs(
                args.reward_funcs,
                exact=args.correctness_exact,
                close=args.correctness_close,
                rel_tol=args.correctness_rel_tol,
            )
        super().__init__(model=model, reward_funcs=reward_funcs, args=args, **kwargs)
        self.add_callback(JsonlMetricsCallback(Path(args.output_dir) / "metrics.jsonl"))

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's rollout and outcome scoring, then token advantages (B, T) from the estimator."""
        output = super()._generate_and_score_completions(inputs)
        start = time.perf_counter()
        output["advantages"] = self.advantage_estimator(
            outcome_advantages=output["advantages"],
            completion_mask=output["completion_mask"],
        )
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["psgrpo/advantage_seconds"].append(time.perf_counter() - start)
        return output


class JsonlMetricsCallback(TrainerCallback):
    """Append every log record (loss, rewards, KL, eval metrics …) to a JSONL file, one object per line.

    Only the main process writes. The file survives crashes line by line, unlike event files,
    and is what ``psgrpo`` reports and benchmarks read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:  # noqa: D401 - HF callback signature
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": state.global_step, **{k: _to_json(v) for k, v in logs.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def _to_json(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else value.tolist()
    return value
