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

A new cache length or batch size compiles again. transformers sizes the static cache per call (prompt +
``max_new_tokens``, never below the largest size seen), so batches with longer prompts would recompile;
:func:`enable_compiled_generation` therefore also sets the generation config's ``max_cache_len`` (where
transformers has it, 5.17 on) before each rollout to the batch's longest prompt + ``max_completion_length``
rounded up to a multiple of :data:`CACHE_BUCKET` tokens, so the cache length changes only when a batch
crosses a bucket. Tree's levels (prompt + prefix + the level's budget) fit in that ceiling; their batch
sizes differ, so each distinct one compiles once (dynamo then makes the batch size dynamic).

With gradient checkpointing on, TRL's rollouts would add a forward hook to the input embeddings at every
step, and dynamo would compile decoding again at every step (:func:`tidy_input_grad_hooks`, which psgrpo's
trainer applies always and :func:`enable_compiled_generation` applies to stock TRL too).
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

from transformers import GenerationConfig

logger = logging.getLogger(__name__)

STATIC_CACHE = "static"
CACHE_BUCKET = 256
"""The static cache's length is a multiple of this many tokens (prompt + completion, rounded up)."""


def cache_ceiling(prompt_lengths: list[int], max_completion_length: int, bucket: int = CACHE_BUCKET) -> int:
    """The static cache length for a batch: longest prompt + ``max_completion_length``, rounded up to ``bucket``."""
    needed = max(prompt_lengths, default=0) + max_completion_length
    return max(bucket, math.ceil(needed / bucket) * bucket)


def compiled_generation_error(config: Any) -> str | None:
    """Why ``config`` (a ``ProcessGRPOConfig``) cannot use ``compiled_generation``, or ``None`` when it can."""
    if not getattr(config, "compiled_generation", False):
        return None
    if config.use_vllm:
        return (
            "compiled_generation=True compiles transformers' generate; with use_vllm=True vLLM generates (and "
            "compiles its own graphs): drop one of them"
        )
    for flag in (
        "use_transformers_paged",
        "use_transformers_continuous_batching",
    ):  # the flag given, old or new
        if getattr(config, flag, False):
            return (
                "compiled_generation=True needs transformers' generate with a static cache; "
                f"{flag}=True uses paged continuous batching instead: drop one of them"
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


STATIC_CACHE_AUTOCAST_MIN = "5.25"
"""The first transformers release tested to decode with a static cache under autocast over weights of
another dtype: before it (5.6, 5.17 and 5.21 tested), the cache is allocated in the weights' dtype and
then receives autocast's bf16 keys (``index_copy_(): ... Float and BFloat16``)."""


def cache_dtype_error(bf16: bool, fp16: bool, weights: Any) -> str | None:
    """Why this transformers cannot decode with a static cache under ``bf16``/``fp16`` autocast over
    ``weights`` (a ``torch.dtype``, or ``None`` when unknown); ``None`` when it can."""
    import torch
    import transformers
    from packaging.version import Version

    autocast = torch.bfloat16 if bf16 else torch.float16 if fp16 else None
    if autocast is None or weights in (None, autocast):
        return None
    if Version(transformers.__version__) >= Version(STATIC_CACHE_AUTOCAST_MIN):
        return None
    return (
        f"compiled_generation=True with {str(autocast).removeprefix('torch.')} autocast over "
        f"{str(weights).removeprefix('torch.')} weights needs transformers >= {STATIC_CACHE_AUTOCAST_MIN} "
        f"(found {transformers.__version__}: its static cache takes the weights' dtype, then receives "
        "autocast's keys); load the model in that dtype (--dtype bfloat16), set --bf16 false, or upgrade "
        "transformers"
    )


def check_cache_dtype(trainer: Any) -> None:
    """Refuse, before any rollout, a static cache that this transformers would allocate in the wrong dtype
    (``psgrpo train`` refuses it earlier, before the model loads: :func:`psgrpo.preflight.check_run_options`)."""
    args = trainer.args
    error = cache_dtype_error(args.bf16, args.fp16, getattr(trainer.model, "dtype", None))
    if error is not None:
        raise ValueError(error)


def _enable_input_require_grads_once(self: Any) -> None:
    """``PreTrainedModel.enable_input_require_grads`` that first removes the hooks an earlier call left."""
    self.disable_input_require_grads()
    type(self).enable_input_require_grads(self)


def _pretrained_models(model: Any) -> list[Any]:
    from transformers import PreTrainedModel

    return [module for module in model.modules() if isinstance(module, PreTrainedModel)]


def _checkpointing(model: Any) -> bool:
    """Whether gradient checkpointing is on (``is_activation_checkpointing`` from transformers 5.25, which
    deprecates ``is_gradient_checkpointing``)."""
    flag = getattr(model, "is_activation_checkpointing", None)
    return bool(model.is_gradient_checkpointing if flag is None else flag)


def keep_one_input_grad_hook(model: Any) -> int:
    """Make re-enabling gradient checkpointing replace the input-embedding hook, not add one; models patched.

    Each ``PreTrainedModel`` inside ``model`` (the policy; a PEFT wrapper's base model) gets an instance
    ``enable_input_require_grads`` that removes its last call's hooks first (a ``functools.partial`` of a module
    function: a deep copy binds its own, and the model still pickles). Calling it again patches nothing. Why:
    :func:`tidy_input_grad_hooks`.
    """
    patched = 0
    for module in _pretrained_models(model):
        if "enable_input_require_grads" not in vars(module):
            module.enable_input_require_grads = functools.partial(_enable_input_require_grads_once, module)
            patched += 1
    return patched


def _generate_without_input_grad_hooks(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``generate`` without the input-embedding hooks while gradient checkpointing is off (TRL's rollouts); the
    models that had them get them back after it (one each: the enable is :func:`keep_one_input_grad_hook`'s)."""
    if _checkpointing(self):
        return type(self).generate(self, *args, **kwargs)
    hooked = [module for module in _pretrained_models(self) if getattr(module, "_require_grads_hooks", None)]
    for module in hooked:
        module.disable_input_require_grads()
    try:
        return type(self).generate(self, *args, **kwargs)
    finally:
        for module in hooked:
            module.enable_input_require_grads()


def tidy_input_grad_hooks(trainer: Any) -> None:
    """One ``make_inputs_require_grads`` hook on the policy's input embeddings while it trains, none while it generates.

    With gradient checkpointing on, TRL turns it off and on again around each generation and each no-grad
    forward it wraps (``unwrap_model_for_generation``, ``disable_gradient_checkpointing``: 2 per step for grpo,
    3 for vps and tree). transformers' enable registers a new forward hook on the input embeddings each time; its
    disable removes them only for PEFT adapters loaded through transformers (5.6, 5.17 and 5.25 alike). So the
    hooks grew by 2–3 per step, and every forward ran them all. With
    ``compiled_generation`` under torch 2.13 (transformers 5.6 and 5.25), dynamo guards on their number, so
    decoding compiled again at every step until dynamo's ``recompile_limit`` (8), then ran eagerly for the rest of
    training; under torch 2.11 and transformers 5.17 (the CUDA image) the hooks' ``requires_grad_()`` broke the
    decoding graph in two instead.

    So: :func:`keep_one_input_grad_hook` on ``trainer.model`` and, when ``args.gradient_checkpointing``, an
    instance ``generate`` on each of its models that, while gradient checkpointing is off (inside TRL's rollouts,
    every tree level too), takes the hooks off for the call and puts one back on each model that had them. A
    ``generate`` with gradient checkpointing on leaves them as they are. Idempotent.
    """
    keep_one_input_grad_hook(trainer.model)
    if not trainer.args.gradient_checkpointing:  # no toggling, so no leak; a PEFT setup's own hook stays
        return
    for module in _pretrained_models(trainer.model):
        if hasattr(module, "generate") and "generate" not in vars(module):
            module.generate = functools.partial(_generate_without_input_grad_hooks, module)


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
    check_cache_dtype(trainer)
    tidy_input_grad_hooks(
        trainer
    )  # else decoding compiles again every step (psgrpo's trainer does it always)
    config.cache_implementation = STATIC_CACHE
    config.disable_compile = False
    if compile_config is not None:
        config.compile_config = compile_config
    trainer.generation_kwargs["cache_implementation"] = STATIC_CACHE
    if hasattr(GenerationConfig(), "max_cache_len"):  # transformers >= 5.17: size the cache in buckets
        _size_cache_per_rollout(trainer)


def _size_cache_per_rollout(trainer: Any) -> None:
    """Before each rollout, set ``max_cache_len`` to :func:`cache_ceiling` of its prompts (an instance wrapper of
    TRL's ``_generate_single_turn``, so stock TRL and psgrpo get it alike; tree's levels run inside it)."""
    generate = trainer._generate_single_turn

    multiple = getattr(trainer, "pad_to_multiple_of", None) or 1  # TRL pads the prompts to it before generate

    @functools.wraps(generate)
    def sized(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
        padded = [-(-len(p) // multiple) * multiple for p in prompt_ids]
        ceiling = cache_ceiling(padded, trainer.max_completion_length)
        trainer.generation_config.max_cache_len = max(ceiling, trainer.generation_config.max_cache_len or 0)
        return generate(prompt_ids, *args, **kwargs)

    trainer._generate_single_turn = sized


class CompileWatch:
    """Graphs ``torch.compile`` made during each rollout; a warning, once, when decoding keeps compiling.

    Decoding compiles in the first rollouts (tree: once per level batch size; before transformers 5.17 also a
    second cache length), then never again. A guard that fails at every rollout instead (a hook added per step,
    as TRL's checkpointing toggle once did: :func:`tidy_input_grad_hooks`) compiles at every rollout until dynamo's
    ``recompile_limit``, then decodes eagerly for the rest of training, silently: :meth:`__call__` warns when
    ``patience`` rollouts in a row, after the first ``warmup``, made graphs. Counts ``torch._dynamo``'s
    process-wide ``unique_graphs``, so a compile elsewhere in the process between two rollouts counts too.
    """

    def __init__(self, patience: int = 3, warmup: int = 2) -> None:
        self.patience, self.warmup = patience, warmup
        self.rollouts = 0
        self.streak = 0
        self.warned = False
        self.last = self.graphs()

    @staticmethod
    def graphs() -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])

    def __call__(self) -> int:
        """After a rollout: the graphs made since the last call (0 once decoding has compiled)."""
        now = self.graphs()
        made, self.last = now - self.last, now
        self.rollouts += 1
        if self.rollouts > self.warmup:
            self.streak = self.streak + 1 if made else 0
        if self.streak >= self.patience and not self.warned:
            self.warned = True
            logger.warning(
                "compiled_generation: torch.compile made new graphs in each of the last %d rollouts (%d graphs "
                "so far): decoding compiles again every step, and after dynamo's recompile_limit it decodes "
                "eagerly. Run with TORCH_LOGS=recompiles to see the guard that fails.",
                self.streak,
                now,
            )
        return made
