"""Compiled static-cache decoding for TRL's transformers generation path (``--compiled_generation true``).

TRL builds the ``GenerationConfig`` its rollouts use as ``GenerationConfig(**generation_kwargs,
disable_compile=True)`` (``GRPOTrainer.__init__``), so ``--cache_implementation static`` alone gives a
static KV cache decoded by the eager forward, and ``generation_kwargs={"disable_compile": False}``
cannot undo it (the keyword would be given twice). transformers compiles the decoding step itself
when ``generate`` is called with a compileable cache (``StaticCache``), ``disable_compile`` false and
a CUDA / XPU model (``GenerationMixin._valid_auto_compile_criteria``): it decodes through
``model.get_compiled_call(compile_config)``, ``torch.compile`` of the forward (inductor,
``reduce-overhead``: CUDA graphs, unless a ``CompileConfig`` says otherwise), while the prefill stays eager.

:func:`enable_compiled_generation` therefore edits the trainer's own generation config after TRL has
built it: ``cache_implementation="static"``, ``disable_compile=False`` and, when given, a
``compile_config``. Every method that generates through TRL (grpo, ps, vps; tree, whose levels are
each one TRL generation with its own ``max_new_tokens``) then decodes compiled; vps's probe forwards
do not generate and are unchanged. On a CPU transformers does not compile (its criteria), so the
option there only swaps the cache; a ``CompileConfig`` with ``_compile_all_devices`` forces compiling
(tests). On an H200 at the GSM8K recipe's shape (32 sequences, 150-token prompts, 256 new tokens,
bf16) decoding took 16.0 ms per token with TRL's dynamic cache and 3.8 ms once compiled, whose first
call took 27 s (docs/scaling.md).

The static cache is sized per call (prompt + ``max_new_tokens``, never below the largest size seen,
transformers' ``_prepare_static_cache``) and a new batch size or cache length compiles again, so the
first steps (and tree's first level of each shape) pay compile time.
"""

from __future__ import annotations

from typing import Any

STATIC_CACHE = "static"


def compiled_generation_error(config: Any) -> str | None:
    """Why ``config`` (a ``ProcessGRPOConfig``) cannot use ``compiled_generation``, or ``None`` when it can."""
    if not getattr(config, "compiled_generation", False):
        return None
    if config.use_vllm:
        return (
            "compiled_generation=True compiles transformers' generate; with use_vllm=True vLLM generates (and "
            "compiles its own graphs): drop one of them"
        )
    if getattr(config, "use_transformers_paged", False):
        return (
            "compiled_generation=True needs transformers' generate with a static cache; "
            "use_transformers_paged=True uses paged continuous batching instead: drop one of them"
        )
    chosen = {
        "cache_implementation": config.cache_implementation,
        "generation_kwargs['cache_implementation']": (config.generation_kwargs or {}).get(
            "cache_implementation"
        ),
    }
    for name, value in chosen.items():
        if value not in (None, STATIC_CACHE):
            return (
                f"compiled_generation=True decodes with the static cache, but {name}={value!r}; "
                f"leave it unset (or '{STATIC_CACHE}')"
            )
    return None


def check_compiled_generation(config: Any) -> None:
    """Raise ``ValueError`` naming the options when ``config`` cannot use ``compiled_generation``."""
    error = compiled_generation_error(config)
    if error is not None:
        raise ValueError(error)


def enable_compiled_generation(trainer: Any, compile_config: Any = None) -> None:
    """Make a ``trl.GRPOTrainer`` (stock or psgrpo's) decode with a static cache through a compiled forward.

    Edits ``trainer.generation_config`` (the ``GenerationConfig`` TRL passes to ``generate``) and
    ``trainer.generation_kwargs`` (which TRL lays over the model's own config under transformers < 5).

    Args:
        trainer: a ``GRPOTrainer`` on the transformers generation path (``use_vllm`` false).
        compile_config: a ``transformers.CompileConfig``; ``None`` keeps transformers' default
            (inductor, ``reduce-overhead``).

    Raises:
        ValueError: when the trainer generates with vLLM or paged batching (no ``generation_config``).
    """
    config = getattr(trainer, "generation_config", None)
    if getattr(trainer, "use_vllm", False) or config is None:
        raise ValueError(
            "compiled generation applies to transformers' generate: this trainer generates with vLLM or "
            "paged batching"
        )
    config.cache_implementation = STATIC_CACHE
    config.disable_compile = False
    if compile_config is not None:
        config.compile_config = compile_config
    trainer.generation_kwargs["cache_implementation"] = STATIC_CACHE
