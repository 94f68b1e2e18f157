"""compare_plot: compare.png from curve rows, and the clear error without matplotlib."""

from __future__ import annotations

import sys

import pytest
from PIL import Image

from psgrpo.commands.compare_plot import load_pyplot, plot_curves


def _rows():
    """Two methods × two seeds × three evaluations, every column a panel reads."""
    return [
        {"method": method, "seed": seed, "step": 10 * i, "accuracy": 0.4 + 0.1 * i * (1 + seed),
         "mean_tokens": 80.0 - i - seed, "train_seconds": 10.0 * i + seed, "completion_tokens": 1000.0 * i}
        for method in ("grpo", "vps") for seed in (0, 1) for i in range(3)
    ]  # fmt: skip


def test_plot_writes_a_png_with_four_panels(tmp_path):
    path = tmp_path / "compare.png"
    plot_curves(_rows(), path)
    with Image.open(path) as image:
        assert image.format == "PNG"
        width, height = image.size
    assert 1.3 < width / height < 1.7  # 2 × 2 panels: step, completion tokens, wall time; length


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'psgrpo\[plot\]'"):
        load_pyplot()
