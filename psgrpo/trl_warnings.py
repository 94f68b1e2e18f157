"""Warnings raised inside TRL's own code that a user of psgrpo cannot act on, and where psgrpo hides them.

transformers (from about 5.20) renames gradient checkpointing to activation checkpointing and warns
(FutureWarning) on every use of the old names. TRL 1.16 uses them itself: its rollouts read
``model.is_gradient_checkpointing`` and toggle ``gradient_checkpointing_disable`` / ``_enable`` around each
generation and no-grad forward (``unwrap_model_for_generation``, ``disable_gradient_checkpointing``), and
its GRPOConfig sets ``gradient_checkpointing`` by default. psgrpo's commands hide these for the whole
process (:func:`psgrpo.commands.cli.silence_unactionable_warnings`); in the Python API the trainer hides
them only around TRL's rollout (:func:`quiet_trl_deprecations`), and ``ProcessGRPOConfig`` avoids the
config's by setting the new name itself. Every other warning is shown as usual.

Standard library only: ``psgrpo --help`` imports this module.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

TRL_DEPRECATIONS: tuple[tuple[type[Warning], str], ...] = (
    (FutureWarning, r"`(is_)?gradient_checkpointing(_enable|_disable|_kwargs)?` is deprecated"),
)
"""``(category, message regex)`` of the warnings above."""


def ignore_trl_deprecations() -> None:
    """Add an ``ignore`` filter for each of :data:`TRL_DEPRECATIONS` to the current warning filters."""
    for category, message in TRL_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=message, category=category)


@contextlib.contextmanager
def quiet_trl_deprecations() -> Iterator[None]:
    """:data:`TRL_DEPRECATIONS` ignored inside the block; the warning filters are restored after it."""
    with warnings.catch_warnings():
        ignore_trl_deprecations()
        yield
