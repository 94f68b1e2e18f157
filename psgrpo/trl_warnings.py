"""Warnings raised inside TRL's own code that a user of psgrpo cannot act on, hidden once per process.

transformers (from about 5.20) renames gradient checkpointing to activation checkpointing and warns
(FutureWarning) on every use of the old names. TRL 1.16 uses them itself: its rollouts and psgrpo's
held-out evaluation read ``model.is_gradient_checkpointing`` and toggle ``gradient_checkpointing_disable`` /
``_enable`` around each generation and no-grad forward (``unwrap_model_for_generation``,
``disable_gradient_checkpointing``), and its GRPOConfig sets ``gradient_checkpointing`` by default.
``ProcessGRPOConfig`` avoids the config's warning by setting the new name itself; for the rest, psgrpo's
commands and ``ProcessGRPOTrainer.__init__`` call :func:`ignore_trl_deprecations`, which adds one ``ignore``
filter per message of :data:`TRL_DEPRECATIONS` to the process's warning filters, where it is not there yet.
Every other warning is shown as usual.

Why once, and not a ``warnings.catch_warnings()`` block around each TRL call: entering or leaving that block
resets Python's record of the warnings already shown, so every other warning raised at each step (a reward
function's, a library's) would be printed again at every step instead of once.

Standard library only: ``psgrpo --help`` imports this module.
"""

from __future__ import annotations

import warnings

TRL_DEPRECATIONS: tuple[tuple[type[Warning], str], ...] = (
    (FutureWarning, r"`(is_)?gradient_checkpointing(_enable|_disable|_kwargs)?` is deprecated"),
)
"""``(category, message regex)`` of the warnings above."""


def ignore_trl_deprecations() -> None:
    """Add an ``ignore`` filter for each of :data:`TRL_DEPRECATIONS` that the current filters lack (so a second
    call, e.g. by each trainer ``psgrpo compare`` builds, mutates nothing). A filter the user put in front,
    such as ``warnings.simplefilter("always")`` before the trainer was built, keeps precedence."""
    for category, message in TRL_DEPRECATIONS:
        present = any(
            action == "ignore" and pattern is not None and pattern.pattern == message and kind is category
            for action, pattern, kind, *_ in warnings.filters
        )
        if not present:
            warnings.filterwarnings("ignore", message=message, category=category)
