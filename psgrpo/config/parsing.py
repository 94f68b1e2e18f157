"""``ConfigParser``: TRL's ``TrlParser`` that also checks what a YAML config file sets.

``TrlParser`` turns a YAML file's values into argparse *defaults*, and argparse checks
``choices`` only for values typed on the command line. A typo in a recipe
(``vps_boundaries: marker``) therefore used to pass silently. This parser checks every YAML
value of an option that has choices (psgrpo's ``Literal`` options, and TRL's and
transformers' own) before parsing, and names the file, the option, the value and the allowed
values. Errors raised by the dataclasses' ``__post_init__`` (ranges, registries) are re-raised
with the config file named, since the value may have come from it.

A command may also be given ``foreign_config_keys``, the options of another command: a YAML file
that sets one of them this command lacks is that command's config, and every one of them is
dropped (one log line) instead of refused. So ``psgrpo eval --config configs/arith_hard.yaml``
reads a *training* recipe's task and model and leaves its training options alone, its
``output_dir`` and sampling settings included; a key that neither command knows is still an error.

A component's keyword arguments belong to it (:data:`COMPONENT_KWARGS`): a recipe's
``step_scorer_kwargs`` are its ``step_scorer``'s, so ``--step_scorer prm`` over the demo recipe drops
them (one log line) unless ``--step_scorer_kwargs`` is given too (:func:`drop_foreign_component_kwargs`).
A malformed YAML file is one error naming the file and line; an unknown flag is one error with the
nearest known options ("did you mean --dataset?"). Every error argparse itself finds (a value outside
the choices, an ambiguous prefix such as ``--lr``, a YAML value of the wrong type) is a
:class:`ConfigError` in one line instead of argparse's usage dump (hundreds of lines for ``train``):
the error and a "did you mean" where one exists (the command line adds where ``--help`` lists the
options); a bad value that came from a YAML file names the file and the key (:meth:`ConfigParser.error`).

**Help.** ``--help`` prints one line per option, the command's own options first, then the TRL
options set most (:mod:`psgrpo.config.short_help`); ``--help-all`` prints argparse's full help.

**Layers.** ``--config`` may be given several times: each file's values go over the earlier files',
and flags over all of them, the kwargs rule above applying between files too. ``psgrpo train``,
``inspect`` and ``compare`` put the embedded demo recipe first (:func:`psgrpo.loading.with_default_recipe`),
so a three-line YAML changes three values of the demo and keeps the rest, and ``--help`` shows the
values the run would use. ``--config NAME`` names a packaged recipe (:func:`recipe_names`: ``demo``,
``arith-hard``, ``gsm8k-qwen2.5-0.5b``) from any directory. A YAML key that no option has is refused,
naming its file, before any value is checked (so it is not hidden by another error).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from trl import TrlParser

from psgrpo.config.kernel_caches import kernel_cache_problem
from psgrpo.config.short_help import HELP_ALL, short_help

UNUSED_ARGUMENTS = re.compile(r"Some specified arguments are not used by the HfArgumentParser: (\[.*\])")
ABBREVIATIONS = {
    "lr": "learning_rate",
    "batch_size": "per_device_train_batch_size",
    "bs": "per_device_train_batch_size",
    "epochs": "num_train_epochs",
    "steps": "max_steps",
    "model": "model_name_or_path",
    "kl": "beta",
    "kl_coef": "beta",
    "grad_accum": "gradient_accumulation_steps",
    "max_new_tokens": "max_completion_length",
    "max_tokens": "max_completion_length",
    "group_size": "num_generations",
}
"""Names people type from other tools → the option psgrpo (TRL) calls it, offered as "did you mean"."""
COMPONENT_KWARGS = {"step_scorer": "step_scorer_kwargs", "segmenter": "segmenter_kwargs"}
"""``component option → its keyword-arguments option``: the kwargs of one layer belong to that layer's component."""


class ConfigError(ValueError):
    """A bad option value; the message names the option, the value, what is allowed and its source."""


logger = logging.getLogger("psgrpo")


class ConfigParser(TrlParser):
    """``TrlParser`` with validation of config-file values (see the module docstring).

    Args:
        dataclass_types, **kwargs: as ``TrlParser``.
        foreign_config_keys: another command's options (see the module docstring).
    """

    config_path: str | None = None
    command_line: dict[str, str] = {}  # noqa: RUF012 - replaced per parse; the options typed and their values

    def __init__(
        self, dataclass_types: Any, foreign_config_keys: Collection[str] = (), **kwargs: Any
    ) -> None:
        super().__init__(dataclass_types, **kwargs)
        self.foreign_config_keys = frozenset(foreign_config_keys)
        self.config_sources: dict[str, str] = {}
        """Which ``--config`` file set each key (the latest parse)."""
        self.add_argument(
            "--config",
            action="append",
            default=argparse.SUPPRESS,  # parse_args_and_config takes every --config out before argparse runs
            metavar="FILE_OR_NAME",
            help=config_help({action.dest for action in self._actions}, bool(self.foreign_config_keys)),
        )
        for actions in (self._actions, self._optionals._group_actions):  # list it first, after --help
            actions.insert(1, actions.pop())
        self.add_argument(
            HELP_ALL, action=HelpAllAction, help="show every option (TRL's and transformers' too) and exit"
        )
        self.show_all_options = False
        self.pending_notes: list[str] = []
        # True: the command logs pending_notes itself (log_pending_notes) once its own checks have passed
        self.defer_notes = False
        self._initial_defaults = {id(action): action.default for action in self._actions}
        self.one_value_options = one_value_fields(self.dataclass_types)

    def show_default(self, option: str, shown: str) -> None:
        """``--help`` gives ``shown`` as ``option``'s default: one decided at run time (``as trained``)."""
        self._option_string_actions[f"--{option}"].shown_default = shown  # type: ignore[attr-defined]

    def parse_args_and_config(
        self,
        args: Iterable[str] | None = None,
        return_remaining_strings: bool = False,
        fail_with_unknown_args: bool = True,
        separate_remaining_strings: bool = False,
    ) -> tuple[Any, ...]:
        """As ``TrlParser.parse_args_and_config``, with every ``--config`` layered in order (module docstring);
        a YAML key that no option has is refused before any value is checked."""
        args = list(args) if args is not None else sys.argv[1:]
        for (
            action
        ) in self._actions:  # a parse starts from the dataclasses' defaults, not the last parse's files
            action.default = self._initial_defaults.get(id(action), action.default)
        paths, args = split_config_args(args)
        self.config_path = str(paths[-1]) if paths else None
        self._option_string_actions["--config"].shown_default = [path.name for path in paths]  # type: ignore[attr-defined]
        self.command_line = typed_options(args)
        self.pending_notes = []  # logged once the whole command line has parsed
        try:
            config = self.load_layers(paths)
            env = {key: str(value) for key, value in (config.pop("env", None) or {}).items()}  # TRL's `env:`
            if (
                problem := kernel_cache_problem(env)
            ) is not None:  # the CLI checked the shell's before parsing
                raise ConfigError(f"{self.config_sources.get('env', 'config file')}: env: {problem}")
            os.environ.update(env)
            remaining = self.set_defaults_with_config(**config) if config else []
            if remaining and fail_with_unknown_args and not return_remaining_strings:
                files = sorted({self.config_sources.get(key[2:], "config file") for key in remaining[::2]})
                raise ConfigError(
                    f"unknown option(s) {remaining} in {' + '.join(files)}: not an option of this command"
                    f"{self.did_you_mean(str(remaining[::2]))} (`{self.prog} --help` lists them)"
                )
            output = self.parse_args_into_dataclasses(
                args=args, return_remaining_strings=return_remaining_strings
            )
        except ConfigError:
            raise
        except ValueError as err:
            unused = UNUSED_ARGUMENTS.search(str(err))
            if unused:
                raise ConfigError(
                    f"unknown option(s) {unused.group(1)}: not an option of this command"
                    f"{self.did_you_mean(unused.group(1))} (`{self.prog} --help` lists them)"
                ) from None
            source = (
                f" (options come from {' + '.join(map(str, paths))} and the command line)" if paths else ""
            )
            raise ConfigError(f"{err}{source}") from err
        if not self.defer_notes:
            self.log_pending_notes()
        if not return_remaining_strings:
            return output
        if separate_remaining_strings:
            return (*output[:-1], remaining, output[-1])
        return (*output[:-1], remaining + output[-1])

    def log_pending_notes(self) -> None:
        """Log (INFO) and clear the notes of the latest parse (:func:`drop_foreign_component_kwargs`)."""
        for note in self.pending_notes:
            logger.info("%s", note)
        self.pending_notes = []

    def file_sources(self) -> dict[str, str]:
        """``option → the --config file that set it`` for the options of the latest parse not typed as flags."""
        return {key: path for key, path in self.config_sources.items() if key not in self.command_line}

    def format_help(self) -> str:
        """The short help (:func:`~psgrpo.config.short_help.short_help`), or argparse's after ``--help-all``."""
        if self.show_all_options:
            return super().format_help()
        return short_help(self, self.dataclass_types)

    def _get_formatter(self) -> argparse.HelpFormatter:
        """``--help-all``'s formatter: one default per option (:class:`OneDefaultFormatter`)."""
        return OneDefaultFormatter(prog=self.prog, initial_defaults=getattr(self, "_initial_defaults", {}))

    def error(self, message: str) -> None:  # type: ignore[override]
        """argparse's error as one :class:`ConfigError` line (no usage dump), with a "did you mean"; a bad
        value that came from a ``--config`` file names the file and the key."""
        raise ConfigError(self.explain(message))

    def explain(self, message: str) -> str:
        """argparse's ``message`` in the user's terms (see :meth:`error`)."""
        ambiguous = re.match(r"ambiguous option: --([\w-]+)(?:=\S*)? could match (.*)", message)
        if ambiguous:
            name = ambiguous.group(1).replace("-", "_")
            matches = [m.strip() for m in ambiguous.group(2).split(",") if "-" not in m.strip()[2:]]
            guess = ABBREVIATIONS.get(name)
            hint = f"; did you mean --{guess}?" if guess else ""
            listed = ", ".join(matches[:6]) + (" …" if len(matches) > 6 else "")
            return f"--{name} is ambiguous: it starts {len(matches)} options ({listed}){hint}"
        bad = re.match(
            r"argument (--[\w-]+)[^:]*: invalid (?:choice: '?(.*?)'? \(choose from (.*)\)|(.*))$", message
        )
        if not bad:
            return message
        dest = bad.group(1)[2:].replace("-", "_")
        flag = f"--{dest}"
        if bad.group(2) is not None:
            value, choices = bad.group(2), [c.strip(" '") for c in bad.group(3).split(",")]
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.5)
            problem = f"{value!r} is not allowed; choose one of {', '.join(choices)}"
            problem += f"; did you mean {close[0]}?" if close else ""
        else:
            typed = re.match(r"invalid (\w+) value: (.*)", "invalid " + bad.group(4))
            kind = (
                {"int": "a whole number", "float": "a number"}.get(typed.group(1), typed.group(1))
                if typed
                else ""
            )
            problem = f"{typed.group(2)} is not {kind}" if typed else bad.group(4)
        source = self.config_sources.get(dest)
        if source and dest not in self.command_line:
            return f"{source}: {dest}: {problem}"
        return f"{flag}: {problem}"

    def load_layers(self, paths: Sequence[Path]) -> dict[str, Any]:
        """:func:`layer_config_files`, recording :attr:`config_sources`."""
        merged, self.config_sources = layer_config_files(paths)
        return merged

    def did_you_mean(self, unknown: str) -> str:
        """``"; did you mean --dataset?"`` for the flags in ``unknown`` (argparse's list as text), or ``""``."""
        known = [
            option for action in self._actions for option in action.option_strings if option.startswith("--")
        ]
        names = re.findall(r"'(?:--)?([A-Za-z][\w.-]*)'", unknown)
        matches = [match for name in names for match in close_options(name, known)]
        return f"; did you mean {' or '.join(dict.fromkeys(matches))}?" if matches else ""

    def set_defaults_with_config(self, **kwargs: Any) -> list[str]:
        kwargs = drop_foreign_component_kwargs(
            kwargs, self.command_line, source=self.config_path, notes=self.pending_notes
        )
        known = {action.dest for action in self._actions}
        # a file that sets a key only another command has (a training recipe given to eval) is that command's
        # config: its keys this command shares (output_dir, temperature …) are ignored too, per file, so a later
        # file of this command's own keeps its values
        files = {
            self.config_sources.get(key, self.config_path)
            for key in kwargs
            if key in self.foreign_config_keys and key not in known
        }
        if files:
            ignored = sorted(
                key
                for key in kwargs
                if key in self.foreign_config_keys and self.config_sources.get(key, self.config_path) in files
            )
            self.pending_notes.append(
                f"{self.prog}: {', '.join(sorted(map(str, files)))} {'is' if len(files) == 1 else 'are'} another "
                f"command's config; ignored: {', '.join(ignored)}"
            )
            kwargs = {key: value for key, value in kwargs.items() if key not in ignored}
        for action in self._actions:
            if action.dest not in kwargs:
                continue
            source = self.config_sources.get(action.dest, self.config_path)
            value = kwargs[action.dest]
            if action.dest in self.one_value_options and isinstance(value, (list, dict)):
                # argparse converts only string defaults: a list would reach the config and fail later (TypeError)
                what = "a list" if isinstance(value, list) else "a mapping"
                raise ConfigError(
                    f"{source or 'config file'}: {action.dest}: expected one value, got {what} ({value!r})"
                )
            if action.choices is not None:
                _check_config_value(action, kwargs[action.dest], source)
        return super().set_defaults_with_config(**kwargs)


class OneDefaultFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help with one default per option: ``(default: X)`` unless the help text states its own default
    and the run uses it; ``(this run: X)`` where a ``--config`` layer (the demo recipe) set another value."""

    def __init__(self, prog: str, initial_defaults: Mapping[int, Any], **kwargs: Any) -> None:
        super().__init__(prog, **kwargs)
        self.initial_defaults = initial_defaults

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "%(default)" in text:
            return text
        layered = action.default != self.initial_defaults.get(id(action), action.default)
        if layered:
            return f"{text} (this run: %(default)s)"
        if re.search(r"\bdefault", text, flags=re.IGNORECASE):
            return text
        return f"{text} (default: %(default)s)"


class HelpAllAction(argparse.Action):
    """``--help-all``: argparse's full help, every option with its whole text, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.pop("default", None)
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.show_all_options = True  # type: ignore[attr-defined]
        parser.print_help()
        parser.exit()


def check_unique_keys(path: str) -> dict[str, Any]:
    """The mapping of the YAML config file ``path``.

    Raises:
        ConfigError: naming the file and line, when a mapping sets a key twice (PyYAML keeps the last
        value silently, so the first line would read as the setting and not be), the file is not valid
        YAML or not a mapping.
    """
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(
                    f"{path}: line {line}: {key!r} is set twice (first on line {first_line[key]}); keep one"
                )
            first_line[key] = line
        return loader.construct_mapping(node)

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    with open(path) as f:
        try:
            loaded = yaml.load(f, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
            what = " ".join(filter(None, (err.context, err.problem)))
            raise ConfigError(
                f"{path}: {where}not valid YAML ({what}); expected `option: value` lines"
            ) from None
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from None
    if loaded is None:  # an empty file (or only comments) sets nothing
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"{path}: a config file holds `option: value` lines (a YAML mapping), not a {type(loaded).__name__}"
        )
    return loaded


def close_options(name: str, known: Sequence[str], n: int = 2) -> list[str]:
    """The ``known`` flags nearest to the unknown option ``name`` (difflib), best first.

    A known option that the unknown one starts with (``--dataset`` for ``dataset_name``) comes first.
    """
    flag = "--" + name.lstrip("-").replace("-", "_")
    candidates = sorted({"--" + option[2:].replace("-", "_") for option in known})
    prefixes = sorted((o for o in candidates if flag.startswith(o + "_")), key=len, reverse=True)
    similar = difflib.get_close_matches(flag, candidates, n=n, cutoff=0.75)
    return list(dict.fromkeys([*prefixes[:1], *similar]))[:n]


def typed_options(args: Sequence[str]) -> dict[str, str]:
    """``{option: value}`` of the ``--option value`` and ``--option=value`` pairs in ``args`` (``-`` read as ``_``)."""
    typed: dict[str, str] = {}
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        name, equals, value = arg[2:].partition("=")
        if not equals:
            following = args[index + 1] if index + 1 < len(args) else ""
            value = "" if following.startswith("--") else following
        typed[name.replace("-", "_")] = value
    return typed


def drop_foreign_component_kwargs(
    base: Mapping[str, Any],
    override: Mapping[str, Any],
    source: str | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """``base`` (a config layer) without the kwargs of a component that ``override`` (a later layer) replaces.

    For each :data:`COMPONENT_KWARGS` pair: when ``override`` sets the component to another value than
    ``base`` and does not set its kwargs, ``base``'s kwargs for it are dropped (they belong to
    ``base``'s component; the demo recipe's ``step_scorer_kwargs`` would otherwise reach the PRM). Each drop
    appends one sentence to ``notes``, which the parser logs once the whole command line has parsed, or
    (``ConfigParser.defer_notes``: ``psgrpo train``, ``inspect``, ``compare``) the command once its own checks have passed, so that a
    refused input's error line is the only output.
    """
    kept = dict(base)
    for component, kwargs_key in COMPONENT_KWARGS.items():
        replaced = component in override and str(override[component]) != str(base.get(component))
        if replaced and kwargs_key in kept and kwargs_key not in override:
            if notes is not None:
                notes.append(
                    f"{kwargs_key} of {source or 'the config'} belong to its {component} "
                    f"{base.get(component)!r}, so they are not used with {component} {override[component]!r}"
                )
            del kept[kwargs_key]
    return kept


def one_value_fields(dataclass_types: Sequence[type]) -> frozenset[str]:
    """The fields that take one number, bool or choice (``int``, ``float``, ``bool``, a ``Literal`` or an ``Enum``,
    optionally ``| None``): a YAML list or mapping for them is refused. Fields that admit ``str``, ``list`` or
    ``dict`` are left out (``report_to`` takes a list, the ``*_kwargs`` options a mapping)."""
    import dataclasses
    import enum
    import types
    import typing

    def one_value(kind: Any) -> bool:
        return (
            kind in (int, float, bool)
            or typing.get_origin(kind) is typing.Literal
            or (isinstance(kind, type) and issubclass(kind, enum.Enum))
        )

    names = set()
    for dataclass_type in dataclass_types:
        try:
            hints = typing.get_type_hints(dataclass_type)
        except Exception:  # noqa: BLE001 - a hint that does not resolve: its fields are not checked here
            continue
        for field in dataclasses.fields(dataclass_type):
            kind = hints.get(field.name)
            union = typing.get_origin(kind) in (typing.Union, types.UnionType)
            members = [k for k in typing.get_args(kind) if k is not type(None)] if union else [kind]
            if members and all(one_value(k) for k in members):
                names.add(field.name)
    return frozenset(names)


def _check_config_value(action: argparse.Action, value: Any, path: str | None) -> None:
    """Raise :class:`ConfigError` when a YAML ``value`` is not among ``action.choices``."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        converted = action.type(item) if isinstance(item, str) and callable(action.type) else item
        if converted not in action.choices:
            allowed = ", ".join(repr(getattr(c, "value", c)) for c in action.choices)
            raise ConfigError(
                f"{path or 'config file'}: {action.dest}: {item!r} is not allowed; choose one of {allowed}"
            )


def recipe_names() -> dict[str, Path]:
    """Packaged recipes by short name: the file name without ``.yaml``, ``_`` → ``-`` (``arith-hard``)."""
    from psgrpo.loading import RECIPES_DIR

    return {path.stem.replace("_", "-"): path for path in sorted(RECIPES_DIR.glob("*.yaml"))}


def resolve_config(value: str) -> Path:
    """The file of ``--config VALUE``: a packaged recipe's for a short name, else ``VALUE`` as a path.

    Raises:
        ConfigError: no such file (naming the short names, and the one whose file name ``VALUE`` ends in).
    """
    names = recipe_names()
    if value in names:
        return names[value]
    path = Path(value).expanduser()
    if path.is_file():
        return path
    same_file = [name for name, recipe in names.items() if recipe.name == path.name]
    hint = f" (the packaged one is --config {same_file[0]})" if same_file else ""
    problem = "is a directory" if path.is_dir() else "does not exist"
    raise ConfigError(
        f"config file {value} {problem}{hint}; give a YAML file or a packaged recipe name: {', '.join(names)}"
    )


def split_config_args(args: Sequence[str]) -> tuple[list[Path], list[str]]:
    """``(config files in order, the other arguments)`` of a command line, ``--config NAME`` resolved; a file
    repeated keeps only its last place (the same values), so ``with_default_recipe`` over ``--config demo`` reads it once.

    Raises:
        ConfigError: ``--config`` without a value, or one that names no file (:func:`resolve_config`).
    """
    paths: list[Path] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg != "--config" and not arg.startswith("--config="):
            rest.append(arg)
            i += 1
            continue
        if "=" in arg:
            value, i = arg.partition("=")[2], i + 1
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            value, i = args[i + 1], i + 2
        else:
            raise ConfigError(
                f"--config needs a YAML file or a packaged recipe name: {', '.join(recipe_names())}"
            )
        paths.append(resolve_config(value))
    # a file given twice is read once, at its last place: reading a, b, a gives what reading b, a gives
    unique = [
        path for i, path in enumerate(paths) if path.resolve() not in {p.resolve() for p in paths[i + 1 :]}
    ]
    return unique, rest


def config_help(dests: Collection[str], reads_training_recipes: bool = False) -> str:
    """``--config``'s help: a training recipe layered over the demo for commands with ``--method``; a
    training recipe read in part for commands with foreign keys (``eval``); else a YAML of the options."""
    names = ", ".join(recipe_names())
    if "method" in dests:
        return (
            f"YAML recipe: a file, or a packaged recipe by name ({names}) from any directory. It layers over "
            "the embedded demo recipe (psgrpo/recipes/demo.yaml): the file's values replace the demo's, and "
            "flags replace both. Repeat --config to layer more files, later over earlier. Each option's default "
            "shown is the value a run with these --config files uses ('this run' where a file set it)."
        )
    if reads_training_recipes:
        return (
            f"YAML file of option values, or a training recipe (a file, or a packaged one by name: {names}), "
            "of which this command reads its own options (task, model); flags override it. Repeat --config to "
            "layer more files, later over earlier."
        )
    return (
        "YAML file of this command's option values; flags override it. Repeat --config to layer more files."
    )


def layer_config_files(paths: Sequence[Path]) -> tuple[dict[str, Any], dict[str, str]]:
    """``(values, key → file that set it)`` of config files merged, later over earlier.

    ``env`` mappings merge; a file that sets a component (:data:`COMPONENT_KWARGS`) to another value
    without its kwargs drops the earlier files' kwargs, which belong to the earlier component.
    """
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for path in paths:
        values = check_unique_keys(str(path))
        if not isinstance(values.get("env") or {}, dict):
            raise ConfigError(f"{path}: env: expected a mapping of environment variables (`NAME: value`)")
        for name, value in (values.get("env") or {}).items():
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise ConfigError(
                    f"{path}: env: {name!r} is not an environment variable name (a name without '=', e.g. "
                    "OMP_NUM_THREADS)"
                )
            if value is None or isinstance(value, (dict, list)) or "\0" in str(value):
                raise ConfigError(
                    f"{path}: env: {name}: expected one value (a string or a number), got {value!r}"
                )
        env = {**(merged.get("env") or {}), **(values.get("env") or {})}
        for component, kwargs_key in COMPONENT_KWARGS.items():
            replaced = component in values and str(values[component]) != str(merged.get(component))
            if replaced and kwargs_key not in values:
                merged.pop(kwargs_key, None)
                sources.pop(kwargs_key, None)
        merged.update(values)
        if env:
            merged["env"] = env
        sources.update(dict.fromkeys(values, str(path)))
    return merged, sources
