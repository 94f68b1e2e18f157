"""``Registry``: the one name → object table behind estimators, segmenters, step scorers and rewards."""

from __future__ import annotations

import pytest

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.segmentation import SEGMENTERS
from psgrpo.registry import Registry
from psgrpo.rewards.functions import REWARD_FUNCS


def test_register_get_and_list():
    registry: Registry[int] = Registry("widget")
    registry.register("b")(2)
    assert registry.register("a")(1) == 1  # the decorator returns what it registers
    assert registry.get("a") == 1 and "b" in registry and "c" not in registry
    assert registry.names() == ["a", "b"] and list(registry) == ["a", "b"] and len(registry) == 2


def test_registering_the_same_object_again_is_a_no_op_and_another_one_is_refused():
    registry: Registry[object] = Registry("widget")
    thing = object()
    registry.register("x")(thing)
    registry.register("x")(thing)
    with pytest.raises(ValueError, match="a widget named 'x' is already registered"):
        registry.register("x")(object())
    assert registry.get("x") is thing


def test_unknown_names_list_the_registered_ones():
    registry: Registry[int] = Registry("widget")
    registry.register("b")(2)
    registry.register("a")(1)
    with pytest.raises(ValueError, match=r"unknown widget 'c'; registered: 'a', 'b'"):
        registry.get("c")


def test_every_extension_point_is_a_registry():
    for registry, kind in (
        (ADVANTAGE_ESTIMATORS, "advantage estimator"),
        (SEGMENTERS, "segmenter"),
        (STEP_SCORERS, "step scorer"),
        (REWARD_FUNCS, "reward function"),
    ):
        assert isinstance(registry, Registry) and registry.kind == kind
    assert STEP_SCORERS.names() == ["arithmetic", "prm", "reference"]
    assert REWARD_FUNCS.names() == ["correctness", "format", "strict_format"]


def test_a_lazy_entry_is_imported_on_first_get_only():
    import sys

    registry = Registry("thing")
    registry.register_lazy("od", "collections:OrderedDict")
    assert "od" in registry and registry.names() == ["od"] and len(registry) == 1
    from collections import OrderedDict

    assert registry.get("od") is OrderedDict and registry.names() == ["od"]
    with pytest.raises(ValueError, match="already registered"):
        registry.register_lazy("od", "collections:deque")
    registry.register_lazy("gone", "psgrpo_no_such_module:x")
    registry.unregister("gone")
    assert "gone" not in registry and "psgrpo_no_such_module" not in sys.modules
