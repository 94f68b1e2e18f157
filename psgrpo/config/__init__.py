"""Configuration: what a run is told, checked before anything heavy is built.

- :mod:`~psgrpo.config.options`: every option with a fixed set of values (``Literal`` types) and the
  range / registry checks; the only module here that the pure layers (estimators, scorers, signals)
  may import, so it imports nothing of psgrpo.
- :mod:`~psgrpo.config.process_grpo_config`: :class:`ProcessGRPOConfig`, TRL's ``GRPOConfig`` plus
  the credit-assignment fields, each with its help text (docs/options.md is generated from it).
- :mod:`~psgrpo.config.checks`: the cross-field checks ``__post_init__`` runs (one clear line per
  mistake, before a model loads).
- :mod:`~psgrpo.config.precision`: bf16 / ``use_cpu`` by machine (GPU, CPU with or without native bf16).
- :mod:`~psgrpo.config.kernel_caches`: PyTorch's CPU kernel caches bounded, so a bf16 run's memory stays flat.
- :mod:`~psgrpo.config.parsing`: YAML recipes and command-line flags, layered, for the commands.

``from psgrpo.config import ProcessGRPOConfig`` (and ``from psgrpo import ProcessGRPOConfig``) resolve
lazily, so that importing :mod:`psgrpo.config.options` does not import TRL.
"""

from __future__ import annotations

__all__ = ["ProcessGRPOConfig"]


def __getattr__(name: str):  # lazy: the pure layers import psgrpo.config.options, which must not import TRL
    if name == "ProcessGRPOConfig":
        from psgrpo.config.process_grpo_config import ProcessGRPOConfig

        return ProcessGRPOConfig
    raise AttributeError(f"module 'psgrpo.config' has no attribute {name!r}")
