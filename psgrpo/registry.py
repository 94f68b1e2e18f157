"""``Registry``: the one extension pattern of psgrpo — a name → object table with a decorator.

Advantage estimators, segmenters, step scorers and reward functions are each a registry.
A user adds one with the decorator and selects it by name in the config::

    from psgrpo.advantages import ADVANTAGE_ESTIMATORS

    @ADVANTAGE_ESTIMATORS.register("my_estimator")
    def my_estimator(*, outcome_advantages, completion_mask, **_): ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named objects of one ``kind`` (e.g. ``"segmenter"``); names are unique.

    Args:
        kind: what is registered, for error messages ("unknown segmenter 'x'; registered: …").
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = {}  # name → "module:attribute", imported on first get()

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator adding its argument under ``name``; re-registering the same object is a no-op."""

        def decorator(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise ValueError(f"a {self.kind} named {name!r} is already registered")
            self._entries[name] = obj
            return obj

        return decorator

    def register_lazy(self, name: str, reference: str) -> None:
        """Register ``name`` as ``"package.module:attribute"``, imported the first time it is asked for.

        For entries whose module is heavy (e.g. a scorer that imports torch): listing the names, or
        importing the registry's module, then costs nothing.
        """
        if name in self:
            raise ValueError(f"a {self.kind} named {name!r} is already registered")
        self._lazy[name] = reference

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's or a notebook's own entry); an unknown name is ignored."""
        self._entries.pop(name, None)
        self._lazy.pop(name, None)

    def get(self, name: str) -> T:
        """The object registered as ``name``; ValueError listing the registered names otherwise."""
        if name in self._lazy:
            module, _, attribute = self._lazy.pop(name).partition(":")
            self._entries[name] = getattr(importlib.import_module(module), attribute)
        try:
            return self._entries[name]
        except KeyError:
            registered = ", ".join(repr(n) for n in self.names())
            raise ValueError(f"unknown {self.kind} {name!r}; registered: {registered}") from None

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted([*self._entries, *self._lazy])

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries) + len(self._lazy)
