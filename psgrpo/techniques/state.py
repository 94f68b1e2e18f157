"""Technique state in checkpoints: the memory bank and the running reward statistics survive a resume.

:func:`save_technique_state` writes ``psgrpo_techniques.json`` into each checkpoint directory,
next to ``trainer_state.json``, before the checkpoint is committed (so it is part of the atomic
checkpoint, :mod:`psgrpo.checkpoints.atomic`); :func:`load_technique_state` reads it back when
training resumes (the trainer calls it with the checkpoint path, where TRL restores its own extra state).
The other techniques need no state of their own: the KL schedule and the curriculum are functions
of the optimizer step and the sampler's epoch, which transformers' trainer state restores.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Protocol

STATE_FILE = "psgrpo_techniques.json"

logger = logging.getLogger(__name__)


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def save_technique_state(states: dict[str, Stateful], checkpoint: str | Path) -> None:
    """Write ``{name: obj.state_dict()}`` as JSON into ``checkpoint`` (called before the checkpoint is committed).

    Args:
        states: the stateful techniques by name, e.g. ``{"memory_bank": bank}``.
        checkpoint: the (staged) checkpoint directory.
    """
    path = Path(checkpoint)
    path.mkdir(parents=True, exist_ok=True)
    payload = {name: obj.state_dict() for name, obj in states.items()}
    (path / STATE_FILE).write_text(json.dumps(payload))


def load_technique_state(states: dict[str, Stateful], checkpoint: str | Path) -> None:
    """Restore every technique found in ``checkpoint/psgrpo_techniques.json``; warn for missing ones."""
    path = Path(checkpoint) / STATE_FILE
    saved = json.loads(path.read_text()) if path.is_file() else {}
    for name, obj in states.items():
        if name in saved:
            obj.load_state_dict(saved[name])
        else:
            logger.warning("checkpoint %s has no saved %s state; it starts empty", checkpoint, name)
