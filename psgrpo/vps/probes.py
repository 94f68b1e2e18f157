"""GRPO-VPS confidence probes: the policy's probability of the gold answer after each segment boundary.

For a trajectory (prompt ``x``, completion ``z``) with segment boundaries ``b_1 < … < b_K``
(completion-token indices) and a probe ``y*`` (answer-template opening + gold answer + closing
tag, as token ids), the confidence after boundary ``k`` is (GRPO-VPS, arXiv 2604.20659; docs/design.md)::

    C_k = Π_{j ≥ score_from} p_θ(y*_j | x, z[: b_k + 1], y*_<j)        (logits / temperature)

and ``C_0`` is the same product with the probe right after the prompt. Only the probe tokens from
``score_from`` on are scored: by default the gold answer and the closing tag, *given* the template
opening (``</reasoning>\\n<answer>``).

This module holds what every implementation shares — the inputs (:class:`ProbeBatch`, probe ids,
checks), the scoring, rank symmetry under sharding — and the reference, :func:`naive_confidence`:
one separate, unpadded forward per (row, boundary), slow and obviously right. The fast paths,
tested equal to it:

* :mod:`psgrpo.vps.packed` — one forward per chunk of rows, prefixes shared through a 4-D mask
  (boundaries known in advance: step markers);
* :mod:`psgrpo.vps.cached` — one trajectory forward gives the entropies and a KV cache, then the
  probe copies run over the cache (entropy boundaries).

Inputs follow TRL: prompts left-padded with ``prompt_mask``, completions right-padded with
``completion_mask`` (the real tokens of a completion are a prefix of its row).

Supported attention implementations: ``eager`` (the 4-D mask as an additive float tensor) and
``sdpa`` (as a bool tensor, :func:`attention_mask_for`); ``transformers`` passes any 4-D mask through unchanged
(``masking_utils._preprocess_mask_arguments``), so it is never replaced by a causal one.
Flash-attention kernels cannot take a dense mask and are refused with a clear error.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

import torch
import transformers
from packaging import version
from torch import Tensor

SUPPORTED_ATTENTION = ("eager", "sdpa")
"""Attention implementations that honour a dense 4-D mask (:func:`attention_mask_for`)."""

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
            prompt_ids=pad_ids(prompts, 0, device, left=True),
            prompt_mask=pad_ids([[1] * len(p) for p in prompts], 0, device, left=True),
            completion_ids=pad_ids(completions, 0, device),
            completion_mask=pad_ids([[1] * len(c) for c in completions], 0, device),
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


def pad_ids(
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
    # one copy to the host each (the rows' checks below read them element by element: on a GPU that was
    # ~8 synchronisations per row)
    prompt_ids, prompt_mask = batch.prompt_ids.cpu(), batch.prompt_mask.cpu()
    completion_ids, completion_mask = batch.completion_ids.cpu(), batch.completion_mask.cpu()
    for i in range(size):
        prompt = _real_tokens(prompt_ids[i], prompt_mask[i], i, "left")
        completion = _real_tokens(completion_ids[i], completion_mask[i], i, "right")
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


def model_max_positions(model) -> int | None:
    """The model's context length (``max_position_embeddings``), ``None`` when it has none (or no config: a
    wrapper, a plain module)."""
    return getattr(getattr(model, "config", None), "max_position_embeddings", None)


def attention_mask_for(model, keep: Tensor) -> Tensor:
    """The (B, 1, Q, K) 4-D mask ``model``'s attention reads, from ``keep`` (B, Q, K), True where a query
    may attend to a key. ``transformers`` passes any 4-D mask to the attention as it is.

    SDPA gets ``keep`` itself, a bool mask, the form transformers' own SDPA masks take: SDPA applies it
    in whatever dtype the queries have. An additive float mask would have to match the queries' dtype,
    which is autocast's (bf16), not the weights' (fp32 weights under ``--bf16``): SDPA's CUDA kernels
    expect the mask in the queries' dtype, where the CPU kernel accepts either. Eager attention adds the
    mask to the scores (``attn_weights + attention_mask``), where a bool would add 0 or 1: it gets the
    additive float mask, 0 where kept and the dtype's minimum elsewhere (the addition promotes, so the
    weights' dtype is harmless there).
    """
    if getattr(model.config, "_attn_implementation", None) == "sdpa":
        return keep[:, None]
    dtype = model.dtype
    additive = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return additive.masked_fill_(~keep, torch.finfo(dtype).min)[:, None]


def check_attention(model) -> None:
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
# Calling the model the same way on every transformers release the package admits
# --------------------------------------------------------------------------------------------


@contextmanager
def logits_only_at(model, index: Tensor) -> Iterator[None]:
    """Within the block, ``model(...)`` returns logits (B, N, V) at positions ``index`` (B, N) of each row.

    The lm_head then runs only where probes are scored. Why a pre-hook on the output embedding and not
    ``logits_to_keep=index``: transformers gathers a 2-D ``logits_to_keep`` per row only from 5.21 on
    (``slice_logits_to_keep``); before, Qwen2 indexes ``hidden_states[:, index, :]``, which gives 4-D
    logits (B, B, N, V) and B times the work. The hook gathers the hidden states (B, L, H) → (B, N, H)
    right before the head, on every release, inside the model's own forward (so sharded parameters
    are gathered as usual). Call the model with ``logits_to_keep=0`` (all positions) in the block.
    """
    head = model.get_output_embeddings()

    def gather(_module: torch.nn.Module, args: tuple) -> tuple:
        hidden = args[0]
        picked = hidden.gather(1, index.to(hidden.device)[..., None].expand(-1, -1, hidden.shape[-1]))
        return (picked, *args[1:])

    handle = head.register_forward_pre_hook(gather)
    try:
        yield
    finally:
        handle.remove()


def cache_keyword(model) -> str:
    """The name under which ``model``'s forward takes a KV cache: ``"cache"`` or ``"past_key_values"``.

    transformers renamed ``past_key_values`` to ``cache`` in 5.24 (the old name is deprecated, removal
    announced for 5.40). Before 5.24 an unknown ``cache=`` is swallowed by ``**kwargs`` and the model
    silently starts a fresh cache, so probes would see no prefix: the name must be the model's own.
    Read from the forward's signature (through PEFT / DDP wrappers), else from the installed release.
    """
    inner = model
    for _ in range(4):  # PeftModel → LoraModel → transformers model; DDP → .module
        if hasattr(inner, "get_base_model"):
            inner = inner.get_base_model()
        elif isinstance(getattr(inner, "module", None), torch.nn.Module):
            inner = inner.module
        else:
            break
    parameters = inspect.signature(type(inner).forward).parameters
    if "cache" in parameters:
        return "cache"
    if "past_key_values" in parameters:
        return "past_key_values"
    return (
        "cache" if version.parse(transformers.__version__) >= version.parse("5.24.0") else "past_key_values"
    )


# --------------------------------------------------------------------------------------------
# Shared scoring
# --------------------------------------------------------------------------------------------


def token_log_probs(logits: Tensor, targets: Tensor, temperature: float) -> Tensor:
    """log p(target) under ``softmax(logits / temperature)``, in fp32, clamped to be finite and ≤ 0."""
    log_probs = torch.log_softmax(logits.float() / temperature, dim=-1)
    picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked.clamp(min=LOG_PROB_FLOOR, max=0.0)


def result_from_log_confidence(log_confidence: Tensor, num_probes: Sequence[int]) -> ProbeResult:
    """Fill NaN past each row's probes and exponentiate (floored at :data:`MIN_CONFIDENCE`)."""
    columns = torch.arange(log_confidence.shape[1], device=log_confidence.device)
    counts = torch.tensor(list(num_probes), dtype=torch.long, device=log_confidence.device)
    padding = columns[None, :] >= counts[:, None]
    log_confidence = log_confidence.masked_fill(padding, math.nan)
    confidence = log_confidence.exp().clamp(min=MIN_CONFIDENCE)
    return ProbeResult(confidence=confidence, log_confidence=log_confidence)


def check_temperature(temperature: float) -> None:
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
def idle_forwards(model, count: int, device: torch.device | str) -> None:
    """Run ``count`` one-token forwards of ``model`` on ``device`` (the rollout's) and discard them.

    With sharded parameters (DeepSpeed ZeRO-3, FSDP) each forward all-gathers the weights, a
    collective every process must join. A process with fewer probe chunks than the others
    (``min_chunks`` of :func:`packed_confidence` / :func:`cached_confidence`) runs these so
    that all processes run the same number of forwards; otherwise the others would hang.
    """
    token = torch.zeros(1, 1, dtype=torch.long, device=device)
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
    check_temperature(temperature)
    rows = rows_from_batch(batch, boundaries, model_max_positions(model))
    device = batch.prompt_ids.device  # the rollout's, as the fast paths use
    num_probes = [len(r.boundaries) + 1 for r in rows]
    log_confidence = torch.zeros(len(rows), max(num_probes, default=1), device=device)
    for i, row in enumerate(rows):
        for k, prefix in enumerate(row.prefix_lengths()):
            tokens = row.prompt + row.completion[: prefix - len(row.prompt)] + row.probe
            logits = model(input_ids=torch.tensor([tokens], device=device), use_cache=False).logits[0]
            scored = torch.arange(row.score_from, len(row.probe), device=device)
            targets = torch.tensor(row.probe, device=device)[scored]
            log_confidence[i, k] = token_log_probs(logits[prefix + scored - 1], targets, temperature).sum()
    return result_from_log_confidence(log_confidence, num_probes)
