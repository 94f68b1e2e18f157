"""GRPO-VPS probes packed into one forward per chunk of rows (no KV cache needed).

Each row becomes ``[prompt, completion up to the last boundary, probe copy for C_0, probe copy for
b_1, …]``; a 4-D attention mask (a probe copy sees its own prefix and, causally, itself; nothing
else) and position ids that continue each copy's prefix make every copy see exactly what it would
see appended to its prefix. The prefix runs once; every probe costs only its own tokens. Used with
marker boundaries, which are known before any forward; entropy boundaries use
:mod:`psgrpo.vps.cached`, whose trajectory forward gives the entropies too. Same result as
:func:`psgrpo.vps.probes.naive_confidence` (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from psgrpo.vps.probes import (
    PADDING,
    TRAJECTORY,
    ProbeBatch,
    ProbeResult,
    ProbeRow,
    attention_mask_for,
    check_attention,
    check_temperature,
    idle_forwards,
    logits_only_at,
    model_max_positions,
    num_chunks,
    pad_ids,
    result_from_log_confidence,
    rows_from_batch,
    token_log_probs,
)


@dataclass
class PackedRow:
    """One row packed as ``[trajectory, probe copy 0, …, probe copy K]``, before padding.

    Attributes:
        input_ids, position_ids: per packed token; a probe copy's positions continue its prefix.
        segment: :data:`TRAJECTORY` or the probe copy's index ``k``.
        visible: for a probe token, how many leading trajectory tokens it may attend to (its prefix);
            0 for trajectory tokens (they attend causally within the trajectory segment).
        score_index, score_target, score_copy: for each scored probe token, the packed index whose
            logits predict it, the token id, and the probe copy it belongs to.
    """

    input_ids: list[int]
    position_ids: list[int]
    segment: list[int]
    visible: list[int]
    score_index: list[int]
    score_target: list[int]
    score_copy: list[int]


def pack_row(row: ProbeRow) -> PackedRow:
    """Pack one trajectory and its ``K + 1`` probe copies into one sequence.

    The trajectory is the prompt and the completion up to the last boundary (no probe sees any
    later token). A probe token ``j`` of copy ``k`` is predicted by the logits of the token before
    it: the copy's previous token, or for ``j = 0`` the last token of the prefix (in the trajectory).
    """
    prefixes = row.prefix_lengths()
    trajectory_length = prefixes[-1]
    trajectory = row.prompt + row.completion[: trajectory_length - len(row.prompt)]
    packed = PackedRow(
        input_ids=list(trajectory),
        position_ids=list(range(trajectory_length)),
        segment=[TRAJECTORY] * trajectory_length,
        visible=[0] * trajectory_length,
        score_index=[],
        score_target=[],
        score_copy=[],
    )
    m = len(row.probe)
    for k, prefix in enumerate(prefixes):
        start = len(packed.input_ids)
        packed.input_ids += row.probe
        packed.position_ids += range(prefix, prefix + m)
        packed.segment += [k] * m
        packed.visible += [prefix] * m
        for j in range(row.score_from, m):
            packed.score_index.append(prefix - 1 if j == 0 else start + j - 1)
            packed.score_target.append(row.probe[j])
            packed.score_copy.append(k)
    return packed


def packed_keep(segment: Tensor, visible: Tensor) -> Tensor:
    """Which key each query of packed rows may attend to: (B, L, L) bool, True where it may.

    A query attends to a key at or before it (causal) that is either in the same segment
    (trajectory among itself, a probe copy among itself, padding among itself) or a trajectory
    token inside the query's visible prefix. Every query row keeps at least itself, so no softmax
    row is fully masked. :func:`~psgrpo.vps.probes.attention_mask_for` makes the model's 4-D mask of it.
    """
    length = segment.shape[1]
    index = torch.arange(length, device=segment.device)
    causal = index[None, :] <= index[:, None]
    same_segment = segment[:, :, None] == segment[:, None, :]
    in_prefix = (segment[:, None, :] == TRAJECTORY) & (index[None, None, :] < visible[:, :, None])
    return causal[None] & (same_segment | in_prefix)


def _packed_chunk(
    model, rows: Sequence[ProbeRow], temperature: float, width: int, device: torch.device
) -> Tensor:
    """Sum of scored log-probs (len(rows), width) for one chunk of rows, from one forward on ``device``."""
    packed = [pack_row(r) for r in rows]
    input_ids = pad_ids([p.input_ids for p in packed], 0, device)
    position_ids = pad_ids([p.position_ids for p in packed], 0, device)
    segment = pad_ids([p.segment for p in packed], PADDING, device)
    visible = pad_ids([p.visible for p in packed], 0, device)
    score_index = pad_ids([p.score_index for p in packed], 0, device)
    score_target = pad_ids([p.score_target for p in packed], 0, device)
    score_copy = pad_ids([p.score_copy for p in packed], width, device)  # padding lands in a spare column

    mask = attention_mask_for(model, packed_keep(segment, visible))  # (B, 1, L, L)
    with logits_only_at(
        model, score_index
    ):  # (B, N) positions: the lm_head runs only where probes are scored
        logits = model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            logits_to_keep=0,
            use_cache=False,
        ).logits  # (B, N, V)
    scores = token_log_probs(logits, score_target, temperature)
    sums = torch.zeros(len(rows), width + 1, device=device)
    return sums.scatter_add_(1, score_copy, scores)[:, :width]


@torch.no_grad()
def packed_confidence(
    model,
    batch: ProbeBatch,
    boundaries: Sequence[Sequence[int]],
    temperature: float = 1.0,
    chunk_size: int | None = None,
    min_chunks: int = 0,
) -> ProbeResult:
    """Confidences from one packed forward per chunk of rows (same result as :func:`naive_confidence`).

    The forwards and the result are on the batch's device (the rollout's), not ``model.device``, which
    is the CPU when parameters are offloaded there.

    Each row becomes ``[prompt, completion[: b_K + 1], probe copy for C_0, copies for b_1 … b_K]``;
    rows are right-padded to a common length; a 4-D mask (:func:`packed_keep`) and
    continued position ids make each probe copy see exactly what it would see appended to its
    prefix. Cost per row: ``len(prompt) + b_K + 1 + (K + 1) · len(probe)`` tokens, once.

    Args:
        model: a causal LM with ``attn_implementation`` ``"eager"`` or ``"sdpa"``, in the mode the
            caller wants (no dropout for deterministic probes).
        batch: the B rows: prompts (B, P) left-padded, completions (B, T) right-padded, and the
            probes (see :class:`ProbeBatch`).
        boundaries: per row, strictly increasing completion-token indices (possibly none).
        temperature: the sampling temperature; logits are divided by it.
        chunk_size: rows per forward (default: all at once), to bound the (B, 1, L, L) mask and the
            activations. Rows are chunked in order of packed length, so a chunk pads little; the
            result keeps the input's row order.
        min_chunks: run at least this many forwards, padding with :func:`idle_forwards`. Under
            ZeRO-3 / FSDP pass the largest :func:`num_chunks` over all processes.

    Raises:
        ValueError: for invalid inputs (see :func:`rows_from_batch`), an unsupported attention
            implementation, or a non-positive ``temperature`` / ``chunk_size``.
    """
    check_temperature(temperature)
    check_attention(model)
    rows = rows_from_batch(batch, boundaries, model_max_positions(model))
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    # the rollout's device, not the parameters': with CPU-offloaded parameters those are on the CPU
    device = batch.prompt_ids.device
    idle_forwards(model, min_chunks - num_chunks(len(rows), chunk_size), device)
    if not rows:
        return result_from_log_confidence(torch.zeros(0, 1, device=device), [])
    chunk_size = chunk_size or len(rows)
    num_probes = [len(r.boundaries) + 1 for r in rows]
    width = max(num_probes)
    order = sorted(range(len(rows)), key=lambda i: rows[i].packed_length())  # chunks of similar lengths
    log_confidence = torch.empty(len(rows), width, device=device)
    for start in range(0, len(rows), chunk_size):
        chunk = order[start : start + chunk_size]
        log_confidence[chunk] = _packed_chunk(model, [rows[i] for i in chunk], temperature, width, device)
    return result_from_log_confidence(log_confidence, num_probes)
