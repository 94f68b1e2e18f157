"""The Hugging Face Hub as psgrpo reaches it: local-looking names never go there, offline fails fast.

A model or dataset name is read as a local path whenever it can only be one, or plainly means
one (:func:`looks_like_local_path`: ``outputs/demo``, ``./x``, absolute paths, anything with a
trailing separator or more than one ``/``), so a checkpoint that was never written reads "no such
checkpoint directory" at once instead of 50 seconds of Hub retries. A Hub id on a machine whose
``HF_HUB_OFFLINE`` is set must be in the local cache (:func:`check_cached_when_offline`, no
network); without that variable the Hub is tried, and the error says how to set it
(:func:`offline_hint`).
"""

from __future__ import annotations

import os
from pathlib import Path

HUB_OFFLINE_ENV = "HF_HUB_OFFLINE"
LOCAL_ROOTS = frozenset({"outputs", "output", "checkpoints", "runs", "results", "models", "data", "tmp"})
"""First path parts that name a local folder, not a Hub namespace: ``outputs/demo`` is psgrpo's own
default output directory, and would otherwise read as the Hub repo ``demo`` of a user ``outputs``."""


def looks_like_local_path(name: str) -> bool:
    """Whether ``name`` is a filesystem path rather than a Hub id (``name`` or ``namespace/name``).

    Local: an existing path; one starting with ``/``, ``.``, ``~``; more than one ``/``; a trailing
    separator; the platform's own separator; a first part in :data:`LOCAL_ROOTS` or one that exists
    here as a folder (``outputs/demo`` when ``outputs/`` exists).
    """
    if not name:
        return False
    if name.startswith(("/", ".", "~")) or name.endswith(("/", os.sep)) or name.count("/") > 1:
        return True
    if os.sep != "/" and os.sep in name:
        return True
    if Path(name).exists():
        return True
    namespace, slash, _ = name.partition("/")
    return bool(slash) and (namespace in LOCAL_ROOTS or Path(namespace).is_dir())


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(HUB_OFFLINE_ENV, "").strip().upper() in {"1", "TRUE", "YES", "ON"}


def offline_hint() -> str:
    """What to do about an unreachable Hub: how to set ``HF_HUB_OFFLINE``, or that it is set."""
    if hub_offline():
        return f"{HUB_OFFLINE_ENV} is set, so only the local Hugging Face cache was searched"
    return (
        f"without network, set {HUB_OFFLINE_ENV}=1 (`export {HUB_OFFLINE_ENV}=1`) so this fails at once "
        "instead of after retries"
    )


def check_cached_when_offline(repo_id: str, option: str, filename: str = "config.json") -> None:
    """With ``HF_HUB_OFFLINE`` set, the Hub id ``repo_id`` must be in the local cache; OSError at once if not.

    Args:
        repo_id: a Hub model id such as ``Qwen/Qwen2.5-0.5B-Instruct``.
        option: the option that named it, for the message (``--model_name_or_path``).
        filename: a file every snapshot of the repo holds.
    """
    if not hub_offline():
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(repo_id, filename), str):
        raise OSError(
            f"{option} {repo_id}: not a local directory, and {HUB_OFFLINE_ENV} is set but the Hugging Face cache "
            "holds no copy of it; download it once with network, unset HF_HUB_OFFLINE, or give a local "
            "checkpoint directory"
        )


def hub_error(option: str, name: str, err: BaseException) -> OSError:
    """An OSError in one line for a Hub id that could not be loaded: the option, the id, the cause, the hint."""
    cause = " ".join(str(err).split())
    if len(cause) > 300:
        cause = cause[:297] + "..."
    return OSError(
        f"{option} {name}: not a local directory, and the Hugging Face Hub could not provide it "
        f"({type(err).__name__}: {cause}); {offline_hint()}"
    )
