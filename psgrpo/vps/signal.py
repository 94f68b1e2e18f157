"""GRPO-VPS's process signal: boundaries, confidences C_0..C_K of the gold answer, and the hybrid's inputs.

One training step, inside :class:`ConfidenceSignal` (GRPO-VPS, arXiv 2604.20659; formulas in
docs/design.md)::

    rollout ──entropy boundaries──► cuts b_1 < … < b_K per completion    (or the PS segmenter's step ends)
            ──probes──► C_k = p(gold answer + closing tag | prompt, completion[: b_k + 1], opening)
                        (or, with vps_probe='gold_suffix', of the rest of the gold solution: gold_suffix.py)
            ──► ΔC_k, truncated rows, groups without reward variance → the ``hybrid`` estimator

With entropy boundaries one no-grad trajectory forward gives the entropies and a KV cache the
probes reuse (:mod:`psgrpo.vps.cached`); with marker boundaries each row is packed once with its
probe copies (:mod:`psgrpo.vps.packed`). Probe forwards run under ``torch.no_grad`` with gradient
checkpointing off; their log-probs are *not* handed to TRL as old log-probs (TRL's loss runs under
its own autocast, so a float32 probe forward would make the on-policy ratio differ from 1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from trl.models.utils import disable_gradient_checkpointing

from psgrpo.advantages import group_has_variance
from psgrpo.credit import SignalOutput
from psgrpo.distributed import local_rows, max_over_processes
from psgrpo.guards import check_finite
from psgrpo.ps.segmentation import segment_completions
from psgrpo.vps.boundaries import (
    answer_span_start,
    boundaries_from_spans,
    segment_index_from_boundaries,
    select_boundaries,
)
from psgrpo.vps.cached import cached_confidence
from psgrpo.vps.gold_suffix import distinct_probes, gold_suffix_texts, suffix_confidence
from psgrpo.vps.packed import packed_confidence
from psgrpo.vps.probes import ProbeBatch, build_probe_ids, num_chunks


@dataclass
class VpsCredit:
    """What GRPO-VPS credited, per local completion (read by ``psgrpo inspect``).

    Attributes:
        boundaries: (B, K_i) token positions b_k; the probe follows token b_k.
        confidence: (B, K + 1) C_0..C_K as the estimator received it (NaN beyond a row's K_i).
        truncated: (B,) bool, completions cut at the length limit.
    """

    boundaries: list[list[int]]
    confidence: torch.Tensor
    truncated: torch.Tensor


class ConfidenceSignal:
    """GRPO-VPS's signal stage (see the module docstring); one instance per trainer.

    Args:
        config: the :class:`~psgrpo.config.ProcessGRPOConfig` (``vps_*`` options).
        tokenizer: the policy's tokenizer (probe ids, the answer marker, whitespace tokens).
        accelerator: the trainer's ``Accelerator``.
        eos_token_ids: ids that end a completion (anything else at the end means truncated).
        temperature: the sampling temperature; entropies and probes divide logits by it, as TRL does.
        segmenter: the PS segmenter, for ``vps_boundaries="markers"``.
    """

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        accelerator: Any,
        eos_token_ids: list[int],
        temperature: float,
        segmenter: Any = None,
    ) -> None:
        self.config, self.tokenizer, self.accelerator = config, tokenizer, accelerator
        self.eos_token_ids, self.temperature, self.segmenter = eos_token_ids, temperature, segmenter
        self.answer_open = tokenizer(config.vps_answer_marker, add_special_tokens=False)["input_ids"]
        self.whitespace = whitespace_token_ids(tokenizer) if config.vps_snap_to_whitespace else None

    def __call__(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        num_generations: int,
        step: int,
    ) -> SignalOutput:
        config = self.config
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        lengths = completion_mask.sum(1).tolist()
        ids = [row[:n].tolist() for row, n in zip(completion_ids, lengths, strict=True)]
        if config.vps_probe == "answer":  # gold_suffix scores the gold solution, not the answer
            probe_ids, score_from = build_probe_ids(
                self.tokenizer,
                [x.get(config.vps_answer_column) for x in inputs],
                config.vps_probe_open,
                config.vps_probe_close,
            )
            batch = ProbeBatch(
                output["prompt_ids"],
                output["prompt_mask"],
                completion_ids,
                completion_mask,
                probe_ids,
                score_from,
            )
        # Same number of probe forwards on every process: with ZeRO-3 / FSDP each one is a collective.
        chunks = max_over_processes(num_chunks(len(ids), config.vps_probe_chunk_size), self.accelerator)
        rows = local_rows(self.accelerator, len(ids))
        start = time.perf_counter()
        distinct_frac = None  # the share of gold_suffix probes scored (the others repeat one)
        with torch.no_grad(), disable_gradient_checkpointing(model, config.gradient_checkpointing_kwargs):
            if config.vps_boundaries == "markers":
                spans = segment_completions(self.tokenizer, ids, self.segmenter).token_spans
                boundaries = [boundaries_from_spans(s)[: config.vps_max_segments - 1] for s in spans]
                if config.vps_probe == "gold_suffix":
                    probes, distinct_frac = self.gold_suffix_probes(model, output, inputs, ids, boundaries)
                else:
                    probes = packed_confidence(
                        model,
                        batch,
                        boundaries,
                        self.temperature,
                        config.vps_probe_chunk_size,
                        min_chunks=chunks,
                    )
            else:  # "entropy": one trajectory forward per chunk gives the entropies and, over its cache, the probes

                def choose(entropies: torch.Tensor, row: int) -> list[int]:
                    return self.entropy_boundaries(entropies, ids[row], step, rows.start + row)

                result = cached_confidence(
                    model, batch, choose, self.temperature, config.vps_probe_chunk_size, min_chunks=chunks
                )
                boundaries, probes = result.boundaries, result.probes
        probe_seconds = time.perf_counter() - start
        real = (
            torch.arange(probes.log_confidence.shape[1], device=completion_ids.device)[None, :]
            <= torch.tensor([len(b) for b in boundaries], device=completion_ids.device)[:, None]
        )  # C_0..C_{K_i}; NaN beyond is padding
        check_finite("the VPS confidences log C_k", probes.log_confidence, step, valid=real)

        eos = torch.tensor(self.eos_token_ids, device=completion_ids.device)
        last = completion_ids.gather(1, (completion_mask.sum(1, keepdim=True) - 1).clamp(min=0)).squeeze(1)
        truncated = ~torch.isin(last, eos) | (completion_mask.sum(1) == 0)
        has_variance = group_has_variance(self.accelerator.gather(output["advantages"]), num_generations)
        confidence = probes.log_confidence.exp() if config.vps_log_form else probes.confidence
        metrics = confidence_metrics(probes.confidence, boundaries, self.accelerator)
        metrics["vps/probe_seconds"] = probe_seconds
        if distinct_frac is not None:
            metrics["vps/distinct_probe_frac"] = distinct_frac
        return SignalOutput(
            estimator_kwargs={
                "confidence": confidence,
                "segment_index": segment_index_from_boundaries(
                    boundaries, lengths, completion_ids.shape[1]
                ).to(completion_ids.device),
                "group_has_variance": has_variance[rows],  # groups may span processes
                "is_truncated": truncated,
                # the vps_* options, named as the config names them minus the prefix
                "alpha": config.vps_alpha,
                "log_form": config.vps_log_form,
                "zero_variance": config.vps_zero_variance,
                "truncated": config.vps_truncated,
            },
            metrics=metrics,
            credit=VpsCredit(boundaries, confidence.detach(), truncated),
            outcome_weight=1.0,
        )

    def gold_suffix_probes(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        ids: list[list[int]],
        boundaries: list[list[int]],
    ) -> tuple[Any, float]:
        """C_0..C_K of ``vps_probe='gold_suffix'`` (:mod:`psgrpo.vps.gold_suffix`): the rest of each
        row's gold solution, split into steps by the same segmenter, after each of its boundaries;
        and the share of these probes that are distinct (each is scored once)."""
        column = self.config.vps_solution_column
        contexts, suffixes = [], []
        for row, (x, completion, cuts) in enumerate(zip(inputs, ids, boundaries, strict=True)):
            solution = x.get(column)
            if not isinstance(solution, str) or not solution.strip():
                raise ValueError(
                    f"vps_probe='gold_suffix' needs the gold worked solution in column {column!r}; row {row} of "
                    f"this batch has {solution!r} (columns: {', '.join(sorted(x))}). Set vps_solution_column, "
                    "or use vps_probe='answer'"
                )
            step_ends = [end for _, end in self.segmenter(solution)][:-1]
            prompt = output["prompt_ids"][row][output["prompt_mask"][row].bool()].tolist()
            contexts.append([prompt + completion[: b + 1] for b in [-1, *cuts]])
            suffixes.append(
                [
                    self.tokenizer(text, add_special_tokens=False)["input_ids"]
                    for text in gold_suffix_texts(solution, step_ends, len(cuts))
                ]
            )
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        chunk_size = self.config.vps_probe_chunk_size
        # one forward per chunk of distinct probes, as many on every process (ZeRO-3 / FSDP collectives)
        owners = distinct_probes(contexts, suffixes)  # counted once, here and for the forwards
        chunks = max_over_processes(num_chunks(len(owners), chunk_size), self.accelerator)
        probes = suffix_confidence(
            model, contexts, suffixes, pad, self.temperature, chunk_size, min_chunks=chunks, owners=owners
        )
        return probes, len(owners) / max(sum(map(len, contexts)), 1)

    def entropy_boundaries(
        self, entropies: torch.Tensor, completion: list[int], step: int, global_row: int
    ) -> list[int]:
        """Adaptive cuts at high-entropy tokens of one completion (``vps_*`` options).

        The jitter generator is seeded by (``seed``, step, global row), so a row gets the same cuts
        whichever process holds it.
        """
        config = self.config
        snap = (
            None
            if self.whitespace is None
            else [t for t, tok in enumerate(completion) if tok in self.whitespace]
        )
        generator = torch.Generator().manual_seed(config.seed + 7919 * step + 104729 * global_row)
        return select_boundaries(
            entropies.float().cpu(),
            max_segments=config.vps_max_segments,
            quantile=config.vps_entropy_quantile,
            min_segment_tokens=config.vps_min_segment_tokens,
            protect_from=answer_span_start(completion, self.answer_open),
            snap_positions=snap,
            jitter=config.vps_boundary_jitter,
            generator=generator,
            tolerance=config.vps_entropy_tolerance,
        )


def whitespace_token_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokens that decode to whitespace only (spaces, newlines): the cuts ``vps_snap_to_whitespace`` allows."""
    ids = tokenizer.get_vocab().values()
    return {i for i in ids if (text := tokenizer.decode([i])) and text.strip() == ""}


def confidence_metrics(
    confidence: torch.Tensor, boundaries: list[list[int]], accelerator: Any
) -> dict[str, float]:
    """Whole-batch VPS statistics: segments, C_0, C_final, ΔC and the share of negative segments.

    Args:
        confidence: (B, K + 1) probabilities C_0..C_K, NaN beyond each row's K_i.
        boundaries: per row, its K_i cuts.
        accelerator: sums over processes.
    """
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
    segs, c0_sum, cf_sum, d_sum, neg, n_delta, n = accelerator.reduce(stats, reduction="sum").tolist()
    return {
        "vps/segments_per_completion": segs / max(n, 1.0),
        "vps/c0_mean": c0_sum / max(n, 1.0),
        "vps/c_final_mean": cf_sum / max(n, 1.0),
        "vps/delta_c_mean": d_sum / max(n_delta, 1.0),
        "vps/frac_negative_segments": neg / max(n_delta, 1.0),
    }
