"""Every psgrpo option with a fixed set of values, defined once, and the checks that use them.

Each ``Literal`` below is the single definition of an option's allowed values. The same object
feeds three places, so they cannot drift apart:

- the command-line parser's ``choices`` (``HfArgumentParser`` reads a ``Literal`` field type);
- validation in the config dataclasses' ``__post_init__`` (:func:`check_choice`), which also
  catches values that come from a YAML file or from Python, where argparse never looks;
- the estimators and stages that branch on the value (they compare against :func:`allowed`).

Options whose values come from a registry (segmenters, step scorers, advantage estimators,
reward functions) are checked against that registry instead, so names registered by a user
are accepted too (:func:`check_registered`).

Numeric options are checked with :func:`check_number`: non-finite values (``nan``, ``inf``)
and values outside the documented range are refused before anything is loaded.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterable
from dataclasses import fields
from typing import Any, Literal, get_args

Method = Literal["grpo", "ps", "vps", "tree"]
"""Credit assignment: outcome GRPO, PS-GRPO (step scores), GRPO-VPS (confidence probes) or tree sampling
(segment values from the group's own tree, docs/tree.md)."""

AdvantageEstimator = Literal["grpo", "ps", "vps", "tree"]
"""The built-in token-advantage estimators (:data:`psgrpo.advantages.ADVANTAGE_ESTIMATORS`), one per
:data:`Method` and named as it; ``advantage_estimator`` may name any other registered one."""

RETIRED_ESTIMATORS: dict[str, AdvantageEstimator] = {"outcome": "grpo", "process": "ps", "hybrid": "vps"}
"""Estimator names used before the methods and estimators shared one vocabulary → the current name."""

ProcessMode = Literal["step", "min", "pure_min", "reward_to_go"]
"""How the ``ps`` estimator turns normalised step scores into token advantages (:data:`psgrpo.advantages.PS_MODES`)."""

PsAdvantageMode = Literal["auto", ProcessMode]
"""``ps_advantage_mode``: a :data:`ProcessMode`, or ``auto``, the one no gamed solution beats the honest
one with for the step scorer (``step`` for the arithmetic verifier, ``min`` otherwise; docs/robustness.md)."""

ScorerErrorPolicy = Literal["raise", "outcome"]
"""What a step scorer failure does: stop training, or fall back to the outcome advantage."""

VpsBoundaries = Literal["entropy", "markers"]
"""Where GRPO-VPS segments end: high-entropy tokens, or the PS segmenter's step ends."""

TreeBoundaries = Literal["tokens", "lines", "entropy"]
"""Where ``tree`` branches: after every S tokens, at the last line end within them, or before the
highest-entropy token of their second half (docs/tree.md)."""

VpsProbe = Literal["answer", "gold_suffix"]
"""What GRPO-VPS probes after each boundary: the gold answer (the paper) or the rest of the gold solution."""

ZeroVarianceMode = Literal["keep", "drop"]
"""GRPO-VPS groups whose outcome rewards are all equal: learn from α·ΔC alone, or drop them."""

TruncatedMode = Literal["outcome", "keep", "zero"]
"""GRPO-VPS completions cut at the length limit: A_i only, the hybrid formula, or no update."""

KLSchedule = Literal["none", "linear", "cosine"]
"""Decay of the KL coefficient β over training."""

Curriculum = Literal["none", "linear"]
"""Order of training prompts by difficulty."""

ProbeBoundaries = Literal["step_end", "entropy", "entropy_snapped", "gold_suffix"]
"""Where ``psgrpo diagnose`` probes: step-line ends, the trainer's entropy cuts, or those cuts moved out of numbers."""

ArithVariant = Literal["arith", "arith-long", "arith-distractor", "arith-hard"]
"""The synthetic arith datasets (:data:`psgrpo.data.arith.ARITH_VARIANTS` holds their shapes)."""


# TRL's own string options (trl 1.16 accepts exactly these; it checks some of them only at the first
# loss computation, after the model has loaded, so psgrpo checks them at config time).

TrlLossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
TrlScaleRewards = Literal["group", "batch", "none"]
TrlImportanceSamplingLevel = Literal["token", "sequence"]
TrlMultiObjectiveAggregation = Literal["sum_then_normalize", "normalize_then_sum"]


def allowed(option_type: Any) -> tuple[str, ...]:
    """The allowed values of a ``Literal`` option type, in definition order."""
    values = get_args(option_type)
    if not values:
        raise TypeError(f"{option_type!r} is not a Literal option type")
    return values


METHODS: tuple[str, ...] = allowed(Method)
"""``grpo``, ``ps``, ``vps``, ``tree``: the values of ``--method`` (and of ``psgrpo compare --methods``)."""


def _listing(values: Iterable[Any]) -> str:
    return ", ".join(repr(v) for v in values)


def check_choice(option: str, value: Any, option_type: Any) -> None:
    """Raise ValueError naming ``option``, the bad ``value`` and the allowed values.

    Args:
        option: the config field name, as the user writes it (``vps_boundaries``).
        value: the value given (from the CLI, a YAML file or Python).
        option_type: a ``Literal`` from this module.
    """
    values = allowed(option_type)
    if value not in values:
        raise ValueError(f"{option}={value!r} is not allowed; choose one of {_listing(values)}")


def check_registered(option: str, value: Any, registry: Iterable[str], hint: str = "") -> None:
    """Raise ValueError when ``value`` is not a registered name (``registry``: the registry's names)."""
    names = sorted(registry)
    if value not in names:
        raise ValueError(f"{option}={value!r} is not registered; choose one of {_listing(names)}{hint}")


def check_number(
    option: str,
    value: float | int | None,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
) -> None:
    """Refuse a non-finite or out-of-range numeric option with a message naming it.

    Args:
        option: the config field name.
        value: the value; ``None`` only passes with ``allow_none``.
        low, high: bounds (``None``: unbounded on that side).
        low_open, high_open: exclude the bound itself.
    """
    if value is None:
        if allow_none:
            return
        raise ValueError(f"{option} must be a number, got None")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{option} must be a number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value):
        raise ValueError(
            f"{option}={value} is not a finite number: a NaN or infinite value would reach the weights"
        )
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        interval = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise ValueError(f"{option}={value} is outside its range {interval}")


def json_object_option(name: str, value: dict | str | None) -> dict:
    """A dict option given as a dict (YAML), a JSON object string (CLI) or ``None`` (→ ``{}``).

    Raises:
        ValueError: naming the option, when the value is not a JSON object.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f"{name} must be a JSON object, got {value!r}: {err}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {value!r}")
    return value


def check_finite_floats(config: Any) -> None:
    """Refuse NaN or infinite values in every float field (psgrpo's and TRL's): they would reach the weights."""
    for f in fields(config):
        value = getattr(config, f.name, None)
        for item in value if isinstance(value, (list, tuple)) else [value]:  # reward_weights [nan, 1.0] too
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(
                    f"{f.name}={value} is not a finite number: a NaN or infinite value would reach the weights"
                )


def check_keyword_arguments(option: str, target: Any, kwargs: dict[str, Any]) -> None:
    """``kwargs`` must bind to ``target``'s signature, with the type of each parameter's default.

    Where the default is a bool the value must be a bool; a number, a finite number; a string, a string.
    """
    signature = inspect.signature(target)
    try:
        signature.bind(**kwargs)
    except TypeError as err:
        names = [p for p in signature.parameters if p != "self"]
        raise ValueError(f"{option}={kwargs!r}: {err}; accepted: {', '.join(names)}") from None
    for key, value in kwargs.items():
        default = signature.parameters[key].default if key in signature.parameters else None
        if isinstance(default, bool):
            # A string such as "no" or "false" is truthy: taken as given, it would silently mean True.
            if not isinstance(value, bool):
                raise ValueError(
                    f"{option}[{key!r}]={value!r} must be true or false (a JSON boolean), not {type(value).__name__}"
                )
        elif isinstance(default, (int, float)):
            check_number(f"{option}[{key!r}]", value)
        elif isinstance(default, str) and not isinstance(value, str):
            raise ValueError(f"{option}[{key!r}]={value!r} must be a string, not {type(value).__name__}")


def parameter_sections(cls: type, sections: dict[str, tuple[str, ...]]) -> str:
    """TRL-style ``Parameters:`` docs of ``cls``'s own fields, grouped by ``sections``, from their help texts."""
    import textwrap

    lines = ["", "    Parameters:"]
    for title, names in sections.items():
        lines += ["", f"        > {title}", ""]
        for f in fields(cls):
            own = f.name in names or any(n.endswith("_") and f.name.startswith(n) for n in names)
            if not own or "help" not in f.metadata:
                continue
            default = f.default_factory() if callable(f.default_factory) else f.default
            lines.append(f"        {f.name} (*optional*, defaults to `{default!r}`):")
            lines += textwrap.wrap(
                f.metadata["help"], width=100, initial_indent=" " * 12, subsequent_indent=" " * 12
            )
    return "\n".join(lines) + "\n"
