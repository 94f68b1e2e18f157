"""transformers ``generate`` at the GSM8K recipe's shape: TRL's dynamic cache against the compiled static cache.

    python benchmarks/bench_generation.py [--cpu-smoke] [--batch 32] [--prompt_tokens 150] [--new_tokens 256]
        [--repeats 2] [--caches dynamic static] [--output FILE.json]

The model is gpu_check's random Qwen2 with Qwen2.5-0.5B's shapes (bf16, 494 M parameters; ``--cpu-smoke``: the
2-layer × 32 one on CPU), the prompts ``--batch`` rows of ``--prompt_tokens`` random ids, and the generation
config the one TRL's ``GRPOTrainer`` builds for the GSM8K recipe (sampling at temperature 0.7, top-k 40,
top-p 0.9), with ``min_new_tokens = max_new_tokens`` so every call decodes exactly ``--new_tokens``:

* ``dynamic``: TRL's own config (``disable_compile=True``, no cache implementation: a ``DynamicCache``);
* ``static``: what ``--compiled_generation true`` makes of it (:mod:`psgrpo.generation`): a static cache and
  ``disable_compile=False``, so transformers decodes through a ``torch.compile``'d forward on a GPU.

Reported per cache: the first call's seconds (with ``static``, compiling included) and, over ``--repeats``
further calls, the median seconds and ms per new token (a call's time / ``--new_tokens``: the prefill is
included, spread over the tokens). Measured on one H200 (2026-12-04, before this script): 16.0 ms per token
dynamic, 3.8 static, whose first call took 27 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from _args import POSITIVE_INT
from gpu_check import QWEN2_5_0_5B_SHAPES, SMOKE_SHAPES, write_atomically
from transformers import GenerationConfig

from psgrpo.generation import STATIC_CACHE
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.qwen_tokenizer import QWEN2_5_VOCAB_SIZE
from psgrpo.tiny.tokenizer import build_char_tokenizer

RECIPE_SAMPLING = dict(do_sample=True, temperature=0.7, top_k=40, top_p=0.9)
"""The GSM8K recipe's sampling (psgrpo/recipes/gsm8k_qwen2.5_0.5b.yaml), as TRL passes it to generate."""


def generation_config(cache: str, new_tokens: int, pad_token_id: int, eos_token_id: int) -> GenerationConfig:
    """TRL's rollout config for ``cache="dynamic"``; with ``"static"``, what psgrpo's compiled generation makes of it."""
    kwargs: dict[str, Any] = dict(
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        **RECIPE_SAMPLING,
    )
    if cache == STATIC_CACHE:
        return GenerationConfig(**kwargs, cache_implementation=STATIC_CACHE, disable_compile=False)
    return GenerationConfig(**kwargs, disable_compile=True)  # as GRPOTrainer.__init__ builds it


def time_generate(
    model: Any, prompts: torch.Tensor, config: GenerationConfig, repeats: int
) -> dict[str, Any]:
    """Seconds of the first ``generate`` call and of ``repeats`` more (CUDA synchronised around each)."""

    def one() -> float:
        if prompts.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompts, attention_mask=torch.ones_like(prompts), generation_config=config)
        if prompts.is_cuda:
            torch.cuda.synchronize()
        assert out.shape[1] == prompts.shape[1] + config.max_new_tokens, "a call stopped early"
        return time.perf_counter() - start

    first = one()
    seconds = [one() for _ in range(repeats)]
    median = statistics.median(seconds)
    return {
        "first_call_s": first,
        "call_s": seconds,
        "median_call_s": median,
        "ms_per_token": 1000 * median / config.max_new_tokens,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cpu-smoke", dest="smoke", action="store_true", help="tiny shapes on CPU")
    parser.add_argument("--batch", type=POSITIVE_INT, default=32, help="sequences per call (8 prompts × 4)")
    parser.add_argument("--prompt_tokens", type=POSITIVE_INT, default=150)
    parser.add_argument("--new_tokens", type=POSITIVE_INT, default=256)
    parser.add_argument("--repeats", type=POSITIVE_INT, default=2, help="timed calls after the first")
    parser.add_argument(
        "--caches", nargs="+", default=["dynamic", STATIC_CACHE], choices=["dynamic", STATIC_CACHE]
    )
    parser.add_argument("--output", default=None, help="write the JSON report here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    cli = parse_args(argv)
    cuda = torch.cuda.is_available() and not cli.smoke
    if not cuda and not cli.smoke:
        raise SystemExit(
            "no CUDA device: run on a GPU machine, or pass --cpu-smoke to check the script on CPU"
        )
    device = "cuda" if cuda else "cpu"
    tokenizer = build_char_tokenizer()  # ids only: the prompts are random, and no call may stop early
    shapes = SMOKE_SHAPES if cli.smoke else QWEN2_5_0_5B_SHAPES
    model = build_tiny_model(tokenizer, seed=0, vocab_size=QWEN2_5_VOCAB_SIZE, **shapes)
    model = model.to(device=device, dtype=torch.bfloat16 if cuda else torch.float32)
    generator = torch.Generator().manual_seed(0)
    prompts = torch.randint(
        len(tokenizer), QWEN2_5_VOCAB_SIZE, (cli.batch, cli.prompt_tokens), generator=generator
    )
    prompts = prompts.to(device)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__,
        "shape": {"batch": cli.batch, "prompt_tokens": cli.prompt_tokens, "new_tokens": cli.new_tokens},
        "model": {**shapes, "vocab_size": QWEN2_5_VOCAB_SIZE, "dtype": "bfloat16" if cuda else "float32"},
        "caches": {},
    }
    for cache in cli.caches:
        config = generation_config(cache, cli.new_tokens, tokenizer.pad_token_id, tokenizer.eos_token_id)
        torch.manual_seed(0)
        report["caches"][cache] = time_generate(model, prompts, config, cli.repeats)
        print(f"[bench_generation] {cache}: {json.dumps(report['caches'][cache])}", flush=True)
        caches = report["caches"]
        if {"dynamic", STATIC_CACHE} <= set(caches):
            report["static_speedup"] = (
                caches["dynamic"]["median_call_s"] / caches[STATIC_CACHE]["median_call_s"]
            )
        if cli.output:  # after every cache: a run stopped at a time limit keeps the caches that finished
            Path(cli.output).parent.mkdir(parents=True, exist_ok=True)
            write_atomically(Path(cli.output), json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
