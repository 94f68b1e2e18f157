"""Fixtures for the tests of benchmarks/ scripts (speed and memory of the library)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def import_benchmark():
    """``importlib.import_module`` with benchmarks/ on ``sys.path``, as the scripts import ``_common``."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(BENCHMARKS))
