"""The ``gold_suffix`` probe (``--vps_probe gold_suffix``): the rest of the gold worked solution.

An extension of GRPO-VPS, not the paper's method. The paper probes the gold *answer*:
C_k = p(answer | prompt, completion[: b_k + 1], "</reasoning>\\n<answer>"). On the tiny models of
this repository that probe is flat along the reasoning (docs/learning.md: ranking the wrong step,
AUC 0.49–0.58), because the model cannot do the remaining operations in its head. This probe asks
instead how likely the policy finds the *rest of the gold solution* after the k-th step:

    C_k = exp( mean over the tokens t of the gold text after its k-th step of log p(t | prompt,
          completion[: b_k + 1], the gold text before t) )

(the per-token geometric mean; C_0: the whole gold solution after the prompt). A model that copies
earlier results finds the gold continuation unlikely after a wrong step, so ΔC drops there
(``psgrpo diagnose --kinds gold_suffix``: AUC 0.87 on the embedded checkpoint). It needs a gold
worked solution per prompt, and it aligns the completion's k-th step with the gold solution's
k-th step: a policy that skips or adds a step is compared with a shifted gold continuation.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from psgrpo.vps.probes import ProbeResult


def gold_suffix_texts(solution: str, step_ends: Sequence[int], num_boundaries: int) -> list[str]:
    """The scored text of C_0..C_K: the whole ``solution``, then its text after step k, k = 1..K.

    Args:
        solution: the gold worked solution.
        step_ends: character index just past each of its steps but the last (where the next begins).
        num_boundaries: K, the completion's boundaries; past the gold's own steps the suffix stays
            the one after its last boundary (its final step and answer).
    """
    texts = [solution]
    for k in range(1, num_boundaries + 1):
        texts.append(solution[step_ends[min(k, len(step_ends)) - 1] :] if step_ends else solution)
    return texts


ProbeKey = tuple[tuple[int, ...], tuple[int, ...]]
"""(context ids, suffix ids) of one probe."""


def distinct_probes(
    contexts: Sequence[Sequence[Sequence[int]]], suffixes: Sequence[Sequence[Sequence[int]]]
) -> dict[ProbeKey, list[tuple[int, int]]]:
    """Each distinct (context, suffix) pair → the (row i, probe k) that ask it, in first-seen order.

    A group's G completions share C_0 (same prompt, whole gold solution), and completions that
    begin alike share later probes too, so one forward per distinct pair is enough.
    """
    owners: dict[ProbeKey, list[tuple[int, int]]] = {}
    for i, row in enumerate(contexts):
        for k, (c, s) in enumerate(zip(row, suffixes[i], strict=True)):
            owners.setdefault((tuple(c), tuple(s)), []).append((i, k))
    return owners


@torch.no_grad()
def suffix_confidence(
    model: torch.nn.Module,
    contexts: Sequence[Sequence[Sequence[int]]],
    suffixes: Sequence[Sequence[Sequence[int]]],
    pad_token_id: int,
    temperature: float = 1.0,
    chunk_size: int | None = 16,
    min_chunks: int = 0,
    owners: dict[ProbeKey, list[tuple[int, int]]] | None = None,
    device: torch.device | str | None = None,
) -> ProbeResult:
    """C = exp(mean log p(suffix | context)) for every row i and probe k.

    Args:
        model: the policy (any causal LM taking ``position_ids``).
        contexts, suffixes: ``contexts[i][k]`` and ``suffixes[i][k]`` token ids of probe k of row i
            (k = 0..K_i); every suffix non-empty.
        pad_token_id: fills the left padding (masked).
        temperature: logits are divided by it, as TRL does when sampling.
        chunk_size: distinct probes per forward (None: all; :func:`distinct_probes`: a probe
            asked by several rows is scored once). Memory is chunk × longest suffix × vocabulary.
        min_chunks: run at least this many forwards (extra ones on a dummy row), so every process
            of a ZeRO-3 / FSDP job makes the same number of collective calls.
        owners: ``distinct_probes(contexts, suffixes)`` when the caller has it already (it
            counts the forwards first); computed here otherwise.
        device: where the forwards run and the result lands: the rollout's device (default: the
            parameters', which with CPU-offloaded parameters is the CPU while the forward runs on the GPU).

    Returns:
        :class:`~psgrpo.vps.probes.ProbeResult` of shape (B, K_max + 1), NaN beyond each row's K_i;
        ``log_confidence`` is the mean token log-prob.
    """
    owners = distinct_probes(contexts, suffixes) if owners is None else owners
    flat = [(index, list(c), list(s)) for index, (c, s) in enumerate(owners)]
    if any(not s for _, _, s in flat):
        raise ValueError("every probe suffix needs at least one token to score")
    askers = list(owners.values())
    width = 1 + max((len(row) - 1 for row in contexts), default=0)
    log_confidence = torch.full((len(contexts), width), float("nan"))
    size = max(chunk_size or len(flat), 1)
    chunks = [flat[start : start + size] for start in range(0, len(flat), size)]
    chunks += [[]] * max(0, min_chunks - len(chunks))
    device = next(model.parameters()).device if device is None else torch.device(device)
    for chunk in chunks:
        rows = chunk or [(-1, [pad_token_id], [pad_token_id])]  # a dummy forward keeps processes in step
        length = max(len(c) + len(s) for _, c, s in rows)
        keep = max(len(s) for _, _, s in rows) + 1
        ids = torch.full((len(rows), length), pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), length), dtype=torch.long)
        for r, (_, c, s) in enumerate(rows):  # left padding: every suffix ends at the last position
            ids[r, length - len(c) - len(s) :] = torch.tensor(c + s)
            mask[r, length - len(c) - len(s) :] = 1
        position_ids = (mask.cumsum(1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=position_ids.to(device),
            logits_to_keep=keep,
            use_cache=False,  # one forward per probe: a KV cache would only cost memory
        ).logits
        targets = ids[:, length - keep + 1 :].to(device)  # logits at position t predict token t + 1
        scored = [(r, index, len(s)) for r, (index, _, s) in enumerate(rows) if index >= 0]
        means = []
        for r, _, n in scored:
            row = logits[r, -n - 1 : -1].float() / temperature
            token_logps = row.gather(1, targets[r, -n:, None]).squeeze(1) - row.logsumexp(-1)
            means.append(token_logps.mean())
        for (_, index, _), value in zip(scored, torch.stack(means).tolist() if means else [], strict=True):
            for i, k in askers[index]:  # one copy to the host per chunk, not one per probe
                log_confidence[i, k] = value
    log_confidence = log_confidence.to(
        device
    )  # beside the rollout's tensors (the GPU), as every probe path returns
    return ProbeResult(log_confidence.exp(), log_confidence)
