"""``--help`` for people: one line per option, psgrpo's own options first, then the TRL options set most.

``psgrpo train --help`` used to print every field of TRL's ``GRPOConfig`` and transformers'
``TrainingArguments`` (1,757 lines, psgrpo's own options from line 1,400). :func:`short_help` prints
instead, for each of the command's dataclasses, the fields psgrpo declares (grouped as
:func:`psgrpo.config.process_grpo_config.config_sections` groups them), then the options of
:data:`COMMON_TRL_OPTIONS` the command has, each on one line: the flag, the first clause of its help
and the one default the run uses (the parser's default after the ``--config`` layers). ``--help-all``
(:data:`HELP_ALL`) prints argparse's full help.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

try:  # Python >= 3.14: a class may hold no __annotations__ until asked (PEP 649), as make_dataclass builds them
    from annotationlib import Format, get_annotations

    def annotated_names(cls: type) -> set[str]:
        """The names ``cls`` itself annotates (not its bases), without failing on names they leave undefined."""
        return set(get_annotations(cls, format=Format.FORWARDREF))

except ImportError:  # Python 3.11-3.13
    from inspect import get_annotations

    def annotated_names(cls: type) -> set[str]:
        """The names ``cls`` itself annotates (not its bases), without failing on names they leave undefined."""
        return set(get_annotations(cls))


SUPPRESS = "==SUPPRESS=="
"""argparse's ``SUPPRESS`` (a default that sets nothing); argparse itself is only the parsers' business."""

HELP_ALL = "--help-all"
"""The flag that prints every option (argparse's full help, TRL's and transformers' options included)."""

WIDTH = 120
"""Characters per line of the short help."""

FOREIGN_PACKAGES = ("trl", "transformers")
"""Packages whose dataclass fields are not psgrpo's own (only :data:`COMMON_TRL_OPTIONS` of them are shown)."""

COMMON_TRL_OPTIONS: dict[str, tuple[str, ...]] = {
    "Model (TRL ModelConfig)": (
        "model_name_or_path",
        "dtype",
        "attn_implementation",
        "use_peft",
        "lora_r",
        "lora_alpha",
        "lora_target_modules",
    ),
    "Generation (TRL GRPOConfig)": (
        "num_generations",
        "max_completion_length",
        "temperature",
        "top_p",
        "top_k",
        "repetition_penalty",
        "generation_batch_size",
        "use_vllm",
        "vllm_mode",
    ),
    "Optimisation (TRL GRPOConfig, transformers TrainingArguments)": (
        "learning_rate",
        "lr_scheduler_type",
        "warmup_steps",
        "weight_decay",
        "max_grad_norm",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "max_steps",
        "num_train_epochs",
        "beta",
        "epsilon",
        "loss_type",
        "scale_rewards",
        "num_iterations",
        "gradient_checkpointing",
        "seed",
        "use_cpu",
    ),
    "Logging and checkpoints (transformers TrainingArguments)": (
        "output_dir",
        "logging_steps",
        "report_to",
        "save_steps",
        "save_total_limit",
        "run_name",
        "log_completions",
        "disable_tqdm",
        "push_to_hub",
    ),
}
"""The TRL / transformers options a GRPO user sets most, grouped; ``--help-all`` lists the other ~230."""


TITLES = {"TaskConfig": "Task and data", "EvalTaskConfig": "Task and data"}
"""Section titles of dataclasses whose docstring's first line is not one."""


def own_fields(cls: type) -> list[str]:
    """Names of the fields that ``cls`` and its bases outside :data:`FOREIGN_PACKAGES` declare (new ones, and
    TRL fields they override), in field order."""
    own: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] not in FOREIGN_PACKAGES:
            own |= annotated_names(base)
    return [f.name for f in fields(cls) if f.name in own]


def first_clause(text: str) -> str:
    """The help text's first sentence, without the defaults it states (the line shows the run's own)."""
    text = " ".join(text.replace("%%", "%").split())
    text = re.sub(r"\s*\((?:the )?default[^()]*\)", "", text, flags=re.IGNORECASE)
    text = re.sub(r",\s*default\b(?=[),;])", "", text)
    text = re.sub(r"\s*\bDefault(?:s to)?:?\s[^.;]*[.;]?", "", text)
    match = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)\.\s|;\s", text)
    return (text[: match.start()] if match else text).rstrip(".;: ,")


def show_value(value: Any) -> str:
    """A default as the user types it: ``true``/``false``, lists space-separated, enums by value."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return " ".join(show_value(item) for item in value) or "none"
    if value is None or value == SUPPRESS:
        return "none"
    text = str(getattr(value, "value", value)).replace("\n", "\\n")
    return text if len(text) <= 40 else "…" + text[-39:]


def option_line(action: Any) -> str:
    """``  --name VALUE   help (default: X)`` on one line of at most :data:`WIDTH` characters."""
    flag = next(o for o in action.option_strings if o.startswith("--"))
    if action.choices is not None and len(str(list(action.choices))) <= 40:
        metavar = "{" + ",".join(str(getattr(c, "value", c)) for c in action.choices) + "}"
    elif getattr(action.type, "__name__", "") == "string_to_bool":
        metavar = "{true,false}"
    elif action.nargs == 0:
        metavar = ""
    else:
        metavar = action.dest.upper() if action.nargs in (None, "?") else action.dest.upper() + " …"
    head = f"  {flag} {metavar}".rstrip()
    value = getattr(action, "shown_default", action.default)
    default = f" (default: {show_value(value)})"
    text = first_clause(action.help or "")
    room = WIDTH - max(len(head), 34) - 2 - len(default)
    if len(text) > room:
        text = text[: max(room - 1, 0)].rstrip() + "…"
    return f"{head:<34}  {text}{default}"


def _sections_of(cls: type) -> Mapping[str, tuple[str, ...]]:
    """Groups of ``cls``'s own fields: ``CONFIG_SECTIONS`` for ProcessGRPOConfig, else one group."""
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig, config_sections

    if issubclass(cls, ProcessGRPOConfig):  # with the sections of methods registered from outside
        return config_sections()
    title = TITLES.get(cls.__name__) or (cls.__doc__ or cls.__name__).strip().splitlines()[0].rstrip(".")
    return {title.replace("``", ""): tuple(own_fields(cls))}


def grouped_own_options(dataclass_types: Iterable[type]) -> list[tuple[str, list[str]]]:
    """``(title, option names)`` of the command's own options, its last dataclass first (``EvalConfig``,
    ``InspectConfig``, ``ProcessGRPOConfig``: the command's own, before the task options it shares)."""
    groups: list[tuple[str, list[str]]] = []
    for cls in reversed(list(dataclass_types)):
        if cls.__module__.split(".")[0] in FOREIGN_PACKAGES:
            continue
        names = own_fields(cls)
        placed: set[str] = set()
        for title, keys in _sections_of(cls).items():
            members = [
                n
                for n in names
                if n not in placed and (n in keys or any(k.endswith("_") and n.startswith(k) for k in keys))
            ]
            placed |= set(members)
            if members:
                groups.append((title, members))
        rest = [n for n in names if n not in placed]
        if rest:
            groups.append(("Other options psgrpo sets", rest))
    return groups


def short_help(parser: Any, dataclass_types: Sequence[type]) -> str:
    """The one-line-per-option help of ``parser`` (see the module docstring)."""
    by_dest: dict[str, Any] = {}
    for action in parser._actions:
        if action.option_strings and not any(o.startswith("--no_") for o in action.option_strings):
            by_dest.setdefault(action.dest, action)
    with_trl = any(
        cls.__module__.split(".")[0] in FOREIGN_PACKAGES or cls.__mro__[1] is not object
        for cls in dataclass_types
    )
    what = "psgrpo's options and the TRL options set most" if with_trl else "One line per option"
    lines = [
        f"usage: {parser.prog} [--config FILE_OR_NAME] [--OPTION VALUE ...]",
        "",
        f"{what}; `{parser.prog} {HELP_ALL}` lists all {len(by_dest)}, with full texts.",
        "Each default is the value a run with these --config files uses (docs/options.md explains each option).",
    ]
    shown: set[str] = {"help", HELP_ALL[2:].replace("-", "_")}
    own = grouped_own_options(dataclass_types)
    common = [(title, list(names)) for title, names in COMMON_TRL_OPTIONS.items()]
    for title, names in [("Recipe", ["config"]), *own, *common]:
        members = [by_dest[n] for n in names if n in by_dest and n not in shown]
        if not members:
            continue
        shown |= {action.dest for action in members}
        lines += ["", f"{title}:", *(option_line(action) for action in members)]
    return "\n".join(lines) + "\n"
