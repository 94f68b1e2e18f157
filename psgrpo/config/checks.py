"""Checks of a :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`, run when it is built (``__post_init__``).

Everything a typo or an impossible combination can break is refused here, before any model
loads: choices, ranges, finite numbers, the registered components and their keyword arguments,
cross-field rules of the methods, and the TRL option × method combinations psgrpo refuses.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.compatibility import check_trl_compatibility
from psgrpo.config.options import (
    RETIRED_ESTIMATORS,
    Curriculum,
    KLSchedule,
    TrlImportanceSamplingLevel,
    TrlLossType,
    TrlMultiObjectiveAggregation,
    TrlScaleRewards,
    check_choice,
    check_finite_floats,
    check_number,
    check_registered,
    json_object_option,
)
from psgrpo.generation import check_compiled_generation
from psgrpo.methods import all_methods, get_method, method_names
from psgrpo.ps.spec import check_step_scorer  # noqa: F401  (psgrpo score-steps imports it from here)
from psgrpo.rewards.functions import REWARD_FUNCS, resolve_reward_func
from psgrpo.techniques.options import check_technique_options

logger = logging.getLogger(__name__)


def check_config(config: Any) -> None:
    """Refuse a bad value or combination of ``config``'s fields (normalising the JSON/CSV ones in place).

    Raises:
        ValueError naming the field, the value and what is allowed.
    """
    check_finite_floats(config)
    check_training_length(config)
    check_sampling_and_batch(config)
    if config.method not in method_names():
        listed = ", ".join(repr(name) for name in method_names())
        raise ValueError(
            f"method={config.method!r} is not allowed; choose one of {listed}, or a method of your own as "
            "path/to/file.py:NAME (a file that registers it)"
        )
    options = get_method(config.method).options
    if options is not None and not isinstance(config, options):
        raise ValueError(
            f"method={config.method!r} has options ({options.__name__}) this config class lacks: build the config "
            "with psgrpo.methods.config_class() after registering the method"
        )
    check_choice("kl_schedule", config.kl_schedule, KLSchedule)
    check_choice("curriculum", config.curriculum, Curriculum)
    check_choice("loss_type", config.loss_type, TrlLossType)
    check_choice("scale_rewards", config.scale_rewards, TrlScaleRewards)
    check_choice("importance_sampling_level", config.importance_sampling_level, TrlImportanceSamplingLevel)
    check_choice(
        "multi_objective_aggregation", config.multi_objective_aggregation, TrlMultiObjectiveAggregation
    )
    check_technique_options(config)
    check_compiled_generation(config)  # --compiled_generation with vLLM / paged batching / another cache
    for (
        spec
    ) in all_methods():  # each method's options, whatever the method; its combinations when it is the one
        if spec.options is None or isinstance(
            config, spec.options
        ):  # a config class without them: not its method
            spec.check(config)
    if isinstance(config.reward_funcs, str):  # YAML/CLI may give "correctness,format"
        config.reward_funcs = [name.strip() for name in config.reward_funcs.split(",") if name.strip()]
    check_number("correctness_rel_tol", config.correctness_rel_tol, low=0.0)
    check_number("max_grad_norm", config.max_grad_norm, low=0.0, allow_none=True)
    check_number("weight_decay", config.weight_decay, low=0.0)
    if config.delta is not None and config.delta <= 1:  # TRL recommends δ > 1 + ε
        raise ValueError(
            f"delta={config.delta} clips the probability ratio at or below 1, which takes the gradient from every "
            f"positive advantage; TRL recommends delta > 1 + epsilon ({1 + config.epsilon:g}), or leave it unset"
        )
    check_number("correctness_exact", config.correctness_exact, low=0.0, low_open=True)
    check_number("correctness_close", config.correctness_close, low=0.0, high=config.correctness_exact)
    check_components(config)
    check_trl_compatibility(config)  # TRL option × method combinations psgrpo refuses


def check_components(config: Any) -> None:
    """Names of the estimator and the reward functions, before any loading (a method's own components,
    such as ``ps``'s segmenter and step scorer, are checked by its spec)."""
    if config.advantage_estimator in RETIRED_ESTIMATORS:
        new = RETIRED_ESTIMATORS[config.advantage_estimator]
        raise ValueError(
            f"advantage_estimator={config.advantage_estimator!r} was renamed: the estimators now carry their "
            f"method's name; use advantage_estimator={new!r} (or leave it unset: method={new!r} uses it)"
        )
    if config.advantage_estimator is not None:
        check_registered("advantage_estimator", config.advantage_estimator, ADVANTAGE_ESTIMATORS)
    for name in config.reward_funcs:
        if "." in name and name not in REWARD_FUNCS:
            resolve_reward_func(
                name
            )  # an import path, as `trl grpo` takes: imported now, so errors come first
        else:
            hint = ", or an import path such as my_rewards.accuracy (a function in my_rewards.py)"
            check_registered("reward_funcs", name, REWARD_FUNCS, hint=hint)


TRL_DICT_OPTIONS = ("generation_kwargs", "model_init_kwargs", "chat_template_kwargs", "lr_scheduler_kwargs")
"""TRL's and transformers' options that take a dict: their own parse of a JSON string names no option."""


def check_before_trl(config: Any) -> None:
    """The values TRL's and transformers' ``__post_init__`` would turn into a traceback or an error that names no
    option: ``num_generations`` 0 (a ZeroDivisionError), ``steps_per_generation`` 0, and a dict option given as
    malformed JSON or as something else than an object (parsed here, naming it)."""
    check_number("num_generations", config.num_generations, low=2, allow_none=True)
    check_number("steps_per_generation", config.steps_per_generation, low=1, allow_none=True)
    check_number("generation_batch_size", config.generation_batch_size, low=1, allow_none=True)
    for name in TRL_DICT_OPTIONS:
        value = getattr(config, name, None)
        if value is not None and not isinstance(value, dict):
            setattr(config, name, json_object_option(name, value))


SAMPLING_RANGES: dict[str, dict[str, Any]] = {
    "temperature": {"low": 0.0, "low_open": True},
    "top_p": {"low": 0.0, "high": 1.0, "low_open": True},
    "min_p": {"low": 0.0, "high": 1.0},
    "repetition_penalty": {"low": 0.0, "low_open": True},
    "top_k": {"low": 0},
    "max_new_tokens": {"low": 1},
    "min_new_tokens": {"low": 0},
    "num_beams": {"low": 1},
}
"""The range of each sampling value, as an option of its own (``--top_p``) or a key of ``generation_kwargs``
(:func:`sampling_range`)."""

WHOLE_NUMBERS = ("top_k", "max_new_tokens", "min_new_tokens", "num_beams")

GREEDY_NOTE = (
    "GRPO learns from the differences between a group's sampled completions, so it samples with a temperature "
    "> 0 (1.0 samples the model as it is, 0.7 closer to greedy); greedy decoding would give every completion of "
    "a group the same text"
)
"""Why training samples: the reason given for a temperature of 0 and for ``do_sample: false``."""


def sampling_range(name: str, use_vllm: bool) -> dict[str, Any]:
    """:data:`SAMPLING_RANGES`' bounds of ``name``; ``top_k`` 0 is no top-k filtering, and vLLM also reads -1 so."""
    return {**SAMPLING_RANGES[name], **({"low": -1} if name == "top_k" and use_vllm else {})}


def check_sampling_and_batch(config: Any) -> None:
    """Sampling and batch options that transformers and torch check only once the model has loaded (or never:
    ``top_p`` 1.5 samples as 1.0), with messages that name neither the option nor its range; the same values
    given as ``generation_kwargs`` keys (which win over the options) are held to the same ranges (``None``:
    unset, as transformers reads it)."""
    check_number("per_device_train_batch_size", config.per_device_train_batch_size, low=1)
    check_number("gradient_accumulation_steps", config.gradient_accumulation_steps, low=1)
    for name in ("top_k", "top_p", "min_p", "repetition_penalty"):
        check_number(name, getattr(config, name), **sampling_range(name, config.use_vllm), allow_none=True)
    for name, value in (config.generation_kwargs or {}).items():
        option = f"generation_kwargs[{name!r}]"
        if name == "do_sample" and value is False:  # a determinism test may want it; training learns nothing
            logger.warning("%s=false: %s, so no group has an advantage to learn from", option, GREEDY_NOTE)
        if name not in SAMPLING_RANGES or value is None:
            continue
        if name == "temperature" and isinstance(value, int | float) and value <= 0:
            raise ValueError(f"{option}={value}: {GREEDY_NOTE}")
        check_number(option, value, **sampling_range(name, config.use_vllm))
        if name in WHOLE_NUMBERS and not isinstance(value, int):
            raise ValueError(f"{option}={value!r} must be a whole number")
    if config.cache_implementation is not None:
        try:
            from transformers.generation.configuration_utils import ALL_CACHE_IMPLEMENTATIONS
        except ImportError:  # a transformers without the list: generate checks it
            return
        caches = Literal[(*ALL_CACHE_IMPLEMENTATIONS, "paged")]  # type: ignore[valid-type]
        check_choice("cache_implementation", config.cache_implementation, caches)


def check_training_length(config: Any) -> None:
    """A learning rate, KL coefficient and clip range of at least 0 and a training length of at least one step.

    transformers accepts ``max_steps=0`` (it then trains a whole step) and a negative learning
    rate (torch refuses it at the first optimizer step, after the model has loaded).
    """
    check_number("learning_rate", config.learning_rate, low=0.0)
    # TRL checks neither: a negative β pays for drifting from the reference, a negative ε inverts the clip
    check_number("beta", config.beta, low=0.0)
    check_number("epsilon", config.epsilon, low=0.0)
    check_number("epsilon_high", getattr(config, "epsilon_high", None), low=0.0, allow_none=True)
    if config.max_steps == 0 or config.max_steps < -1:
        raise ValueError(
            f"max_steps={config.max_steps} trains no step: give a positive number of optimizer steps, or -1 "
            f"(the default) to train num_train_epochs={config.num_train_epochs} epochs"
        )
    if config.max_steps == -1:
        check_number("num_train_epochs", config.num_train_epochs, low=0.0, low_open=True)


@contextmanager
def named_batch_errors(config: Any) -> Iterator[None]:
    """Around TRL's ``GRPOConfig.__post_init__``: its "generation_batch_size must be divisible by
    num_generations" names a value it derived; this names the options the user set instead."""
    explicit_generation_batch = config.generation_batch_size
    explicit_steps = config.steps_per_generation
    try:
        yield
    except ValueError as err:
        if "must be divisible by num_generations" not in str(err):
            raise
        raise ValueError(batch_message(config, explicit_generation_batch, explicit_steps)) from None


def batch_message(config: Any, generation_batch_size: int | None, steps_per_generation: int | None) -> str:
    """Why ``num_generations`` does not divide the completions generated per step, in the options set."""
    n = config.num_generations
    if generation_batch_size is not None:
        return (
            f"num_generations={n} must divide generation_batch_size={generation_batch_size} "
            "(each prompt's completions are generated together): change one of them"
        )
    factors = [f"per_device_train_batch_size={config.per_device_train_batch_size}"]
    if config.world_size > 1:
        factors.append(f"{config.world_size} processes")
    if steps_per_generation is not None:
        factors.append(f"steps_per_generation={steps_per_generation}")
    elif config.gradient_accumulation_steps > 1:
        factors.append(f"gradient_accumulation_steps={config.gradient_accumulation_steps}")
    total = config.generation_batch_size
    divisors = [d for d in range(2, total + 1) if total % d == 0][:6]
    per_device = config.per_device_train_batch_size
    multiple = per_device * n // math.gcd(per_device, n)
    return (
        f"num_generations={n} must divide the completions generated per step, {' × '.join(factors)} = {total}: "
        f"set per_device_train_batch_size to a multiple of {n} (e.g. {multiple}) or num_generations to a divisor "
        f"of {total} ({', '.join(map(str, divisors)) or 'none above 1'})"
    )
