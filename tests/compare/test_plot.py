"""psgrpo.compare.plot: compare.png from curve rows, and the clear error without matplotlib."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from psgrpo.compare.plot import METHOD_COLOURS, load_pyplot, method_styles, plot_curves


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
    with pytest.raises(ImportError, match=re.escape("pip install matplotlib (or pip install -e '.[plot]'")):
        load_pyplot()


def test_method_styles_keep_the_named_colours_and_never_repeat_a_style():
    # the α sweep's nine arms: grpo is C0; before this, the eighth other arm wrapped round to C0 too
    arms = ["grpo", *(f"vps-a{a}" for a in (0, 0.4, 0.8, 1, 1.2, 1.4, 1.6, 2))]
    styles = method_styles(arms)
    assert styles["grpo"] == ("C0", "-")
    assert all(colour != "C0" for method, (colour, _) in styles.items() if method != "grpo")
    assert styles["vps-a2"] == ("C8", "-")  # C1..C9 are free: the eight others need no dashes
    assert len(set(styles.values())) == len(arms)


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30, unique=True))
def test_method_styles_are_distinct_for_any_arm_names(methods):
    styles = method_styles(methods)
    assert list(styles) == methods
    assert len(set(styles.values())) == len(methods)
    for method in set(methods) & set(METHOD_COLOURS):
        assert styles[method][0] == METHOD_COLOURS[method]
