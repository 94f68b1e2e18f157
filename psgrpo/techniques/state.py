"""Technique state in checkpoints: the memory bank and the running reward statistics survive a resume.

:class:`TechniqueStateCallback` writes ``psgrpo_techniques.json`` into each checkpoint directory,
next to ``trainer_state.json``; :func:`load_technique_state` reads it back when training resumes
(the trainer calls it with the checkpoint path, where TRL restores its own extra state).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Protocol

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

STATE_FILE = "psgrpo_techniques.json"

logger = logging.getLogger(__name__)


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class TechniqueStateCallback(TrainerCallback):
    """On every checkpoint save, write ``{name: obj.state_dict()}`` as JSON into the checkpoint directory.

    Args:
        states: the stateful techniques by name, e.g. ``{"memory_bank": bank}``.
    """

    def __init__(self, states: dict[str, Stateful]) -> None:
        self.states = states

    def on_save(self, args, state, control, **kwargs) -> None:  # noqa: D401 - HF callback signature
        if not args.should_save:
            return
        checkpoint = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        checkpoint.mkdir(parents=True, exist_ok=True)
        payload = {name: obj.state_dict() for name, obj in self.states.items()}
        (checkpoint / STATE_FILE).write_text(json.dumps(payload))


def load_technique_state(states: dict[str, Stateful], checkpoint: str | Path) -> None:
    """Restore every technique found in ``checkpoint/psgrpo_techniques.json``; warn for missing ones."""
    path = Path(checkpoint) / STATE_FILE
    saved = json.loads(path.read_text()) if path.is_file() else {}
    for name, obj in states.items():
        if name in saved:
            obj.load_state_dict(saved[name])
        else:
            logger.warning("checkpoint %s has no saved %s state; it starts empty", checkpoint, name)
