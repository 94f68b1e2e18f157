"""GRPO-VPS confidence probes: the policy's probability of the gold answer after each segment boundary.

For a trajectory (prompt ``x``, completion ``z``) with segment boundaries ``b_1 < … < b_K``
(completion-token indices) and a probe ``y*`` (answer-template opening + gold answer + closing
tag, as token ids), the confidence after boundary ``k`` is (DESIGN.md §2, GRPO-VPS point 3)::

    C_k = Π_{j ≥ score_from} p_θ(y*_j | x, z[: b_k + 1], y*_<j)        (logits / temperature)

and ``C_0`` is the same product with the probe right after the prompt. Only the probe tokens from
``score_from`` on are scored: by default the gold answer and the closing tag, *given* the template
opening (``</reasoning>\\n<answer>``).

Two implementations with the same inputs and output:

* :func:`naive_confidence` — the reference: one separate, unpadded forward per (row, boundary).
* :func:`packed_confidence` — one forward per batch of rows (DESIGN.md §2, point 6). Each row is
  packed as ``[prompt, completion up to the last boundary, probe copy for C_0, probe copy for b_1,
  …]`` with a custom 4-D attention mask (a probe copy sees its own prefix and, causally, itself;
  nothing else) and position ids that continue each copy's prefix. The prefix is run once; every
  probe costs only its own few tokens.

Inputs come as a :class:`ProbeBatch` and follow TRL: prompts left-padded with ``prompt_mask``,
completions right-padded with ``completion_mask`` (the real tokens of a completion are a prefix of
its row); the boundaries are passed on their own (the cached path chooses them itself).

Supported attention implementations: ``eager`` and ``sdpa``. Both take the mask as the additive
float tensor built here (see :func:`packed_attention_mask`); ``transformers`` passes any 4-D mask
through unchanged (``masking_utils._preprocess_mask_arguments``), so it is never replaced by a
causal one. Flash-attention kernels cannot take a dense mask and are refused with a clear error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
from torch import Tensor

SUPPORTED_ATTENTION = ("eager", "sdpa")
"""Attention implementations that honour a dense 4-D additive mask."""

TRAJECTORY, PADDING = -1, -2
"""Segment ids of packed tokens that are not probe copies (probe copy ``k`` has segment id ``k``)."""

LOG_PROB_FLOOR = -1e4
"""Floor of one token's log-prob (only reached with ``-inf`` logits), so sums stay finite."""

MIN_CONFIDENCE = torch.finfo(torch.float32).tiny
"""Floor of ``confidence`` (about 1.2e-38): a real entry is never exactly 0, however unlikely the answer."""


@dataclass
class ProbeResult:
    """Confidence of the gold answer at C_0 (after the prompt) and after each boundary.

    Attributes:
        confidence: (B, K_max + 1) float32 probabilities in (0, 1]; column ``k`` is ``C_k``. Rows
            with fewer than ``K_max`` boundaries are padded with NaN (the only NaNs produced).
        log_confidence: (B, K_max + 1) float32, the sum of the scored probe tokens' log-probs
            (finite, ≤ 0); NaN in the same padding entries.
    """

    confidence: Tensor
    log_confidence: Tensor


@dataclass(frozen=True)
class ProbeBatch:
    """The rows to probe, padded as TRL has them; checked by :func:`rows_from_batch` when probed.

    Attributes:
        prompt_ids, prompt_mask: (B, P), left-padded.
        completion_ids, completion_mask: (B, T), right-padded.
        probe_ids, score_from: per row, from :func:`build_probe_ids`.
    """

    prompt_ids: Tensor
    prompt_mask: Tensor
    completion_ids: Tensor
    completion_mask: Tensor
    probe_ids: Sequence[Sequence[int]]
    score_from: Sequence[int]

    def __post_init__(self) -> None:
        for ids, mask in (("prompt_ids", "prompt_mask"), ("completion_ids", "completion_mask")):
            got, want = tuple(getattr(self, mask).shape), tuple(getattr(self, ids).shape)
            if got != want:
                raise ValueError(f"{mask} has shape {got}, {ids} has shape {want}; they must match")
        if self.completion_ids.shape[0] != self.prompt_ids.shape[0]:
            raise ValueError(
                f"completion_ids has {self.completion_ids.shape[0]} rows, prompt_ids has "
                f"{self.prompt_ids.shape[0]}; each completion needs its prompt"
            )

    @classmethod
    def from_lists(
        cls,
        prompts: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        probe_ids: Sequence[Sequence[int]],
        score_from: Sequence[int],
        device: torch.device | str | None = None,
    ) -> ProbeBatch:
        """Pad unpadded token-id lists (prompts on the left, completions on the right, with id 0)."""
        return cls(
            prompt_ids=_pad(prompts, 0, device, left=True),
            prompt_mask=_pad([[1] * len(p) for p in prompts], 0, device, left=True),
            completion_ids=_pad(completions, 0, device),
            completion_mask=_pad([[1] * len(c) for c in completions], 0, device),
            probe_ids=probe_ids,
            score_from=score_from,
        )

    def __len__(self) -> int:
        return self.prompt_ids.shape[0]

    def __getitem__(self, rows: slice) -> ProbeBatch:
        """The batch of rows ``rows`` (a slice), e.g. one chunk."""
        return ProbeBatch(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
            self.probe_ids[rows],
            self.score_from[rows],
        )


@dataclass(frozen=True)
class ProbeRow:
    """One row of a :class:`ProbeBatch`, unpadded, with its boundaries: what the probes compute from."""

    prompt: list[int]
    completion: list[int]
    boundaries: list[int]
    probe: list[int]
    score_from: int

    def prefix_lengths(self) -> list[int]:
        """Lengths of the prefixes that precede each probe copy: C_0 first, then one per boundary."""
        return [len(self.prompt)] + [len(self.prompt) + b + 1 for b in self.boundaries]

    def packed_length(self) -> int:
        """Tokens of the packed row: the trajectory up to the last boundary, then ``K + 1`` probe copies."""
        prefixes = self.prefix_lengths()
        return prefixes[-1] + len(prefixes) * len(self.probe)


# --------------------------------------------------------------------------------------------
# Probe construction and input checks
# --------------------------------------------------------------------------------------------


def build_probe_ids(
    tokenizer,
    answers: Sequence[str | None],
    open_text: str = "</reasoning>\n<answer>",
    close_text: str = "</answer>",
) -> tuple[list[list[int]], list[int]]:
    """Probe ids per row, built at token-id level, and the index from which each probe is scored.

    Each probe is ``ids(open_text) + ids(answer) + ids(close_text)``, every part tokenized on its
    own with ``add_special_tokens=False`` (so the answer's ids do not depend on its neighbours);
    ``score_from`` is ``len(ids(open_text))``: C scores the answer and the closing tag given the
    template opening.

    Raises:
        ValueError: naming the row, when an answer is missing or blank, or tokenizes to nothing.
    """
    open_ids = tokenizer(open_text, add_special_tokens=False)["input_ids"] if open_text else []
    close_ids = tokenizer(close_text, add_special_tokens=False)["input_ids"] if close_text else []
    probes, score_from = [], []
    for row, answer in enumerate(answers):
        if answer is None or not str(answer).strip():
            raise ValueError(
                f"row {row}: gold answer is missing or empty ({answer!r}); cannot build a VPS probe"
            )
        answer_ids = tokenizer(str(answer), add_special_tokens=False)["input_ids"]
        if not answer_ids:
            raise ValueError(
                f"row {row}: gold answer {answer!r} tokenizes to no tokens; cannot build a VPS probe"
            )
        probes.append([*open_ids, *answer_ids, *close_ids])
        score_from.append(len(open_ids))
    return probes, score_from


def check_probe_fits(
    prompt_lengths: Sequence[int],
    completion_lengths: Sequence[int],
    probe_lengths: Sequence[int],
    max_positions: int | None,
) -> None:
    """Check that prompt + completion + probe fits the model's context (``max_position_embeddings``).

    ``max_positions=None`` means no limit.

    Raises:
        ValueError: naming the first row whose probe would run past the last position.
    """
    if max_positions is None:
        return
    for row, (p, t, m) in enumerate(zip(prompt_lengths, completion_lengths, probe_lengths, strict=True)):
        if p + t + m > max_positions:
            raise ValueError(
                f"row {row}: prompt ({p}) + completion ({t}) + probe ({m}) = {p + t + m} tokens exceed the "
                f"model's context of {max_positions} positions; shorten the completion or the probe"
            )


def _real_tokens(ids: Tensor, mask: Tensor, row: int, side: str) -> list[int]:
    """The unpadded tokens of one row; the mask must be one contiguous run of ones."""
    keep = mask.bool()
    n = int(keep.sum())
    run = keep[-n:] if side == "left" else keep[:n]
    if n and not bool(run.all()):
        raise ValueError(f"row {row}: the {side}-padded mask is not one contiguous run of real tokens")
    return ids[keep].tolist()


def _pad(
    sequences: Sequence[Sequence[int]], value: int, device: torch.device | str | None, left: bool = False
) -> Tensor:
    """Pad int lists with ``value`` (on the right, or the left) into one (N, max_len) long tensor."""
    width = max(len(s) for s in sequences)
    padded = []
    for s in sequences:
        fill = [value] * (width - len(s))
        padded.append([*fill, *s] if left else [*s, *fill])
    return torch.tensor(padded, dtype=torch.long, device=device)


def rows_from_batch(
    batch: ProbeBatch, boundaries: Sequence[Sequence[int]], max_positions: int | None = None
) -> list[ProbeRow]:
    """Unpad a :class:`ProbeBatch` into :class:`ProbeRow` and check every input.

    ``boundaries``: per row, strictly increasing completion-token indices (possibly none);
    ``max_positions``: the model's context (``None``: no limit).

    Raises:
        ValueError: naming the row, for mismatched batch sizes, boundaries that are not strictly
            increasing within the completion, an empty probe, ``score_from`` outside the probe, a
            probe scored from its first token with an empty prompt, or a probe past the context.
    """
    size = len(batch)
    per_row = (("boundaries", boundaries), ("probe_ids", batch.probe_ids), ("score_from", batch.score_from))
    for name, value in per_row:
        if len(value) != size:
            raise ValueError(f"{name} has {len(value)} rows, the batch has {size}")
    rows = []
    for i in range(size):
        prompt = _real_tokens(batch.prompt_ids[i], batch.prompt_mask[i], i, "left")
        completion = _real_tokens(batch.completion_ids[i], batch.completion_mask[i], i, "right")
        cuts = [int(b) for b in boundaries[i]]
        probe = [int(t) for t in batch.probe_ids[i]]
        start = int(batch.score_from[i])
        if any(b >= c for b, c in pairwise(cuts)):
            raise ValueError(f"row {i}: boundaries {cuts} are not strictly increasing")
        if cuts and not 0 <= cuts[0] <= cuts[-1] < len(completion):
            raise ValueError(
                f"row {i}: boundaries {cuts} fall outside the completion of {len(completion)} tokens"
            )
        if not probe:
            raise ValueError(f"row {i}: empty probe")
        if not 0 <= start < len(probe):
            raise ValueError(
                f"row {i}: score_from={start} must index a token of the probe ({len(probe)} tokens)"
            )
        if start == 0 and not prompt:
            raise ValueError(
                f"row {i}: empty prompt, so the probe's first token has no context to be scored from"
            )
        rows.append(ProbeRow(prompt, completion, cuts, probe, start))
    check_probe_fits(
        [len(r.prompt) for r in rows],
        [r.boundaries[-1] + 1 if r.boundaries else 0 for r in rows],
        [len(r.probe) for r in rows],
        max_positions,
    )
    return rows


def _max_positions(model) -> int | None:
    return getattr(model.config, "max_position_embeddings", None)


def _check_attention(model) -> None:
    """Refuse models whose attention would not honour (or would mis-read) the dense 4-D mask."""
    config = model.config
    implementation = getattr(config, "_attn_implementation", None)
    if implementation not in SUPPORTED_ATTENTION:
        raise ValueError(
            f"packed VPS probes need attn_implementation in {SUPPORTED_ATTENTION}, the model uses "
            f"{implementation!r}; load it with attn_implementation='sdpa' or use naive_confidence"
        )
    if "sliding_attention" in (getattr(config, "layer_types", None) or []):
        raise ValueError(
            "packed VPS probes do not support sliding-window attention layers (the mask ignores the window)"
        )


# --------------------------------------------------------------------------------------------
# Shared scoring
# --------------------------------------------------------------------------------------------


def token_log_probs(logits: Tensor, targets: Tensor, temperature: float) -> Tensor:
    """log p(target) under ``softmax(logits / temperature)``, in fp32, clamped to be finite and ≤ 0."""
    log_probs = torch.log_softmax(logits.float() / temperature, dim=-1)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked.clamp(min=LOG_PROB_FLOOR, max=0.0)


def _result(log_confidence: Tensor, num_probes: Sequence[int]) -> ProbeResult:
    """Fill NaN past each row's probes and exponentiate (floored at :data:`MIN_CONFIDENCE`)."""
    columns = torch.arange(log_confidence.shape[1], device=log_confidence.device)
    counts = torch.tensor(list(num_probes), dtype=torch.long, device=log_confidence.device)
    padding = columns[None, :] >= counts[:, None]
    log_confidence = log_confidence.masked_fill(padding, math.nan)
    confidence = log_confidence.exp().clamp(min=MIN_CONFIDENCE)
    return ProbeResult(confidence=confidence, log_confidence=log_confidence)


def _check_temperature(temperature: float) -> None:
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")


# --------------------------------------------------------------------------------------------
# Rank symmetry: the same number of forwards on every process
# --------------------------------------------------------------------------------------------


def num_chunks(num_rows: int, chunk_size: int | None) -> int:
    """Forward chunks a probe pass runs over ``num_rows`` rows: ``ceil(num_rows / chunk_size)``.

    ``chunk_size=None`` means one chunk of all rows; no rows means no chunk.
    """
    if num_rows == 0:
        return 0
    return 1 if chunk_size is None else -(-num_rows // chunk_size)


@torch.no_grad()
def idle_forwards(model, count: int) -> None:
    """Run ``count`` one-token forwards of ``model`` and discard them.

    With sharded parameters (DeepSpeed ZeRO-3, FSDP) each forward all-gathers the weights, a
    collective every process must join. A process with fewer probe chunks than the others
    (``min_chunks`` of :func:`packed_confidence` / :func:`cached_confidence`) runs these so
    that all processes run the same number of forwards; otherwise the others would hang.
    """
    token = torch.zeros(1, 1, dtype=torch.long, device=model.device)
    for _ in range(count):
        model(input_ids=token, use_cache=False, logits_to_keep=1)


# --------------------------------------------------------------------------------------------
# Reference: one forward per (row, boundary)
# --------------------------------------------------------------------------------------------


@torch.no_grad()
def naive_confidence(
    model, batch: ProbeBatch, boundaries: Sequence[Sequence[int]], temperature: float = 1.0
) -> ProbeResult:
    """Reference confidences: for every row and every prefix (C_0 included) run
    ``prompt + completion[: b_k + 1] + probe`` unpadded through ``model`` on its own.

    Same arguments as :func:`packed_confidence`. Slow (``Σ_i (K_i + 1)`` full forwards) and
    obviously right.
    """
    _check_temperature(temperature)
    rows = rows_from_batch(batch, boundaries, _max_positions(model))
    device = model.device
    num_probes = [len(r.boundaries) + 1 for r in rows]
    log_confidence = torch.zeros(len(rows), max(num_probes, default=1), device=device)
    for i, row in enumerate(rows):
        for k, prefix in enumerate(row.prefix_lengths()):
            tokens = row.prompt + row.completion[: prefix - len(row.prompt)] + row.probe
            logits = model(input_ids=torch.tensor([tokens], device=device), use_cache=False).logits[0]
            scored = torch.arange(row.score_from, len(row.probe), device=device)
            targets = torch.tensor(row.probe, device=device)[scored]
            log_confidence[i, k] = token_log_probs(logits[prefix + scored - 1], targets, temperature).sum()
    return _result(log_confidence, num_probes)


# --------------------------------------------------------------------------------------------
# Packed: one forward per batch of rows
# --------------------------------------------------------------------------------------------


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


def packed_attention_mask(segment: Tensor, visible: Tensor, dtype: torch.dtype) -> Tensor:
    """The (B, 1, L, L) additive float mask of packed rows: 0 where a query may attend, dtype-min elsewhere.

    A query attends to a key at or before it (causal) that is either in the same segment
    (trajectory among itself, a probe copy among itself, padding among itself) or a trajectory
    token inside the query's visible prefix. Every query row keeps at least itself, so no softmax
    row is fully masked.

    Why additive float and not bool: Qwen2's eager attention adds the mask to the scores
    (``attn_weights + attention_mask``), where a bool mask would silently add 0/1; SDPA accepts
    both. ``transformers`` returns any 4-D mask as-is instead of building a causal one.
    """
    length = segment.shape[1]
    index = torch.arange(length, device=segment.device)
    causal = index[None, :] <= index[:, None]
    same_segment = segment[:, :, None] == segment[:, None, :]
    in_prefix = (segment[:, None, :] == TRAJECTORY) & (index[None, None, :] < visible[:, :, None])
    keep = causal[None] & (same_segment | in_prefix)
    mask = torch.zeros(keep.shape, dtype=dtype, device=segment.device)
    return mask.masked_fill_(~keep, torch.finfo(dtype).min)[:, None]


def _packed_chunk(model, rows: Sequence[ProbeRow], temperature: float, width: int) -> Tensor:
    """Sum of scored log-probs (len(rows), width) for one chunk of rows, from one forward."""
    device = model.device
    packed = [pack_row(r) for r in rows]
    input_ids = _pad([p.input_ids for p in packed], 0, device)
    position_ids = _pad([p.position_ids for p in packed], 0, device)
    segment = _pad([p.segment for p in packed], PADDING, device)
    visible = _pad([p.visible for p in packed], 0, device)
    score_index = _pad([p.score_index for p in packed], 0, device)
    score_target = _pad([p.score_target for p in packed], 0, device)
    score_copy = _pad([p.score_copy for p in packed], width, device)  # padding lands in a spare column

    mask = packed_attention_mask(segment, visible, model.dtype)
    logits = model(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        logits_to_keep=score_index,  # (B, N) integer positions: the lm_head runs only where probes are scored
        use_cache=False,
    ).logits
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

    Each row becomes ``[prompt, completion[: b_K + 1], probe copy for C_0, copies for b_1 … b_K]``;
    rows are right-padded to a common length; a 4-D mask (:func:`packed_attention_mask`) and
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
    _check_temperature(temperature)
    _check_attention(model)
    rows = rows_from_batch(batch, boundaries, _max_positions(model))
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    idle_forwards(model, min_chunks - num_chunks(len(rows), chunk_size))
    if not rows:
        return _result(torch.zeros(0, 1, device=model.device), [])
    chunk_size = chunk_size or len(rows)
    num_probes = [len(r.boundaries) + 1 for r in rows]
    width = max(num_probes)
    order = sorted(range(len(rows)), key=lambda i: rows[i].packed_length())  # chunks of similar lengths
    log_confidence = torch.empty(len(rows), width, device=model.device)
    for start in range(0, len(rows), chunk_size):
        chunk = order[start : start + chunk_size]
        log_confidence[chunk] = _packed_chunk(model, [rows[i] for i in chunk], temperature, width)
    return _result(log_confidence, num_probes)


# --------------------------------------------------------------------------------------------
# Cached: the trajectory forward that gives the entropies also serves the probes (KV cache)
# --------------------------------------------------------------------------------------------


@dataclass
class TrajectoryProbes:
    """What one cached VPS pass returns for a batch.

    Attributes:
        entropies: (B, T) entropies in nats at the temperature, 0 on padding.
        boundaries: per row, the boundaries ``choose_boundaries`` picked.
        probes: the confidences, as :func:`packed_confidence` returns them.
    """

    entropies: Tensor
    boundaries: list[list[int]]
    probes: ProbeResult


def _probe_queries(
    rows: Sequence[ProbeRow], prompt_width: int, cache_length: int, device: torch.device, dtype: torch.dtype
) -> tuple[Tensor, Tensor, Tensor, list[list[tuple[int, int, int]]]]:
    """Probe tokens to run over a trajectory KV cache, with their positions and 4-D mask.

    The cache holds ``[left-padded prompt (P), right-padded completion (T)]`` per row. Probe copy
    ``k`` of row ``i`` may see cache entries ``[P - len(prompt_i), P + b_k]`` (``P - 1`` for C_0)
    and, causally, its own tokens. Returns ``input_ids`` (B, Q), ``position_ids`` (B, Q), the
    additive mask (B, 1, Q, cache_length + Q), and per row the scored tokens as
    ``(query_index or -1 - cache_index, target, copy)``: a negative index means the token is
    predicted by the trajectory's own logits at that cache entry (a probe scored from its first
    token).
    """
    queries = [[tok for _ in r.prefix_lengths() for tok in r.probe] for r in rows]
    width = max(len(q) for q in queries)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    position_ids = torch.zeros(len(rows), width, dtype=torch.long)
    keep = torch.zeros(len(rows), width, cache_length + width, dtype=torch.bool)
    scored: list[list[tuple[int, int, int]]] = []
    for i, row in enumerate(rows):
        m, first = len(row.probe), prompt_width - len(row.prompt)
        input_ids[i, : len(queries[i])] = torch.tensor(queries[i])
        own = torch.tril(torch.ones(m, m, dtype=torch.bool))  # a copy attends causally to itself
        row_scored = []
        for k, prefix in enumerate(row.prefix_lengths()):
            start, last_visible = k * m, first + prefix - 1  # cache index of the prefix's last token
            position_ids[i, start : start + m] = torch.arange(prefix, prefix + m)
            keep[i, start : start + m, first : last_visible + 1] = True
            keep[i, start : start + m, cache_length + start : cache_length + start + m] = own
            for j in range(row.score_from, m):
                row_scored.append((-1 - last_visible if j == 0 else start + j - 1, row.probe[j], k))
        padding = torch.arange(len(queries[i]), width)  # padding queries attend to themselves only
        keep[i, padding, cache_length + padding] = True
        scored.append(row_scored)
    mask = torch.zeros(keep.shape, dtype=dtype).masked_fill_(~keep, torch.finfo(dtype).min)[:, None]
    return input_ids.to(device), position_ids.to(device), mask.to(device), scored


@torch.no_grad()
def cached_confidence(
    model,
    batch: ProbeBatch,
    choose_boundaries,
    temperature: float = 1.0,
    chunk_size: int | None = None,
    min_chunks: int = 0,
) -> TrajectoryProbes:
    """One trajectory forward (with KV cache) + one small forward over the probe tokens.

    ``batch`` is as for :func:`packed_confidence` (prompts (B, P), completions (B, T)). The
    trajectory forward gives the completion's entropies at ``temperature``;
    ``choose_boundaries(entropies (B, T), lengths, row_offset) -> list[list[int]]`` turns them
    into boundaries (``row_offset``: index of the first row in the whole batch, for chunks); then
    every probe copy runs over the cached trajectory with a 4-D mask and continued positions, so
    no prefix is ever recomputed. Same confidences as :func:`naive_confidence` (tested); the cost
    is one trajectory forward plus ``Σ_k len(probe)`` tokens per row. ``chunk_size`` rows at a
    time bound the memory of the logits and the cache. Each chunk runs two forwards; with
    ``min_chunks`` (see :func:`packed_confidence`) missing chunks are padded with two
    :func:`idle_forwards` each.
    """
    from psgrpo.vps_segments import token_entropies

    idle_forwards(model, 2 * (min_chunks - num_chunks(len(batch), chunk_size)))
    if chunk_size is not None and len(batch) > chunk_size:
        parts = [
            cached_confidence(
                model,
                batch[i : i + chunk_size],
                lambda entropies, lengths, offset, start=i: choose_boundaries(
                    entropies, lengths, start + offset
                ),
                temperature,
            )
            for i in range(0, len(batch), chunk_size)
        ]
        return _concat(parts)
    _check_temperature(temperature)
    _check_attention(model)
    input_ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
    attention = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    prompt_width, width = batch.prompt_ids.shape[1], batch.completion_ids.shape[1]
    out = model(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=width + 1,
    )
    logits = out.logits[:, :-1] if width else out.logits[:, :0]  # (B, T, V): logits[t] predicts completion t
    mask = batch.completion_mask.bool()
    entropies = token_entropies(logits, temperature, chunk_size=4096) * mask
    lengths = batch.completion_mask.sum(1).tolist()
    boundaries = [list(b) for b in choose_boundaries(entropies, lengths, 0)]
    rows = rows_from_batch(batch, boundaries, _max_positions(model))
    cache_length = input_ids.shape[1]
    probe_input, probe_positions, probe_mask, scored = _probe_queries(
        rows, prompt_width, cache_length, input_ids.device, model.dtype
    )
    probe_logits = model(
        input_ids=probe_input,
        attention_mask=probe_mask,
        position_ids=probe_positions,
        cache=out.cache if hasattr(out, "cache") else out.past_key_values,
        use_cache=True,
        cache_position=torch.arange(
            cache_length, cache_length + probe_input.shape[1], device=input_ids.device
        ),
    ).logits
    # Every scored token's logits in one gather: trajectory logits (cache entries P-1 …), then probe logits.
    # A negative index -1-x means the token follows cache entry x, i.e. trajectory logits.
    both = torch.cat([out.logits, probe_logits], dim=1)
    device = input_ids.device
    flat = [(i, index, target, k) for i, row_scored in enumerate(scored) for index, target, k in row_scored]
    row_index = torch.tensor([f[0] for f in flat], device=device)
    offset = out.logits.shape[1]
    where = torch.tensor(
        [offset + f[1] if f[1] >= 0 else -1 - f[1] - (prompt_width - 1) for f in flat], device=device
    )
    scores = token_log_probs(
        both[row_index, where], torch.tensor([f[2] for f in flat], device=device), temperature
    )
    width_k = max(len(r.boundaries) + 1 for r in rows)
    slot = row_index * width_k + torch.tensor([f[3] for f in flat], device=device)
    log_confidence = torch.zeros(len(rows) * width_k, device=device).index_add_(0, slot, scores)
    log_confidence = log_confidence.view(len(rows), width_k)
    return TrajectoryProbes(
        entropies, boundaries, _result(log_confidence, [len(r.boundaries) + 1 for r in rows])
    )


def _concat(parts: Sequence[TrajectoryProbes]) -> TrajectoryProbes:
    """Stack chunk results; confidence columns are NaN-padded to the widest chunk."""
    width = max(p.probes.log_confidence.shape[1] for p in parts)

    def pad(x: Tensor) -> Tensor:
        return torch.nn.functional.pad(x, (0, width - x.shape[1]), value=math.nan)

    return TrajectoryProbes(
        entropies=torch.cat([p.entropies for p in parts]),
        boundaries=[b for p in parts for b in p.boundaries],
        probes=ProbeResult(
            confidence=torch.cat([pad(p.probes.confidence) for p in parts]),
            log_confidence=torch.cat([pad(p.probes.log_confidence) for p in parts]),
        ),
    )
