"""Time the GRPO-VPS confidence probes: packed one-pass engine vs one forward per probe.

    python benchmarks/bench_vps_probes.py [--rows 64] [--ks 4 8] [--repeats 3] [--chunk-size 16] [--threads 1]

Trajectories are arith test prompts with their gold completions, on the embedded tiny model
(``psgrpo.loading.load_model_and_tokenizer(None)``); each row gets ``K`` evenly spaced boundaries, so
``K + 1`` probes (C_0 included). Three ways to compute the same confidences:

* ``packed``: :func:`psgrpo.vps.packed.packed_confidence`, one forward for all rows, and with
  ``chunk_size`` rows per forward (chunks of similar packed length, so less padding);
* ``per-boundary``: a batched baseline that re-runs the prefix once per boundary (``K + 1``
  right-padded batched forwards of ``prompt + completion[: b_k + 1] + probe``);
* ``naive``: :func:`psgrpo.vps.probes.naive_confidence`, one unbatched forward per (row, probe).

Reported: median seconds over ``--repeats`` runs after one warm-up, speed-ups of packed, the max
|Δ log C| of each method against naive, and the process's peak RSS after each stage (cumulative,
``resource.getrusage``; in the order chunked packed, naive, per-boundary, packed). Run on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import torch

from psgrpo.data.arith import make_arith_dataset
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.vps.packed import packed_confidence
from psgrpo.vps.probes import (
    ProbeBatch,
    ProbeResult,
    build_probe_ids,
    naive_confidence,
    rows_from_batch,
    token_log_probs,
)


def make_batch(tokenizer, n_rows: int, k: int) -> tuple[ProbeBatch, list[list[int]]]:
    """TRL-shaped tensors for ``n_rows`` arith test rows, and ``k`` evenly spaced boundaries per row."""
    data = make_arith_dataset("test", n=n_rows)
    prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in data["prompt"]]
    completions = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in data["completion"]]
    boundaries = [[j * len(c) // (k + 1) - 1 for j in range(1, k + 1)] for c in completions]
    batch = ProbeBatch.from_lists(prompts, completions, *build_probe_ids(tokenizer, data["answer"]))
    return batch, boundaries


@torch.no_grad()
def per_boundary_confidence(
    model, batch: ProbeBatch, boundaries: list[list[int]], temperature: float = 1.0
) -> ProbeResult:
    """Baseline: for each probe index k, one right-padded batched forward of every row's k-th prefix + probe."""
    rows = rows_from_batch(batch, boundaries)
    log_confidence = torch.full((len(rows), max(len(r.boundaries) + 1 for r in rows)), float("nan"))
    for k in range(log_confidence.shape[1]):
        live = [i for i, r in enumerate(rows) if k <= len(rows[i].boundaries)]
        seqs, prefixes = [], []
        for i in live:
            prefix = rows[i].prefix_lengths()[k]
            seqs.append(rows[i].prompt + rows[i].completion[: prefix - len(rows[i].prompt)] + rows[i].probe)
            prefixes.append(prefix)
        width = max(map(len, seqs))
        ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        for row_in_batch, (i, prefix) in enumerate(zip(live, prefixes, strict=True)):
            probe, start = rows[i].probe, rows[i].score_from
            scored = torch.arange(start, len(probe))
            picked = logits[row_in_batch, prefix + scored - 1]
            log_confidence[i, k] = token_log_probs(picked, torch.tensor(probe)[scored], temperature).sum()
    return ProbeResult(confidence=log_confidence.exp(), log_confidence=log_confidence)


def median_seconds(fn: Callable[[], ProbeResult], repeats: int) -> tuple[float, ProbeResult]:
    """Median wall time of ``fn`` over ``repeats`` runs after one warm-up, and its last result."""
    result = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--ks", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--chunk-size", type=int, default=16, help="rows per forward for the chunked packed run"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1 is steadiest on a shared machine)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model, tokenizer = load_model_and_tokenizer(None)
    model.eval()
    print(
        f"model: embedded tiny Qwen2 ({sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, "
        f"attn={model.config._attn_implementation}), rows={args.rows}, threads={args.threads}, "
        f"median of {args.repeats} after 1 warm-up; baseline RSS {peak_rss_mib():.0f} MiB\n"
    )
    print(
        f"| K | packed s | packed chunk={args.chunk_size} s | per-boundary s | naive s | naive / packed "
        f"| naive / packed chunk | per-boundary / packed chunk | max abs Δ log C vs naive "
        f"(packed, chunk, per-boundary) | peak RSS MiB after chunk / naive / per-boundary / packed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in args.ks:
        batch, boundaries = make_batch(tokenizer, args.rows, k)
        chunked_fn = partial(packed_confidence, model, batch, boundaries, chunk_size=args.chunk_size)
        t_chunked, chunked = median_seconds(chunked_fn, args.repeats)
        rss = [peak_rss_mib()]
        t_naive, naive = median_seconds(partial(naive_confidence, model, batch, boundaries), args.repeats)
        rss.append(peak_rss_mib())
        per_boundary_fn = partial(per_boundary_confidence, model, batch, boundaries)
        t_batched, batched = median_seconds(per_boundary_fn, args.repeats)
        rss.append(peak_rss_mib())
        t_packed, packed = median_seconds(partial(packed_confidence, model, batch, boundaries), args.repeats)
        rss.append(peak_rss_mib())
        deltas = [
            (r.log_confidence - naive.log_confidence).abs().nan_to_num().max().item()
            for r in (packed, chunked, batched)
        ]
        print(
            f"| {k} | {t_packed:.3f} | {t_chunked:.3f} | {t_batched:.3f} | {t_naive:.3f} "
            f"| {t_naive / t_packed:.1f}× | {t_naive / t_chunked:.1f}× | {t_batched / t_chunked:.1f}× "
            f"| {', '.join(f'{d:.1e}' for d in deltas)} | {' / '.join(f'{r:.0f}' for r in rss)} |"
        )


if __name__ == "__main__":
    main()
