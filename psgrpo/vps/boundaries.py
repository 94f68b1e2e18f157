"""GRPO-VPS segmentation: token entropies and adaptive entropy boundaries (GRPO-VPS, arXiv 2604.20659; docs/design.md).

Pure functions over tensors and lists; the trainer wires them in.

Conventions:

- A **boundary** ``b`` is a completion-token index: the confidence probe goes right *after*
  token ``b``. With boundaries ``b_1 < … < b_{K-1}``, ``b_0 = -1`` and ``b_K = n - 1`` (``n``
  real tokens), segment ``k`` (1-based) covers tokens ``(b_{k-1}, b_k]``; 0-based segment
  index ``j = k - 1``.
- Shapes: ``B`` completions, ``T`` completion positions (right padded), ``V`` vocabulary.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import torch


def token_entropies(logits: torch.Tensor, temperature: float, *, chunk_size: int = 128) -> torch.Tensor:
    """Entropy in nats of ``softmax(logits / temperature)`` at every position.

    Computed in fp32 through ``log_softmax`` (no overflow for large logits; ``-inf`` logits,
    e.g. a masked vocabulary, contribute 0). Each row's positions are processed ``chunk_size`` at a
    time, as views of ``logits``, so the fp32 copy of a large vocabulary never exists for the whole
    batch at once, and a non-contiguous ``logits`` (a slice, as the VPS trajectory passes) is not
    first copied whole (at Qwen's 151,936-word vocabulary that copy was 5 GB per 16 × 512 chunk).

    Args:
        logits: (B, T, V) any float dtype. Use the sampling temperature, as TRL does.
        temperature: > 0.
        chunk_size: positions per chunk (memory only; the result does not depend on it).

    Returns:
        (B, T) fp32 entropies, between 0 and log V.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if logits.dim() != 3:
        raise ValueError(f"logits must be (B, T, V), got shape {tuple(logits.shape)}")
    B, T, _ = logits.shape
    out = torch.empty(B, T, dtype=torch.float32, device=logits.device)
    step = max(1, chunk_size)
    for row in range(B):
        for start in range(0, T, step):
            chunk = logits[row, start : start + step].float() / temperature  # (≤ step, V)
            logp = torch.log_softmax(chunk, dim=-1)
            p = logp.exp()
            plogp = torch.where(p > 0, p * logp, torch.zeros_like(p))
            out[row, start : start + step] = -plogp.sum(-1)
    return out


DEFAULT_ENTROPY_TOLERANCE = 0.01
"""Entropies within 1% of each other rank as equal (``vps_entropy_tolerance``)."""

ENTROPY_FLOOR = 1e-6
"""Nats; entropies below it all rank as equal (a fully certain token)."""


def entropy_levels(entropies: torch.Tensor, tolerance: float) -> torch.Tensor:
    """Entropies quantised onto a logarithmic grid whose cells are ``1 + tolerance`` wide.

    Two entropies in the same cell rank as equal, so float noise (the last bits of a forward
    that differ with the batch shape, the thread count or the CPU's vector width, about 1e-7
    relative) moves a value to another cell only when it lies within that noise of a cell
    edge: for noise ε and tolerance τ, with probability about 2ε/τ per value (2e-5 for 1e-7 and
    1%). Entropies below :data:`ENTROPY_FLOOR` share one cell.

    Args:
        entropies: (n,) float entropies in nats (NaN allowed: it stays NaN).
        tolerance: relative cell width, >= 0; 0 returns the entropies unchanged.

    Returns:
        (n,) float64 levels, monotone non-decreasing in the entropy.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    values = entropies.detach().double().cpu()
    if tolerance == 0:
        return values
    return torch.floor(torch.log(values.clamp(min=ENTROPY_FLOOR)) / math.log1p(tolerance))


def _allowed_range(n: int, min_segment_tokens: int, protect_from: int | None) -> tuple[int, int]:
    """Inclusive range ``[lo, hi]`` of legal cut positions (empty when ``lo > hi``).

    A cut ``b`` leaves ``b + 1`` tokens before it and ``n - 1 - b`` after it, both must be at
    least ``min_segment_tokens``; and ``b < protect_from`` (never inside the final answer).
    """
    lo = min_segment_tokens - 1
    hi = n - 1 - min_segment_tokens
    if protect_from is not None:
        hi = min(hi, protect_from - 1)
    return lo, hi


def _fits(cut: int, chosen: list[int], lo: int, hi: int, min_segment_tokens: int) -> bool:
    """Whether ``cut`` is legal and at least ``min_segment_tokens`` away from every chosen cut."""
    return lo <= cut <= hi and all(abs(cut - other) >= min_segment_tokens for other in chosen)


def _snap(cut: int, snap_sorted: list[int]) -> int | None:
    """The largest snap position ``<= cut`` (None when there is none)."""
    i = bisect.bisect_right(snap_sorted, cut)
    return snap_sorted[i - 1] if i else None


def select_boundaries(
    entropies: torch.Tensor,
    max_segments: int = 4,
    quantile: float = 0.8,
    min_segment_tokens: int = 4,
    protect_from: int | None = None,
    snap_positions: Sequence[int] | None = None,
    jitter: int = 0,
    generator: torch.Generator | None = None,
    tolerance: float = DEFAULT_ENTROPY_TOLERANCE,
) -> list[int]:
    """Adaptive entropy boundaries of ONE completion (GRPO-VPS step 2).

    0. Entropies are ranked through :func:`entropy_levels`: values within ``tolerance``
       (relative) of each other are ties, so the result is a function of the trajectory and
       not of float noise in the forward that produced the entropies.
    1. Candidates: positions with level ``>= τ``, ``τ`` the ``quantile`` of this completion's
       levels (NaN entropies are ignored for ``τ`` and are never candidates).
    2. Greedy by descending level (ties: earlier position first): each candidate is snapped
       (if ``snap_positions`` is given) to the nearest snap position at or before it, then
       kept if it is legal: at least ``min_segment_tokens`` tokens on each side and from every
       kept cut, strictly before ``protect_from``, never the last token. Otherwise it is
       dropped and the next candidate is tried. At most ``max_segments - 1`` cuts are kept.
    3. ``jitter > 0``: every kept cut moves by a uniform integer in ``[-jitter, jitter]``
       drawn from ``generator`` (one draw per cut, in greedy order), is clamped back into the
       legal range, and is dropped if it now lies closer than ``min_segment_tokens`` to a cut
       kept before it. Jittered cuts are not re-snapped (the noise is the point).

    Short completions get fewer or no boundaries (``n < 2·min_segment_tokens`` gives ``[]``).

    Args:
        entropies: (n,) entropies of the completion's real tokens (no padding).
        max_segments: K, the most segments (>= 1); at most K - 1 boundaries.
        quantile: in [0, 1]; higher keeps only the most uncertain positions.
        min_segment_tokens: >= 1, the shortest allowed segment.
        protect_from: index of the first token of the model's own final-answer span (e.g. the
            position of ``<answer>``); no cut at or after it. None: no protection.
        snap_positions: allowed cut positions (e.g. whitespace/newline tokens).
        jitter: max shift of each cut ("noise at step boundaries"); 0 = none.
        generator: source of the jitter (deterministic given its seed).
        tolerance: relative width of an entropy tie (see :func:`entropy_levels`); 0 = raw values.

    Returns:
        Sorted boundary positions ``b_1 < … < b_{K'-1}``, ``K' <= max_segments``.
    """
    if entropies.dim() != 1:
        raise ValueError(f"entropies must be 1-D (one completion), got shape {tuple(entropies.shape)}")
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    if min_segment_tokens < 1:
        raise ValueError(f"min_segment_tokens must be >= 1, got {min_segment_tokens}")
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile}")
    if jitter < 0:
        raise ValueError(f"jitter must be >= 0, got {jitter}")

    n = entropies.numel()
    lo, hi = _allowed_range(n, min_segment_tokens, protect_from)
    values = entropy_levels(entropies, tolerance)
    finite = ~torch.isnan(values)
    if max_segments == 1 or lo > hi or not bool(finite.any()):
        return []

    threshold = torch.nanquantile(values, quantile)
    is_candidate = finite & (values >= threshold)
    level = values.tolist()  # one conversion, not two tensor reads per position (512 per row a step)
    candidates = sorted(torch.nonzero(is_candidate).flatten().tolist(), key=lambda pos: (-level[pos], pos))
    snap_sorted = sorted(set(int(s) for s in snap_positions)) if snap_positions is not None else None

    chosen: list[int] = []
    for pos in candidates:
        if len(chosen) == max_segments - 1:
            break
        cut = _snap(pos, snap_sorted) if snap_sorted is not None else pos
        if cut is not None and _fits(cut, chosen, lo, hi, min_segment_tokens):
            chosen.append(cut)

    if jitter > 0 and chosen:
        shifts = torch.randint(-jitter, jitter + 1, (len(chosen),), generator=generator).tolist()
        jittered: list[int] = []
        for cut, shift in zip(chosen, shifts, strict=True):
            moved = min(max(cut + shift, lo), hi)
            if _fits(moved, jittered, lo, hi, min_segment_tokens):
                jittered.append(moved)
        chosen = jittered
    return sorted(chosen)


def boundaries_from_spans(token_spans: Sequence[tuple[int, int]]) -> list[int]:
    """Boundaries from PS step spans ``(start, end)`` (end exclusive): ``end - 1`` of every span
    but the last, so segments coincide with steps (step markers instead of entropy)."""
    return [end - 1 for _, end in list(token_spans)[:-1]]


def spans_from_boundaries(boundaries: Sequence[int], n_tokens: int) -> list[tuple[int, int]]:
    """Token spans ``(start, end)`` (end exclusive) of the segments that ``boundaries`` cut
    ``n_tokens`` tokens into: ``(b_{k-1} + 1, b_k + 1)`` with ``b_0 = -1`` and ``b_K = n - 1``
    (the inverse of :func:`boundaries_from_spans`); ``[]`` for an empty completion."""
    if n_tokens == 0:
        return []
    starts = [0, *(b + 1 for b in boundaries)]
    return list(zip(starts, [*starts[1:], n_tokens], strict=True))


def answer_marker_token(text: str, offsets: Sequence[tuple[int, int]], marker: str) -> int | None:
    """The token holding the first character of ``marker``'s first occurrence in ``text`` (``<answer>``), or None.
    Use it as ``protect_from``.

    Found in the text, not as the marker's own token ids: a BPE tokenizer merges the tag's edges with its
    neighbours in running text (Qwen2.5 writes ``</reasoning><answer>`` with a ``'><'`` token, ``<answer>\\n``
    with ``'>\\n'``), so the ids of ``<answer>`` alone are often not in the completion at all.

    Args:
        text: the completion's text; ``offsets``: each token's character span in it
            (:func:`psgrpo.ps.segmentation.token_offsets`); ``marker``: non-empty.
    """
    if not marker:
        raise ValueError("the answer marker must not be empty")
    at = text.find(marker)
    if at < 0:
        return None
    return next((i for i, (_, end) in enumerate(offsets) if end > at), None)


def segment_index_from_boundaries(boundaries: list[list[int]], lengths: list[int], T: int) -> torch.Tensor:
    """0-based segment of every completion token.

    Token ``t`` of row ``i`` is in segment ``j`` = number of boundaries ``< t``: tokens after the
    last boundary get ``K_i = len(boundaries[i])``.

    Args:
        boundaries: per row, strictly increasing boundaries in ``[0, lengths[i] - 1)``.
        lengths: (B,) real tokens per row, each <= T.
        T: width of the (right padded) completion tensor.

    Returns:
        (B, T) long, -1 on padding.
    """
    if len(boundaries) != len(lengths):
        raise ValueError(f"{len(boundaries)} boundary lists for {len(lengths)} lengths")
    out = torch.full((len(lengths), T), -1, dtype=torch.long)
    for i, (cuts, n) in enumerate(zip(boundaries, lengths, strict=True)):
        if not 0 <= n <= T:
            raise ValueError(f"row {i}: length {n} is outside [0, {T}]")
        if any(b >= c for b, c in zip(cuts, cuts[1:], strict=False)) or any(not 0 <= b < n - 1 for b in cuts):
            raise ValueError(f"row {i}: boundaries {cuts} must increase strictly within [0, {n - 1})")
        positions = torch.arange(n)
        out[i, :n] = torch.searchsorted(torch.tensor(cuts, dtype=torch.long), positions, right=False)
    return out
