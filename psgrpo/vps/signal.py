"""GRPO-VPS's process signal: boundaries, confidences C_0..C_K of the gold answer, and the hybrid's inputs.

One training step, inside :class:`VpsSignal` (GRPO-VPS, arXiv 2604.20659; formulas in
docs/design.md)::

    rollout ──entropy boundaries──► cuts b_1 < … < b_K per completion    (or the PS segmenter's step ends)
            ──probes──► C_k = p(gold answer + closing tag | prompt, completion[: b_k + 1], opening)
                        (or, with vps_probe='gold_suffix', of the rest of the gold solution: gold_suffix.py)
            ──► ΔC_k, truncated rows, groups without reward variance → the ``vps`` estimator

With entropy boundaries one no-grad trajectory forward gives the entropies and a KV cache the
probes reuse (:mod:`psgrpo.vps.cached`); with marker boundaries each row is packed once with its
probe copies (:mod:`psgrpo.vps.packed`). Probe forwards run under ``torch.no_grad`` with gradient
checkpointing off; their log-probs are *not* handed to TRL as old log-probs (TRL's loss runs under
its own autocast, so a float32 probe forward would make the on-policy ratio differ from 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from trl.models.utils import disable_gradient_checkpointing

from psgrpo.advantages import group_has_variance
from psgrpo.credit import SignalOutput
from psgrpo.distributed import local_rows, max_over_processes
from psgrpo.guards import check_finite
from psgrpo.ps.segmentation import segment_completions, token_offsets
from psgrpo.timing import device_seconds
from psgrpo.vps.boundaries import (
    answer_marker_token,
    boundaries_from_spans,
    segment_index_from_boundaries,
    select_boundaries,
)
from psgrpo.vps.cached import cached_confidence
from psgrpo.vps.gold_suffix import distinct_probes, gold_suffix_texts, suffix_confidence
from psgrpo.vps.packed import packed_confidence
from psgrpo.vps.probes import ProbeBatch, ProbeResult, build_probe_ids, num_chunks


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


@dataclass
class Probed:
    """What a probe strategy returns for the local batch of B completions.

    Attributes:
        boundaries: per row, its K_i cuts b_1 < … < b_K (token positions; the probe follows token b_k).
        probes: ``confidence`` and ``log_confidence``, (B, K + 1) each, C_0..C_K (NaN beyond a row's K_i).
        distinct_frac: the share of ``gold_suffix`` probes scored (the others repeat one); None otherwise.
    """

    boundaries: list[list[int]]
    probes: ProbeResult
    distinct_frac: float | None = None


ProbeStrategy = Callable[[Any, dict[str, Any], list[dict[str, Any]], list[list[int]], int], Probed]
"""``(model, output, inputs, ids, step) -> Probed``: cuts and probes the B local completions (``ids``:
each row's completion tokens without padding). Called under ``torch.no_grad``, checkpointing off."""


class VpsSignal:
    """GRPO-VPS's signal stage (see the module docstring); one instance per trainer.

    The probe strategy is chosen once, here, from ``vps_boundaries`` × ``vps_probe``:

    - ``entropy`` × ``answer``: :meth:`probe_answer_cached`, one trajectory forward whose KV cache the
      answer probes reuse (the paper's setting);
    - ``markers`` × ``answer``: :meth:`probe_answer_packed`, each row packed with its probe copies;
    - ``markers`` × ``gold_suffix``: :meth:`probe_gold_suffix`, the rest of the gold solution.

    Args:
        config: the :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig` (``vps_*`` options).
        tokenizer: the policy's tokenizer (probe ids, the answer marker, whitespace tokens).
        accelerator: the trainer's ``Accelerator``.
        eos_token_ids: ids that end a completion (anything else at the end means truncated).
        temperature: the sampling temperature; entropies and probes divide logits by it, as TRL does.
        segmenter: the PS segmenter, for ``vps_boundaries="markers"``.
        rewards_per_func: returns the batch's (N, F) rewards of every process (the trainer's
            ``step_record.rewards_per_func``), so rows no reward function scored are left out of the
            "group has reward variance" test; ``None``: every row counts.
    """

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        accelerator: Any,
        eos_token_ids: list[int],
        temperature: float,
        segmenter: Any = None,
        rewards_per_func: Callable[[], torch.Tensor] | None = None,
    ) -> None:
        self.config, self.tokenizer, self.accelerator = config, tokenizer, accelerator
        self.rewards_per_func = rewards_per_func
        self.eos_token_ids, self.temperature, self.segmenter = eos_token_ids, temperature, segmenter
        self.whitespace = whitespace_token_ids(tokenizer) if config.vps_snap_to_whitespace else None
        strategies: dict[tuple[str, str], ProbeStrategy] = {
            ("entropy", "answer"): self.probe_answer_cached,
            ("markers", "answer"): self.probe_answer_packed,
            ("markers", "gold_suffix"): self.probe_gold_suffix,
        }
        choice = (config.vps_boundaries, config.vps_probe)
        if choice not in strategies:
            raise ValueError(
                f"vps_boundaries={choice[0]!r} cannot be combined with vps_probe={choice[1]!r}; "
                f"supported: {', '.join(f'{b}/{p}' for b, p in strategies)}"
            )
        self.probe: ProbeStrategy = strategies[choice]

    def __call__(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        num_generations: int,
        step: int,
    ) -> SignalOutput:
        """Probe the B local completions and return the ``vps`` estimator's keyword arguments.

        Args:
            model: the policy; probes run under ``torch.no_grad`` with gradient checkpointing off.
            output: TRL's generation output: ``prompt_ids`` / ``prompt_mask`` (B, P), ``completion_ids`` /
                ``completion_mask`` (B, T), ``advantages`` (B,) A_i.
            inputs: the B dataset rows (gold answer or gold solution columns).
            num_generations: G, completions per prompt (a group may span processes).
            step: the optimizer step (seeds the boundary jitter; named by the non-finite check).

        Returns:
            A :class:`SignalOutput` whose estimator keywords hold ``confidence`` (B, K + 1),
            ``segment_index`` (B, T), ``group_has_variance`` (B,), ``is_truncated`` (B,) and the
            ``vps_*`` options; its credit is a :class:`VpsCredit`.
        """
        config = self.config
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        lengths = completion_mask.sum(1).tolist()
        ids = [row[:n] for row, n in zip(completion_ids.tolist(), lengths, strict=True)]  # one host copy
        start = device_seconds(completion_ids.device)
        with torch.no_grad(), disable_gradient_checkpointing(model, config.gradient_checkpointing_kwargs):
            probed = self.probe(model, output, inputs, ids, step)
        probe_seconds = device_seconds(completion_ids.device) - start  # the last probe forward included
        boundaries, probes = probed.boundaries, probed.probes
        real = (
            torch.arange(probes.log_confidence.shape[1], device=completion_ids.device)[None, :]
            <= torch.tensor([len(b) for b in boundaries], device=completion_ids.device)[:, None]
        )  # C_0..C_{K_i}; NaN beyond is padding
        check_finite("the VPS confidences log C_k", probes.log_confidence, step, valid=real)

        truncated = truncated_rows(completion_ids, completion_mask, self.eos_token_ids)
        rewards = self.rewards_per_func() if self.rewards_per_func is not None else None
        scorable = None if rewards is None else ~torch.isnan(rewards).all(dim=1)
        has_variance = group_has_variance(
            self.accelerator.gather(output["advantages"]), num_generations, scorable
        )
        confidence = probes.log_confidence.exp() if config.vps_log_form else probes.confidence
        metrics = confidence_metrics(probes.confidence, boundaries, self.accelerator)
        metrics["vps/probe_seconds"] = probe_seconds
        if probed.distinct_frac is not None:
            metrics["vps/distinct_probe_frac"] = probed.distinct_frac
        return SignalOutput(
            estimator_kwargs={
                "confidence": confidence,
                "segment_index": segment_index_from_boundaries(
                    boundaries, lengths, completion_ids.shape[1]
                ).to(completion_ids.device),
                "group_has_variance": has_variance[local_rows(self.accelerator, len(ids))],
                "is_truncated": truncated,
            },  # the vps_* options are bound to the estimator once (psgrpo.methods.estimator_options)
            metrics=metrics,
            credit=VpsCredit(boundaries, confidence.detach(), truncated),
        )

    # ---- probe strategies (:data:`ProbeStrategy`), one chosen in __init__ ----------------------

    def probe_answer_cached(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        ids: list[list[int]],
        step: int,
    ) -> Probed:
        """Entropy cuts and answer probes from one trajectory forward per chunk (:mod:`psgrpo.vps.cached`).

        The forward gives the entropies (B, T), :meth:`entropy_boundaries` cuts each row, and the
        answer probes run over the forward's KV cache: C_k = p(gold answer | prompt, o[: b_k + 1]).
        """
        rows = local_rows(self.accelerator, len(ids))

        def choose(entropies: torch.Tensor, row: int) -> list[int]:
            return self.entropy_boundaries(entropies, ids[row], step, rows.start + row)

        result = cached_confidence(
            model,
            self.answer_batch(output, inputs),
            choose,
            self.temperature,
            self.config.vps_probe_chunk_size,
            min_chunks=self.probe_chunks(len(ids)),
        )
        return Probed(result.boundaries, result.probes)

    def probe_answer_packed(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        ids: list[list[int]],
        step: int,
    ) -> Probed:
        """Cuts at the segmenter's step ends; each row packed once with its answer probes (:mod:`psgrpo.vps.packed`)."""
        boundaries = self.marker_boundaries(ids)
        probes = packed_confidence(
            model,
            self.answer_batch(output, inputs),
            boundaries,
            self.temperature,
            self.config.vps_probe_chunk_size,
            min_chunks=self.probe_chunks(len(ids)),
        )
        return Probed(boundaries, probes)

    def probe_gold_suffix(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        ids: list[list[int]],
        step: int,
    ) -> Probed:
        """Cuts at the segmenter's step ends; probes of the rest of each row's gold solution after each cut
        (``vps_probe='gold_suffix'``, :mod:`psgrpo.vps.gold_suffix`), each distinct probe scored once."""
        boundaries = self.marker_boundaries(ids)
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
            model,
            contexts,
            suffixes,
            pad,
            self.temperature,
            chunk_size,
            min_chunks=chunks,
            owners=owners,
            device=output["prompt_ids"].device,
        )
        return Probed(boundaries, probes, len(owners) / max(sum(map(len, contexts)), 1))

    # ---- helpers of the strategies ---------------------------------------------------------------

    def answer_batch(self, output: dict[str, Any], inputs: list[dict[str, Any]]) -> ProbeBatch:
        """The B rows with their answer probe ids: ``vps_probe_open`` + gold answer + ``vps_probe_close``."""
        config = self.config
        probe_ids, score_from = build_probe_ids(
            self.tokenizer,
            [x.get(config.vps_answer_column) for x in inputs],
            config.vps_probe_open,
            config.vps_probe_close,
        )
        return ProbeBatch(
            output["prompt_ids"],
            output["prompt_mask"],
            output["completion_ids"],
            output["completion_mask"],
            probe_ids,
            score_from,
        )

    def probe_chunks(self, n_rows: int) -> int:
        """Probe forwards for ``n_rows`` rows, the maximum over processes (with ZeRO-3 / FSDP each is a collective)."""
        return max_over_processes(num_chunks(n_rows, self.config.vps_probe_chunk_size), self.accelerator)

    def marker_boundaries(self, ids: list[list[int]]) -> list[list[int]]:
        """Per row, the segmenter's step ends as cuts, at most ``vps_max_segments − 1`` of them."""
        spans = segment_completions(self.tokenizer, ids, self.segmenter).token_spans
        return [boundaries_from_spans(s)[: self.config.vps_max_segments - 1] for s in spans]

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
            protect_from=answer_marker_token(
                *token_offsets(self.tokenizer, completion), config.vps_answer_marker
            ),
            snap_positions=snap,
            jitter=config.vps_boundary_jitter,
            generator=generator,
            tolerance=config.vps_entropy_tolerance,
        )


def truncated_rows(
    completion_ids: torch.Tensor, completion_mask: torch.Tensor, eos_token_ids: list[int]
) -> torch.Tensor:
    """(B,) bool: completions whose last real token is no EOS (cut at the length limit), and empty ones.

    Args:
        completion_ids: (B, T) token ids, right-padded.
        completion_mask: (B, T) 1 on completion tokens.
        eos_token_ids: the ids that end a completion.
    """
    eos = torch.tensor(eos_token_ids, device=completion_ids.device)
    last = completion_ids.gather(1, (completion_mask.sum(1, keepdim=True) - 1).clamp(min=0)).squeeze(1)
    return ~torch.isin(last, eos) | (completion_mask.sum(1) == 0)


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
