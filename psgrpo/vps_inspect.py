"""Inspect GRPO-VPS on one completion: its segments, C_k at each boundary and ΔC_k per segment.

    from psgrpo.vps_inspect import inspect_confidence
    report = inspect_confidence(model, tokenizer, prompt, completion, answer="42")
    print(report)

Uses the same pieces as the trainer: entropies at the sampling temperature, adaptive boundaries,
and the packed probe pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from psgrpo.vps_probes import ProbeBatch, build_probe_ids, packed_confidence
from psgrpo.vps_segments import answer_span_start, select_boundaries, spans_from_boundaries, token_entropies


@dataclass
class SegmentReport:
    """One segment (b_{k-1}, b_k] of the completion: its text and the confidence after it."""

    index: int
    tokens: tuple[int, int]  # [start, end) completion-token indices
    text: str
    confidence: float  # C_k after the segment (C at its end boundary; the last segment has none)
    delta: float | None  # ΔC_k = C_k − C_{k−1}; None for the segment after the last boundary


@dataclass
class ConfidenceReport:
    c0: float
    segments: list[SegmentReport]

    def __str__(self) -> str:
        lines = [
            f"C_0 = {self.c0:.4f} (right after the prompt)",
            "| k | tokens | C_k | ΔC_k | text |",
            "|---|---|---|---|---|",
        ]
        for seg in self.segments:
            delta = "—" if seg.delta is None else f"{seg.delta:+.4f}"
            conf = "—" if seg.delta is None else f"{seg.confidence:.4f}"
            lines.append(
                f"| {seg.index} | {seg.tokens[0]}–{seg.tokens[1]} | {conf} | {delta} | {seg.text!r} |"
            )
        return "\n".join(lines)


@torch.no_grad()
def inspect_confidence(
    model,
    tokenizer,
    prompt: str,
    completion: str,
    answer: str,
    temperature: float = 1.0,
    max_segments: int = 4,
    quantile: float = 0.8,
    min_segment_tokens: int = 4,
    answer_marker: str = "<answer>",
    probe_open: str = "</reasoning>\n<answer>",
    probe_close: str = "</answer>",
) -> ConfidenceReport:
    """Segments of ``completion`` with C_k and ΔC_k, as GRPO-VPS computes them in training."""
    device = next(model.parameters()).device
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt_ids + completion_ids], device=device)
    logits = model(input_ids=ids).logits[:, len(prompt_ids) - 1 : -1]
    entropies = token_entropies(logits, temperature)[0]
    boundaries = select_boundaries(
        entropies.cpu(),
        max_segments=max_segments,
        quantile=quantile,
        min_segment_tokens=min_segment_tokens,
        protect_from=answer_span_start(
            completion_ids, tokenizer(answer_marker, add_special_tokens=False)["input_ids"]
        ),
    )
    probe_ids, score_from = build_probe_ids(tokenizer, [answer], probe_open, probe_close)
    batch = ProbeBatch.from_lists([prompt_ids], [completion_ids], probe_ids, score_from, device)
    probes = packed_confidence(model, batch, [boundaries], temperature=temperature)
    conf = probes.confidence[0].tolist()
    segments = []
    for k, (start, end) in enumerate(spans_from_boundaries(boundaries, len(completion_ids))):
        last = k == len(boundaries)
        segments.append(
            SegmentReport(
                index=k + 1,
                tokens=(start, end),
                text=tokenizer.decode(completion_ids[start:end]),
                confidence=conf[k + 1] if not last else float("nan"),
                delta=None if last else conf[k + 1] - conf[k],
            )
        )
    return ConfidenceReport(c0=conf[0], segments=segments)
