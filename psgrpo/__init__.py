"""psgrpo: process-supervised GRPO on Hugging Face TRL: step-level credit methods beside outcome GRPO.

Data flow of one training step (docs/design.md)::

    rollout -> rewards -> segments -> process signal -> advantages -> loss

The public entry points are :class:`ProcessGRPOConfig`, :class:`ProcessGRPOTrainer` and
:func:`load_task` (the embedded arith tasks and GSM8K as datasets), and :func:`load_recipe` (a packaged
recipe's configs, as ``psgrpo train --config`` builds them); ``psgrpo`` on the command line
wraps them. ``ProcessGRPOTrainer(model="embedded:arith", ...)`` trains the embedded tiny model
offline on a CPU (docs/quickstart.md).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["ProcessGRPOConfig", "ProcessGRPOTrainer", "__version__", "load_recipe", "load_task"]


def __getattr__(name: str):  # lazy: importing psgrpo must not import torch/TRL
    if name == "ProcessGRPOConfig":
        from psgrpo.config.process_grpo_config import ProcessGRPOConfig

        return ProcessGRPOConfig
    if name == "ProcessGRPOTrainer":
        from psgrpo.trainer import ProcessGRPOTrainer

        return ProcessGRPOTrainer
    if name == "load_task":
        from psgrpo.data.tasks import load_task

        return load_task
    if name == "load_recipe":
        from psgrpo.loading import load_recipe

        return load_recipe
    raise AttributeError(f"module 'psgrpo' has no attribute {name!r}")
