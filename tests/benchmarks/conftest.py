"""Fixtures for the benchmark scripts' tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def import_benchmark():
    """``import_benchmark(name)`` imports ``benchmarks/name.py`` as the scripts import each other
    (``benchmarks/`` on ``sys.path`` for the module's tests)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(BENCHMARKS))
