"""Credit methods, registered by name: everything the package needs to know about one method, in one spec.

A method is a :class:`MethodSpec`. The trainer, the config checks, the compatibility table, the
diagnostics, ``psgrpo inspect`` and ``psgrpo compare`` look a method up here; none of them names
one. The built-ins live one per package, each in its ``spec.py``::

    psgrpo/grpo/spec.py   outcome GRPO (no process signal)
    psgrpo/ps/spec.py     PS-GRPO: step scores from a verifier, a PRM or your function
    psgrpo/vps/spec.py    GRPO-VPS: the policy's confidence in the gold answer
    psgrpo/tree/spec.py   credit from tree-sampled groups

A method of your own is one file (docs/design.md, "Add a method")::

    from psgrpo.methods import MethodSpec, register_method

    register_method(MethodSpec(name="position", summary="…", estimator="position", …))

and ``psgrpo train --method my_methods.py:position`` imports that file first (:func:`load_method`).

Layering: this module and the specs import no trainer and, at module level, no signal module (the
configuration is checked before anything is built): a spec's signal factory imports its signal when
the trainer calls it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import keyword
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

from psgrpo.registry import Registry

BUILTIN_METHODS = ("grpo", "ps", "vps", "tree")
"""The methods psgrpo ships, in the order they are documented; each is ``psgrpo/<name>/spec.py``."""


@dataclass(frozen=True)
class Refusal:
    """A TRL option × method combination the config refuses: the two options it names, when, and the message."""

    options: tuple[str, str]
    applies: Callable[[Any], bool]
    message: Callable[[Any], str]
    summary: str
    """One line for docs/compatibility.md."""


@dataclass(frozen=True)
class InspectView:
    """How ``psgrpo inspect`` shows a method's credit.

    Attributes:
        legend: the paragraph under the colour scales: what colours a segment and what A_t is.
        signal_label: ``config → label`` of the value that colours each segment (e.g. ``"ΔC_k"``);
            ``None``: no process signal (grpo).
        unit: what one coloured piece is called ("step", "segment", "level").
        options: the method's options shown in the page header (they shape the credit).
        fill: ``(view, record, row, token_advantages (T,), offsets, config)``: sets the segments (and probe
            markers, notes) of one completion's :class:`psgrpo.credit_views.CompletionView` from the method's
            credit record; ``None``: the completion is one uncoloured segment.
        probe_note: the legend explains the probe markers (vps).
    """

    legend: str
    signal_label: Callable[[Any], str] | None = None
    unit: str = "step"
    options: tuple[str, ...] = ()
    fill: Callable[[Any, Any, int, Any, Any, Any], None] | None = None
    probe_note: bool = False


def _no_check(config: Any) -> None:
    return None


def _always(config: Any) -> bool:
    return True


@dataclass(frozen=True)
class MethodSpec:
    """One credit method, as the package sees it.

    Attributes:
        name: what ``--method`` takes.
        summary: one line: where a token's credit comes from (``--help``, the README table).
        estimator: the name of its estimator in :data:`psgrpo.advantages.ADVANTAGE_ESTIMATORS`.
        options: the dataclass of its options (fields prefixed with the method's name; each with a
            help text), a base of the config class; ``None``: no options.
        section: the title of its options section in ``--help`` and docs/options.md.
        section_fields: the fields of that section: names, or prefixes ending in ``_``.
        check: refuses bad values of its options, and combinations it cannot serve when it is the
            method; runs whenever a config is built, before anything loads.
        signal: ``(trainer, step_scorer) -> ProcessSignal``, called once per trainer (its options are read
            then and bound); ``None``: no process signal (A_t = A_i). It imports the signal module inside.
        token_credit: ``config → bool``, whether TRL's loss gets advantages that vary along a
            completion (False where the process term is weighted 0).
        process_weight: ``config → "option=value"`` of the weight of its process term, for messages.
        process_units: ``"unitless"`` (a scaled score or a probability difference: refused with
            ``scale_rewards='none'``, whose A_i stays in reward units) or ``"reward"`` (in reward
            units like that A_i).
        refusals: TRL options it cannot be combined with.
        inspect: how ``psgrpo inspect`` shows its credit.
        diagnostics: ``(decoded, credit, config) -> (pairs, places)``, with ``decoded`` the batch's
            ``(text, token offsets)`` and ``credit`` its credit record: ``(process value, segment is
            wrong)`` pairs for diag/process_auc, and where its boundaries fall (diag/boundary_*);
            ``None``: no process diagnostics.
        colour: its matplotlib colour in ``psgrpo compare``'s plots (``None``: the next free one).
        rollout: how its groups are sampled in training: ``"independent"`` (TRL's G samples per prompt)
            or ``"tree"`` (one tree per prompt, :mod:`psgrpo.tree.sampling`).
        scores_steps: its signal scores steps with a step scorer (the trainer's ``step_scorer=`` callable);
            the trainer refuses ``step_scorer=`` where this is ``False``. ``None`` (the default of a method
            registered elsewhere): not known, nothing refused.
        probes_past_completion: its signal runs the model on tokens appended after (a prefix of) the completion
            (vps's probes), so a prompt that leaves less than ``max_completion_length`` of the model's context is
            refused at trainer build (it would fail the step whose completion runs long), not only warned about.
    """

    name: str
    summary: str
    estimator: str
    options: type | None = None
    section: str | None = None
    section_fields: tuple[str, ...] = ()
    check: Callable[[Any], None] = _no_check
    signal: Callable[[Any, Any], Any] | None = None
    token_credit: Callable[[Any], bool] = _always
    process_weight: Callable[[Any], str] | None = None
    process_units: Literal["unitless", "reward"] = "unitless"
    refusals: tuple[Refusal, ...] = ()
    inspect: InspectView = field(default_factory=lambda: InspectView(legend=""))
    diagnostics: Callable[[Any, Any, Any], tuple[list[tuple[float, bool]], list[str]]] | None = None
    colour: str | None = None
    rollout: Literal["independent", "tree"] = "independent"
    scores_steps: bool | None = None
    probes_past_completion: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(
                f"a method name must be an identifier (it prefixes its options), got {self.name!r}"
            )
        if self.options is not None and not is_dataclass(self.options):
            raise TypeError(f"method {self.name!r}: options must be a dataclass, got {self.options!r}")


_METHODS: Registry[MethodSpec] = Registry("method")


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add ``spec`` to the methods (its name must be new); returns it. The config class gains its options."""
    _METHODS.register(spec.name)(spec)
    _config_classes.clear()
    return spec


def unregister_method(name: str) -> None:
    """Remove a method registered from outside (tests, notebooks); the built-ins stay."""
    if name in BUILTIN_METHODS:
        raise ValueError(f"{name!r} is a built-in method; it cannot be removed")
    _METHODS.unregister(name)
    _config_classes.clear()


def _load_builtins() -> None:
    if BUILTIN_METHODS[0] not in _METHODS:
        for name in BUILTIN_METHODS:
            importlib.import_module(f"psgrpo.{name}.spec")


def get_method(name: str) -> MethodSpec:
    """The spec registered as ``name``; ValueError listing the registered methods otherwise."""
    _load_builtins()
    return _METHODS.get(name)


def method_names() -> list[str]:
    """Every registered method: the built-ins in their documented order, then the others by name."""
    _load_builtins()
    return [*BUILTIN_METHODS, *(n for n in _METHODS.names() if n not in BUILTIN_METHODS)]


def all_methods() -> list[MethodSpec]:
    return [get_method(name) for name in method_names()]


def method_help() -> str:
    """The help text of ``--method``: every registered method with its summary."""
    listed = "; ".join(f"'{s.name}': {s.summary}" for s in all_methods())
    return (
        f"Credit assignment: {listed}. A method of your own: path/to/file.py:NAME or package.module:NAME, "
        "a file that registers it (docs/design.md, 'Add a method')."
    )


def estimator_for(config: Any) -> str:
    """The registered estimator ``config`` selects: ``advantage_estimator`` if set, else its method's own."""
    return config.advantage_estimator or get_method(config.method).estimator


def estimator_options(spec: MethodSpec, config: Any, estimator: Callable[..., Any]) -> dict[str, Any]:
    """``spec``'s options as its estimator's keywords, read once from ``config`` and bound by the trainer.

    Option ``<method>_<name>`` becomes keyword ``<name>`` (``lambda`` → ``lambda_``: a Python keyword),
    for the keywords ``estimator`` takes: ``ps_lambda`` → ``lambda_``, ``vps_alpha`` → ``alpha``. A signal
    passes only tensors (and values it resolves itself, which win).
    """
    if spec.options is None:
        return {}
    parameters = inspect.signature(estimator).parameters
    prefix, bound = f"{spec.name}_", {}
    for option in fields(spec.options):
        if option.name.startswith(prefix):
            name = option.name.removeprefix(prefix)
            name = f"{name}_" if keyword.iskeyword(name) else name
            if name in parameters:
                bound[name] = getattr(config, option.name)
    return bound


def load_method(value: str) -> str:
    """``--method``'s value → a registered method's name, importing a method of your own first.

    ``"ps"`` stays ``"ps"``; ``"my_methods.py:position"`` (a file) or ``"my_pkg.methods:position"``
    (a module on the path) imports it, which registers the method, and gives ``"position"``.

    Raises:
        ValueError: the file or module cannot be found, or registers no method of that name.
    """
    if ":" not in value:
        return value
    where, _, name = value.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"--method {value}: no file {where} (expected path/to/file.py:NAME)")
        module_name = f"psgrpo_method_{path.stem}"
        if module_name not in sys.modules:
            spec = importlib.util.spec_from_file_location(module_name, path.resolve())
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
    else:
        try:
            importlib.import_module(where)
        except ModuleNotFoundError as err:
            raise ValueError(f"--method {value}: cannot import {where} ({err})") from None
    if name not in method_names():
        raise ValueError(
            f"--method {value}: {where} registers no method {name!r} "
            f"(registered: {', '.join(method_names())}); call psgrpo.methods.register_method there"
        )
    return name


def resolve_method_flag(argv: list[str]) -> list[str]:
    """A command line with ``--method path/to/file.py:NAME`` (or ``=``) as ``--method NAME``, the file imported.

    The commands call it before they build their parser, so the method's options are in it (``--help``
    lists them) and its name is among ``--method``'s choices.
    """
    argv = list(argv)
    for i, arg in enumerate(argv):
        if arg == "--method" and i + 1 < len(argv):
            argv[i + 1] = load_method(argv[i + 1])
        elif arg.startswith("--method="):
            argv[i] = "--method=" + load_method(arg.partition("=")[2])
    return argv


# --------------------------------------------------------------------------------------------
# The config class: TRL's GRPOConfig plus every registered method's options


_config_classes: dict[tuple[type, ...], type] = {}


def extra_options() -> tuple[type, ...]:
    """The options classes of registered methods that are not bases of ``ProcessGRPOConfig`` yet."""
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig

    return tuple(
        s.options
        for s in all_methods()
        if s.options is not None and not issubclass(ProcessGRPOConfig, s.options)
    )


def config_class() -> type:
    """``ProcessGRPOConfig``, or a subclass that also has the options of methods registered from outside.

    The CLI parses into it; in Python, build your config with it after registering your method::

        Config = config_class()
        args = Config(output_dir="out", method="position", position_gamma=0.9)
    """
    from dataclasses import make_dataclass

    from psgrpo.config.process_grpo_config import ProcessGRPOConfig

    extra = extra_options()
    if not extra:
        return ProcessGRPOConfig
    if extra not in _config_classes:
        taken = {f.name for f in fields(ProcessGRPOConfig)}
        for options in extra:
            clash = sorted(taken & {f.name for f in fields(options)})
            if clash:
                raise ValueError(
                    f"{options.__name__} redefines config options {clash}; prefix them with the method's name"
                )
        help_and_choices = {"help": method_help(), "choices": method_names()}  # every method, yours too
        method = ("method", str, field(default="grpo", metadata=help_and_choices))
        name = "ProcessGRPOConfig_" + "_".join(o.__name__ for o in extra)
        cls = make_dataclass(name, [method], bases=(*extra, ProcessGRPOConfig))
        cls.__module__, cls.__doc__ = __name__, ProcessGRPOConfig.__doc__  # (module= is Python ≥ 3.12)
        setattr(sys.modules[__name__], name, cls)  # picklable by name (transformers saves training_args.bin)
        _config_classes[extra] = cls
    return _config_classes[extra]
