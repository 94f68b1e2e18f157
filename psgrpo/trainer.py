"""``ProcessGRPOTrainer``: TRL's ``GRPOTrainer`` with pluggable, token-level credit assignment.

The subclass is thin glue. TRL generates the rollout, computes the outcome rewards and the
group advantage A_i (B,). This trainer then adds the method's process signal (``ps``: step
scores, see :mod:`psgrpo.process_signal`), asks the method's advantage estimator
(:mod:`psgrpo.advantages`) for token advantages (B, T) and hands them to TRL's unchanged
clipped policy loss. With ``method="grpo"`` the token advantage is A_i on every completion
token, so training is identical to ``trl.GRPOTrainer`` (tested).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl import GRPOTrainer

from psgrpo.advantages import METHOD_ESTIMATORS, get_advantage_estimator, normalize_step_scores
from psgrpo.config import ProcessGRPOConfig
from psgrpo.process_signal import score_steps, step_metrics, step_tensors
from psgrpo.rewards import get_reward_funcs
from psgrpo.scorers import build_step_scorer
from psgrpo.segmentation import get_segmenter, segment_completions

logger = logging.getLogger(__name__)

IMPLEMENTED_METHODS = ("grpo", "ps")


class ProcessGRPOTrainer(GRPOTrainer):
    """GRPO trainer whose per-token advantages come from a registered estimator.

    Args are those of ``trl.GRPOTrainer``; ``args`` must be a :class:`ProcessGRPOConfig`.
    ``reward_funcs`` defaults to the built-ins named in ``args.reward_funcs``. ``step_scorer``
    (method ``ps``) overrides ``args.step_scorer`` with a callable
    ``(prompts, steps, **columns) -> list[list[float]]``.
    """

    def __init__(
        self,
        model: Any,
        reward_funcs: Any = None,
        args: ProcessGRPOConfig | None = None,
        step_scorer: Any = None,
        **kwargs: Any,
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
        if args.method == "ps":
            self.segmenter = get_segmenter(args.segmenter, **args.segmenter_kwargs)
            scorer_kwargs = dict(args.step_scorer_kwargs)
            if args.step_scorer == "prm":
                scorer_kwargs.setdefault("device", self.accelerator.device)
            self.step_scorer = build_step_scorer(step_scorer or args.step_scorer, **scorer_kwargs)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's rollout and outcome scoring, then the process signal, then token advantages (B, T)."""
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        signals: dict[str, Any] = {}
        if self.args.method == "ps":
            signals = self._step_signals(output, inputs, mode)
        start = time.perf_counter()
        advantages = self.advantage_estimator(
            outcome_advantages=output["advantages"], completion_mask=output["completion_mask"], **signals
        )
        self._metrics[mode]["psgrpo/advantage_seconds"].append(time.perf_counter() - start)
        if signals:
            self._log_process_advantage(advantages, output, mode)
        output["advantages"] = advantages
        return output

    def _step_signals(
        self, output: dict[str, Any], inputs: list[dict[str, Any]], mode: str
    ) -> dict[str, Any]:
        """PS-GRPO: segment, score, gather, normalise per group, and lay out as tensors."""
        mask = output["completion_mask"].bool()
        ids = [row[keep].tolist() for row, keep in zip(output["completion_ids"], mask, strict=True)]
        segmentation = segment_completions(self._tokenizer, ids, self.segmenter)
        columns = {key: [x[key] for x in inputs] for key in inputs[0] if key != "prompt"}
        start = time.perf_counter()
        raw = score_steps(
            self.step_scorer,
            [x["prompt"] for x in inputs],
            segmentation.steps,
            columns,
            fallback=self.args.ps_on_scorer_error == "outcome",
        )
        scorer_seconds = time.perf_counter() - start
        all_raw = gather_object(raw)  # the whole generation batch: groups may span processes
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        normalized = normalize_step_scores(all_raw, num_generations)
        local = slice(
            self.accelerator.process_index * len(ids), (self.accelerator.process_index + 1) * len(ids)
        )
        tensors = step_tensors(normalized[local], segmentation.token_spans, mask.shape[1], mask.device)
        for key, value in step_metrics(all_raw, self.args.ps_wrong_step_threshold).items():
            self._metrics[mode][key].append(value)
        self._metrics[mode]["ps/scorer_seconds"].append(scorer_seconds)
        return {
            "step_advantages": tensors.step_advantages,
            "step_index": tensors.step_index,
            "process_valid": tensors.process_valid,
            "mode": self.args.ps_advantage_mode,
            "outcome_weight": self.args.ps_outcome_weight,
            "process_weight": self.args.ps_lambda,
            "min_temperature": self.args.ps_min_temperature,
        }

    def _log_process_advantage(self, advantages: torch.Tensor, output: dict[str, Any], mode: str) -> None:
        """Mean/std over completion tokens of the process part A_t − w·A_i (whole batch)."""
        mask = output["completion_mask"].to(advantages.dtype)
        outcome = self.args.ps_outcome_weight * output["advantages"].unsqueeze(1) * mask
        process = (advantages - outcome)[mask.bool()]
        stats = torch.stack([process.sum(), (process**2).sum(), mask.sum()])
        total, total_sq, count = self.accelerator.reduce(stats, reduction="sum").tolist()
        mean = total / max(count, 1.0)
        self._metrics[mode]["ps/process_adv_mean"].append(mean)
        self._metrics[mode]["ps/process_adv_std"].append(
            max(total_sq / max(count, 1.0) - mean**2, 0.0) ** 0.5
        )


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
