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
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Collection, Iterable
from typing import Any

from trl import TrlParser

UNUSED_ARGUMENTS = re.compile(r"Some specified arguments are not used by the HfArgumentParser: (\[.*\])")


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

    def __init__(
        self, dataclass_types: Any, foreign_config_keys: Collection[str] = (), **kwargs: Any
    ) -> None:
        super().__init__(dataclass_types, **kwargs)
        self.foreign_config_keys = frozenset(foreign_config_keys)

    def parse_args_and_config(self, args: Iterable[str] | None = None, **kwargs: Any) -> tuple[Any, ...]:
        args = list(args) if args is not None else None
        self.config_path = None
        if args is not None and "--config" in args:
            index = args.index("--config")
            if index + 1 >= len(args):
                raise ConfigError("--config needs a path to a YAML file")
            self.config_path = args[index + 1]
        try:
            if self.config_path is not None:
                check_unique_keys(self.config_path)
            return super().parse_args_and_config(args, **kwargs)
        except FileNotFoundError as err:
            if self.config_path is not None and err.filename == self.config_path:
                raise ConfigError(f"config file {self.config_path} does not exist") from None
            raise
        except ConfigError:
            raise
        except ValueError as err:
            unused = UNUSED_ARGUMENTS.search(str(err))
            if unused:
                raise ConfigError(
                    f"unknown option(s) {unused.group(1)}: not an option of this command "
                    f"(`{self.prog} --help` lists them)"
                ) from None
            source = (
                f" (options come from {self.config_path} and the command line)" if self.config_path else ""
            )
            raise ConfigError(f"{err}{source}") from err

    def set_defaults_with_config(self, **kwargs: Any) -> list[str]:
        known = {action.dest for action in self._actions}
        if any(key in self.foreign_config_keys and key not in known for key in kwargs):
            ignored = sorted(key for key in kwargs if key in self.foreign_config_keys)
            logger.info(
                "%s: %s is another command's config; ignored: %s",
                self.prog,
                self.config_path,
                ", ".join(ignored),
            )
            kwargs = {key: value for key, value in kwargs.items() if key not in self.foreign_config_keys}
        for action in self._actions:
            if action.dest in kwargs and action.choices is not None:
                _check_config_value(action, kwargs[action.dest], self.config_path)
        return super().set_defaults_with_config(**kwargs)


def check_unique_keys(path: str) -> None:
    """Raise :class:`ConfigError` when a mapping of the YAML file ``path`` sets a key twice: PyYAML
    keeps the last value silently, so the first line would read as the setting and not be."""
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
        yaml.load(f, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


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
