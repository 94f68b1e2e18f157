"""GRPO-VPS probes over the trajectory's KV cache: one forward for entropies and prefixes, one for the probes.

Per chunk of rows, :func:`cached_confidence` runs a plain loop::

    trajectory = trajectory_forward(model, rows)          # (b, T) entropies + KV cache of prompt + completion
    cuts = [choose(entropies[i, :n_i], row) for i ...]     # boundaries from the entropies
    probes = probes_over_cache(model, rows, trajectory, cuts)   # C_0..C_K, prefixes read from the cache

Probe copy ``k`` of a row attends to the cached entries of its prefix (prompt and completion up to
``b_k``) and, causally, to itself, with position ids that continue the prefix, so no prefix is
ever recomputed: the cost is one trajectory forward plus ``Σ_k len(probe)`` tokens per row. Same
confidences as :func:`psgrpo.vps.probes.naive_confidence` (tested, eager and SDPA attention).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from psgrpo.vps.boundaries import token_entropies
from psgrpo.vps.probes import (
    ProbeBatch,
    ProbeResult,
    ProbeRow,
    attention_mask_for,
    cache_keyword,
    check_attention,
    check_temperature,
    idle_forwards,
    model_max_positions,
    num_chunks,
    result_from_log_confidence,
    rows_from_batch,
    token_log_probs,
)

BoundaryChooser = Callable[[Tensor, int], Sequence[int]]
"""``(entropies (n,) of one row's real tokens, on the CPU, row index in the batch) -> boundaries``."""


@dataclass
class Trajectory:
    """One chunk's trajectory forward.

    Attributes:
        entropies: (b, T) entropies in nats at the temperature, 0 on padding.
        logits: (b, T + 1, V) the logits from the last prompt token on: ``logits[:, t]`` predicts
            completion token ``t`` (and ``logits[:, T]`` the token after the completion); ``None`` when
            no row scores its probe from the probe's first token (``score_from == 0``), the only use of
            them after the entropies (the default probe, opened by ``<answer>``, never does).
        cache: the KV cache of ``[left-padded prompt (P), right-padded completion (T)]``.
        prompt_width: P.
    """

    entropies: Tensor
    logits: Tensor | None
    cache: Any
    prompt_width: int

    @property
    def cache_length(self) -> int:
        return self.prompt_width + self.entropies.shape[1]


@dataclass
class TrajectoryProbes:
    """What :func:`cached_confidence` returns for a batch.

    Attributes:
        entropies: (B, T) entropies in nats at the temperature, 0 on padding.
        boundaries: per row, the boundaries ``choose`` picked.
        probes: the confidences, as :func:`psgrpo.vps.probes.naive_confidence` returns them.
    """

    entropies: Tensor
    boundaries: list[list[int]]
    probes: ProbeResult


@torch.no_grad()
def trajectory_forward(model, batch: ProbeBatch, temperature: float) -> Trajectory:
    """Run prompt + completion once, keeping the KV cache, the completion logits and their entropies."""
    input_ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
    attention = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    width = batch.completion_ids.shape[1]
    out = model(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=width + 1,
    )
    entropies = token_entropies(out.logits[:, :width], temperature, chunk_size=1024) * batch.completion_mask
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    scored_from_trajectory = any(start == 0 for start in batch.score_from)
    logits = (
        out.logits if scored_from_trajectory else None
    )  # else (b, T + 1, V) freed now, not after the probes
    return Trajectory(entropies, logits, cache, batch.prompt_ids.shape[1])


@dataclass
class _ScoredToken:
    """One scored probe token: which logits predict it, the token, and its probe copy."""

    row: int
    from_trajectory: bool  # predicted by the trajectory's logits (a probe scored from its first token)
    position: int  # index into the trajectory logits (from_trajectory) or into the probe queries
    target: int
    copy: int


def _probe_queries(
    rows: Sequence[ProbeRow], trajectory: Trajectory, device: torch.device
) -> tuple[Tensor, Tensor, Tensor, list[_ScoredToken]]:
    """Probe tokens to run over the cache, with their position ids, their 4-D mask and what is scored.

    Probe copy ``k`` of row ``i`` may see cache entries ``[P - len(prompt_i), P + b_k]``
    (``P - 1`` for C_0) and, causally, its own tokens. Returns ``input_ids`` (b, Q),
    ``position_ids`` (b, Q), which cache entries and queries each query may see (b, Q, cache_length + Q;
    :func:`~psgrpo.vps.probes.attention_mask_for` makes the 4-D mask of it) and the scored tokens.
    """
    prompt_width, cache_length = trajectory.prompt_width, trajectory.cache_length
    queries = [[tok for _ in r.prefix_lengths() for tok in r.probe] for r in rows]
    width = max(len(q) for q in queries)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    position_ids = torch.zeros(len(rows), width, dtype=torch.long)
    keep = torch.zeros(len(rows), width, cache_length + width, dtype=torch.bool)
    scored: list[_ScoredToken] = []
    for i, row in enumerate(rows):
        m, first = len(row.probe), prompt_width - len(row.prompt)
        input_ids[i, : len(queries[i])] = torch.tensor(queries[i])
        own = torch.tril(torch.ones(m, m, dtype=torch.bool))  # a copy attends causally to itself
        for k, prefix in enumerate(row.prefix_lengths()):
            start, last_visible = k * m, first + prefix - 1  # cache index of the prefix's last token
            position_ids[i, start : start + m] = torch.arange(prefix, prefix + m)
            keep[i, start : start + m, first : last_visible + 1] = True
            keep[i, start : start + m, cache_length + start : cache_length + start + m] = own
            for j in range(row.score_from, m):
                if j == 0:  # the prefix's last token predicts the probe's first: trajectory logits
                    scored.append(_ScoredToken(i, True, last_visible - (prompt_width - 1), row.probe[j], k))
                else:
                    scored.append(_ScoredToken(i, False, start + j - 1, row.probe[j], k))
        padding = torch.arange(len(queries[i]), width)  # padding queries attend to themselves only
        keep[i, padding, cache_length + padding] = True
    return input_ids.to(device), position_ids.to(device), keep.to(device), scored


@torch.no_grad()
def probes_over_cache(
    model, batch: ProbeBatch, trajectory: Trajectory, boundaries: Sequence[Sequence[int]], temperature: float
) -> ProbeResult:
    """C_0..C_K of every row, the probe copies run over ``trajectory``'s KV cache (one forward)."""
    rows = rows_from_batch(batch, boundaries, model_max_positions(model))
    device = batch.prompt_ids.device
    probe_input, probe_positions, keep, scored = _probe_queries(rows, trajectory, device)
    cache_length = trajectory.cache_length
    probe_logits = model(
        input_ids=probe_input,
        attention_mask=attention_mask_for(model, keep),
        position_ids=probe_positions,
        use_cache=True,
        **{cache_keyword(model): trajectory.cache},
        cache_position=torch.arange(cache_length, cache_length + probe_input.shape[1], device=device),
    ).logits
    row_index = torch.tensor([s.row for s in scored], device=device)
    position = torch.tensor([s.position for s in scored], device=device)
    from_trajectory = torch.tensor([s.from_trajectory for s in scored], device=device)
    logits = probe_logits[row_index, position.clamp(max=probe_logits.shape[1] - 1)]
    if trajectory.logits is not None:  # some probe tokens are predicted by the trajectory's last prefix token
        logits = torch.where(
            from_trajectory.unsqueeze(1),
            trajectory.logits[row_index, position.clamp(max=trajectory.logits.shape[1] - 1)],
            logits,
        )
    scores = token_log_probs(logits, torch.tensor([s.target for s in scored], device=device), temperature)
    width = max(len(r.boundaries) + 1 for r in rows)
    slot = row_index * width + torch.tensor([s.copy for s in scored], device=device)
    log_confidence = torch.zeros(len(rows) * width, device=device).index_add_(0, slot, scores)
    return result_from_log_confidence(
        log_confidence.view(len(rows), width), [len(r.boundaries) + 1 for r in rows]
    )


@torch.no_grad()
def cached_confidence(
    model,
    batch: ProbeBatch,
    choose: BoundaryChooser,
    temperature: float = 1.0,
    chunk_size: int | None = None,
    min_chunks: int = 0,
) -> TrajectoryProbes:
    """Entropies, boundaries and confidences of every row, ``chunk_size`` rows per pair of forwards.

    Every forward (idle ones included) runs on the batch's device, as do the results: the rollout's
    device, not ``model.device`` (the CPU when parameters are offloaded there).

    Args:
        model: a causal LM with ``eager`` or ``sdpa`` attention.
        batch: prompts (B, P) left-padded, completions (B, T) right-padded, probes.
        choose: ``(entropies (n,), row) -> boundaries`` for one row's ``n`` real tokens.
        temperature: the sampling temperature (entropies and probes use ``logits / temperature``).
        chunk_size: rows per chunk (default: all), to bound the logits and the cache.
        min_chunks: run at least this many chunks, padding with two :func:`idle_forwards` each;
            under ZeRO-3 / FSDP pass the largest :func:`num_chunks` over all processes.
    """
    check_temperature(temperature)
    check_attention(model)
    idle_forwards(model, 2 * (min_chunks - num_chunks(len(batch), chunk_size)), batch.prompt_ids.device)
    if not len(batch):
        empty = torch.zeros(0, batch.completion_ids.shape[1], device=batch.completion_ids.device)
        return TrajectoryProbes(
            empty, [], result_from_log_confidence(torch.zeros(0, 1, device=empty.device), [])
        )
    step = chunk_size or len(batch)
    parts: list[TrajectoryProbes] = []
    for start in range(0, len(batch), step):
        rows = batch[start : start + step]
        trajectory = trajectory_forward(model, rows, temperature)
        lengths = rows.completion_mask.sum(1).tolist()
        on_host = trajectory.entropies.cpu()  # the chooser reads them on the CPU: one copy, not one per row
        cuts = [list(choose(on_host[i, :n], start + i)) for i, n in enumerate(lengths)]
        parts.append(
            TrajectoryProbes(
                trajectory.entropies, cuts, probes_over_cache(model, rows, trajectory, cuts, temperature)
            )
        )
        del trajectory  # its logits and cache (GBs at a large vocabulary) go before the next chunk's forward
    return _concat(parts)


def _concat(parts: Sequence[TrajectoryProbes]) -> TrajectoryProbes:
    """Stack chunk results; confidence columns are NaN-padded to the widest chunk, entropies zero-padded."""
    width = max(p.probes.log_confidence.shape[1] for p in parts)
    length = max(p.entropies.shape[1] for p in parts)

    def pad(x: Tensor, to: int, value: float) -> Tensor:
        return torch.nn.functional.pad(x, (0, to - x.shape[1]), value=value)

    return TrajectoryProbes(
        entropies=torch.cat([pad(p.entropies, length, 0.0) for p in parts]),
        boundaries=[b for p in parts for b in p.boundaries],
        probes=ProbeResult(
            confidence=torch.cat([pad(p.probes.confidence, width, math.nan) for p in parts]),
            log_confidence=torch.cat([pad(p.probes.log_confidence, width, math.nan) for p in parts]),
        ),
    )
