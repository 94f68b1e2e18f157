"""``compare.png``: held-out curves of every method, mean over seeds with the 95% interval shaded.

The rows are :mod:`psgrpo.compare.report`'s; matplotlib (the ``plot`` extra) is imported
only when a figure is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psgrpo.compare.report import seed_curve
from psgrpo.methods import all_methods

LINESTYLES = ("-", "--", ":", "-.")


def method_colours() -> dict[str, str]:
    """Each registered method's colour (``MethodSpec.colour``): the same colour for a method in every plot."""
    return {spec.name: spec.colour for spec in all_methods() if spec.colour is not None}


def __getattr__(name: str) -> Any:  # the former constant, now read from the method specs
    if name == "METHOD_COLOURS":
        return method_colours()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def method_styles(methods: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A distinct ``(colour, linestyle)`` per method: a registered method keeps its colour
    (:func:`method_colours`), the other arms take the remaining colours of matplotlib's 10-colour cycle in
    order, and once those run out (a sweep of 9+ arms) the cycle repeats with dashed, then dotted, lines."""
    colours = method_colours()
    free = [f"C{i}" for i in range(10) if f"C{i}" not in {colours[m] for m in methods if m in colours}]
    styles: dict[str, tuple[str, str]] = {}
    others = 0
    for method in methods:
        if method in colours:
            styles[method] = (colours[method], LINESTYLES[0])
            continue
        round_, index = divmod(others, len(free))
        styles[method] = (free[index], LINESTYLES[round_ % len(LINESTYLES)])
        others += 1
    return styles


def load_pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend.

    Raises:
        ImportError with the install command when matplotlib (the ``plot`` extra) is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "psgrpo compare draws compare.png with matplotlib, which is not installed: "
            "pip install matplotlib (or pip install -e '.[plot]' in psgrpo's folder)"
        ) from err
    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Lay out ``fig``, write it to ``path`` (PNG at 110 dpi) and free it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    load_pyplot().close(fig)


PANELS = (
    ("accuracy", "step", "held-out accuracy (greedy)", "optimizer step"),
    (
        "accuracy",
        "completion_tokens",
        "held-out accuracy (greedy)",
        "training completion tokens (equal compute)",
    ),
    ("accuracy", "train_seconds", "held-out accuracy (greedy)", "training wall seconds"),
    ("mean_tokens", "step", "mean completion tokens (held-out)", "optimizer step"),
)
"""The panels of ``compare.png``: (y column, x column, y label, x label)."""


def plot_curves(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """``compare.png``: accuracy vs step / completion tokens / wall time, and length vs step (mean ± 95% CI)."""
    plt = load_pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    styles = method_styles(list(dict.fromkeys(row["method"] for row in rows)))
    band_alpha = 0.2 if len(styles) <= 4 else 0.08  # many overlapping bands hide the lines
    for method, (colour, linestyle) in styles.items():
        for ax, (column, x, _, _) in zip(axes.flat, PANELS, strict=True):
            curve = seed_curve(rows, method, column, x)
            if not curve:
                continue
            xs = [p.x for p in curve]
            n_seeds = max(p.n for p in curve)
            label = f"{method} ({n_seeds} seeds)"
            ax.plot(xs, [p.mean for p in curve], color=colour, linestyle=linestyle, marker="o", label=label)
            ax.fill_between(
                xs, [p.low for p in curve], [p.high for p in curve], color=colour, alpha=band_alpha
            )
    for ax, (_, x, ylabel, xlabel) in zip(axes.flat, PANELS, strict=True):
        if x == "step":
            ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(title="line: seed mean; band: 95% CI")
    save_figure(fig, path)
