"""tools/ is a folder of scripts, not a package: tests load each one as a module by path."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture(scope="module")
def load_tool() -> Iterator[Callable[[str], ModuleType]]:
    """``load_tool("options_page")`` → tools/options_page.py as a module (unloaded after the test module)."""
    loaded: list[str] = []

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        loaded.append(name)
        return module

    yield load
    for name in loaded:
        sys.modules.pop(name, None)
