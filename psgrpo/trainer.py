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
from trl.import_utils import is_vllm_available
from trl.models.utils import disable_gradient_checkpointing

from psgrpo.advantages import (
    METHOD_ESTIMATORS,
    get_advantage_estimator,
    group_has_variance,
    normalize_step_scores,
)
from psgrpo.checkpoints.trainer_mixin import CheckpointMixin
from psgrpo.config import ProcessGRPOConfig
from psgrpo.distributed import max_over_processes
from psgrpo.process_signal import score_steps, step_metrics, step_tensors
from psgrpo.rewards import get_reward_funcs
from psgrpo.scorers import build_step_scorer
from psgrpo.segmentation import get_segmenter, segment_completions
from psgrpo.techniques.trainer_mixin import TechniquesMixin
from psgrpo.vllm_generation import VLLM_INSTALL
from psgrpo.vps_probes import (
    ProbeBatch,
    build_probe_ids,
    cached_confidence,
    check_probe_fits,
    num_chunks,
    packed_confidence,
)
from psgrpo.vps_segments import (
    answer_span_start,
    boundaries_from_spans,
    segment_index_from_boundaries,
    select_boundaries,
)

logger = logging.getLogger(__name__)


class ProcessGRPOTrainer(TechniquesMixin, CheckpointMixin, GRPOTrainer):
    """GRPO trainer whose per-token advantages come from a registered estimator.

    The training techniques (KL schedule, reward normalisation, curriculum, memory bank, flat LR
    warm-up; all off by default) come from :class:`~psgrpo.techniques.trainer_mixin.TechniquesMixin`;
    atomic checkpoints and the exact resume from :class:`~psgrpo.checkpoints.trainer_mixin.CheckpointMixin`.

    Args are those of ``trl.GRPOTrainer``; ``args`` must be a :class:`ProcessGRPOConfig`.
    ``reward_funcs`` defaults to the built-ins named in ``args.reward_funcs``. ``step_scorer``
    (method ``ps``) overrides ``args.step_scorer`` with a callable
    ``(prompts, steps, **columns) -> list[list[float]]``.

    ``last_credit`` records the credit of the last batch ``_generate_and_score_completions``
    scored (local rows, replaced on every call; read by ``psgrpo inspect``):

    - every method: ``outcome_advantages`` (B,) A_i and ``token_advantages`` (B, T), as tensors;
    - ``ps``: ``steps`` (B, S_i) step texts, ``step_token_spans`` (B, S_i) ``(start, end)``
      completion-token spans, ``raw_step_scores`` and ``step_scores`` (B, S_i) the scorer's
      scores and their group-normalised r̃ (``None`` for a completion whose scorer failed);
    - ``vps``: ``boundaries`` (B, K_i) token positions b_k (the probe follows token b_k),
      ``confidence`` (B, K+1) C_0..C_K as the estimator receives it (NaN padded) and
      ``truncated`` (B,) bool.
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
        if args.use_vllm and not is_vllm_available():  # TRL would only notice after loading everything
            raise ImportError(
                f"use_vllm=True needs vLLM, which is not installed: {VLLM_INSTALL} (a CUDA machine), "
                "or drop --use_vllm to generate with transformers"
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
        self.last_credit: dict[str, Any] = {}
        self.add_callback(JsonlMetricsCallback(Path(args.output_dir) / "metrics.jsonl"))
        # Training completion tokens (completion_mask: up to and including EOS) over all processes, restored on
        # resume (CheckpointMixin); psgrpo.heldout_eval logs it as a cost axis.
        self.completion_tokens_seen = 0
        if args.method == "ps" or (args.method == "vps" and args.vps_boundaries == "markers"):
            self.segmenter = get_segmenter(args.segmenter, **args.segmenter_kwargs)
        if args.method == "ps":
            scorer_kwargs = dict(args.step_scorer_kwargs)
            if args.step_scorer == "prm":
                scorer_kwargs.setdefault("device", self.accelerator.device)
            self.step_scorer = build_step_scorer(step_scorer or args.step_scorer, **scorer_kwargs)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's rollout and outcome scoring, then the process signal, then token advantages (B, T)."""
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        self.last_credit = {"outcome_advantages": output["advantages"].detach()}
        if mode == "train":
            local_tokens = output["completion_mask"].sum().reshape(1)
            self.completion_tokens_seen += int(self.accelerator.gather(local_tokens).sum().item())
        signals: dict[str, Any] = {}
        if self.args.method == "ps":
            signals = self._step_signals(output, inputs, mode)
        elif self.args.method == "vps":
            signals = self._confidence_signals(output, inputs, mode)
        start = time.perf_counter()
        advantages = self.advantage_estimator(
            outcome_advantages=output["advantages"], completion_mask=output["completion_mask"], **signals
        )
        self._metrics[mode]["psgrpo/advantage_seconds"].append(time.perf_counter() - start)
        if self.args.method == "ps":
            self._log_process_advantage(advantages, output, mode)
        output["advantages"] = advantages
        self.last_credit["token_advantages"] = advantages.detach()
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
        self.last_credit.update(
            steps=segmentation.steps,
            step_token_spans=segmentation.token_spans,
            raw_step_scores=raw,
            step_scores=normalized[local],
        )
        return {
            "step_advantages": tensors.step_advantages,
            "step_index": tensors.step_index,
            "process_valid": tensors.process_valid,
            "mode": self.args.ps_advantage_mode,
            "outcome_weight": self.args.ps_outcome_weight,
            "process_weight": self.args.ps_lambda,
            "min_temperature": self.args.ps_min_temperature,
        }

    def _confidence_signals(
        self, output: dict[str, Any], inputs: list[dict[str, Any]], mode: str
    ) -> dict[str, Any]:
        """GRPO-VPS: entropies → segment boundaries → confidence C_k of the gold answer at each boundary."""
        args, tokenizer = self.args, self._tokenizer
        prompt_ids, prompt_mask = output["prompt_ids"], output["prompt_mask"]
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        lengths = completion_mask.sum(1).tolist()
        ids = [row[:n].tolist() for row, n in zip(completion_ids, lengths, strict=True)]
        answers = [x.get(args.vps_answer_column) for x in inputs]
        probe_ids, score_from = build_probe_ids(tokenizer, answers, args.vps_probe_open, args.vps_probe_close)
        check_probe_fits(
            prompt_mask.sum(1).tolist(), lengths, [len(p) for p in probe_ids], self._max_positions()
        )
        probe_batch = ProbeBatch(
            prompt_ids, prompt_mask, completion_ids, completion_mask, probe_ids, score_from
        )
        # Same number of probe forwards on every process: with ZeRO-3 / FSDP each one is a collective.
        chunks = max_over_processes(num_chunks(len(ids), args.vps_probe_chunk_size), self.accelerator)
        start = time.perf_counter()
        with torch.no_grad(), disable_gradient_checkpointing(self.model, args.gradient_checkpointing_kwargs):
            if args.vps_boundaries == "markers":
                spans = segment_completions(tokenizer, ids, self.segmenter).token_spans
                boundaries = [boundaries_from_spans(s)[: args.vps_max_segments - 1] for s in spans]
                probes = packed_confidence(
                    self.model,
                    probe_batch,
                    boundaries,
                    temperature=self.temperature,
                    chunk_size=args.vps_probe_chunk_size,
                    min_chunks=chunks,
                )
            else:  # one trajectory forward: entropies and, over its KV cache, the probes
                result = cached_confidence(
                    self.model,
                    probe_batch,
                    self._boundary_chooser(ids),
                    temperature=self.temperature,
                    chunk_size=args.vps_probe_chunk_size,
                    min_chunks=chunks,
                )
                # No old log-probs from this float32 forward: TRL's loss runs under its own autocast (bf16 by
                # default, even on CPU), so handing them over would make the on-policy ratio ≠ 1.
                boundaries, probes = result.boundaries, result.probes
        probe_seconds = time.perf_counter() - start
        eos = torch.tensor(self.eos_token_ids, device=completion_ids.device)
        last = completion_ids.gather(1, (completion_mask.sum(1, keepdim=True) - 1).clamp(min=0)).squeeze(1)
        truncated = ~torch.isin(last, eos) | (completion_mask.sum(1) == 0)
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        all_advantages = self.accelerator.gather(output["advantages"])  # groups may span processes
        has_variance = group_has_variance(all_advantages, num_generations)
        local = slice(
            self.accelerator.process_index * len(ids), (self.accelerator.process_index + 1) * len(ids)
        )
        self._log_confidence(probes.confidence, boundaries, probe_seconds, mode)
        confidence = probes.log_confidence.exp() if args.vps_log_form else probes.confidence
        self.last_credit.update(boundaries=boundaries, confidence=confidence.detach(), truncated=truncated)
        return {
            "confidence": confidence,
            "segment_index": segment_index_from_boundaries(boundaries, lengths, completion_ids.shape[1]).to(
                completion_ids.device
            ),
            "alpha": args.vps_alpha,
            "log_form": args.vps_log_form,
            "zero_variance": args.vps_zero_variance,
            "group_has_variance": has_variance[local],
            "truncated": truncated,
            "truncated_mode": args.vps_truncated,
        }

    def _boundary_chooser(self, ids: list[list[int]]):
        """``(entropies (b, T), lengths, row_offset) -> boundaries``: adaptive cuts at high-entropy tokens."""
        args = self.args
        answer_open = self._tokenizer(args.vps_answer_marker, add_special_tokens=False)["input_ids"]
        whitespace = self._whitespace_token_ids() if args.vps_snap_to_whitespace else None
        generator = torch.Generator().manual_seed(args.seed + self.state.global_step)

        def choose(entropies: torch.Tensor, lengths: list[int], offset: int) -> list[list[int]]:
            boundaries = []
            for row, n, completion in zip(
                entropies, lengths, ids[offset : offset + len(lengths)], strict=True
            ):
                snap = (
                    None
                    if whitespace is None
                    else [t for t, tok in enumerate(completion) if tok in whitespace]
                )
                boundaries.append(
                    select_boundaries(
                        row[:n].float().cpu(),
                        max_segments=args.vps_max_segments,
                        quantile=args.vps_entropy_quantile,
                        min_segment_tokens=args.vps_min_segment_tokens,
                        protect_from=answer_span_start(completion, answer_open),
                        snap_positions=snap,
                        jitter=args.vps_boundary_jitter,
                        generator=generator,
                    )
                )
            return boundaries

        return choose

    def _whitespace_token_ids(self) -> set[int]:
        if not hasattr(self, "_whitespace_ids"):
            vocab = self._tokenizer.get_vocab().values()
            self._whitespace_ids = {
                i for i in vocab if self._tokenizer.decode([i]).strip() == "" and self._tokenizer.decode([i])
            }
        return self._whitespace_ids

    def _max_positions(self) -> int | None:
        config = self.accelerator.unwrap_model(self.model).config
        return getattr(config, "max_position_embeddings", None)

    def _log_confidence(
        self, confidence: torch.Tensor, boundaries: list[list[int]], seconds: float, mode: str
    ) -> None:
        """Whole-batch VPS statistics: segments, C_0, C_final, ΔC and the share of negative segments."""
        k = torch.tensor([len(b) for b in boundaries], device=confidence.device)
        c0 = confidence[:, 0]
        c_final = confidence.gather(1, k.unsqueeze(1)).squeeze(1)
        delta = confidence[:, 1:] - confidence[:, :-1]
        valid = torch.isfinite(delta)
        stats = torch.stack(
            [
                (k + 1).sum().float(),
                c0.sum(),
                c_final.sum(),
                delta[valid].sum(),
                (delta[valid] < 0).sum().float(),
                valid.sum().float(),
                torch.tensor(float(len(boundaries)), device=c0.device),
            ]
        )
        segs, c0_sum, cf_sum, d_sum, neg, n_delta, n = self.accelerator.reduce(
            stats, reduction="sum"
        ).tolist()
        metrics = self._metrics[mode]
        metrics["vps/segments_per_completion"].append(segs / n)
        metrics["vps/c0_mean"].append(c0_sum / n)
        metrics["vps/c_final_mean"].append(cf_sum / n)
        metrics["vps/delta_c_mean"].append(d_sum / max(n_delta, 1.0))
        metrics["vps/frac_negative_segments"].append(neg / max(n_delta, 1.0))
        metrics["vps/probe_seconds"].append(seconds)

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
