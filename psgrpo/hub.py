"""The Hugging Face Hub as psgrpo reaches it: local-looking names never go there, offline fails fast.

A model or dataset name is read as a local path whenever it can only be one, or plainly means
one (:func:`looks_like_local_path`: ``outputs/demo``, ``./x``, absolute paths, anything with a
trailing separator or more than one ``/``), so a checkpoint that was never written reads "no such
checkpoint directory" at once instead of 50 seconds of Hub retries. A Hub id on a machine whose
``HF_HUB_OFFLINE`` is set must be in the local cache (:func:`check_cached_when_offline`, no
network); without that variable one request (:func:`hub_reachable`, a few seconds at most, no retries)
tells whether the Hub answers before anything is loaded from it (:func:`check_hub_reachable`): when it
does not, a Hub id missing from the cache stops at once with one line, and one in the cache is loaded
from it with offline mode switched on for the run (one log line), instead of 29–52 s of retries and
a dozen repeated warnings either way.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger("psgrpo")

HUB_OFFLINE_ENV = "HF_HUB_OFFLINE"
PROBE_TIMEOUT_S = 5.0
"""Seconds the one reachability request may take (connect and answer)."""
_REACHABLE: dict[str, str | None] = {}
"""endpoint → ``None`` when it answered, else why not: one probe per process."""
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


def check_cached_when_offline(
    repo_id: str, option: str, filename: str = "config.json", revision: str | None = None
) -> None:
    """With ``HF_HUB_OFFLINE`` set, the Hub id ``repo_id`` must be in the local cache; OSError at once if not.

    Args:
        repo_id: a Hub model id such as ``Qwen/Qwen2.5-0.5B-Instruct``.
        option: the option that named it, for the message (``--model_name_or_path``).
        filename: a file every snapshot of the repo holds.
        revision: the revision that will load (``None``: the default branch).
    """
    if not hub_offline():
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(repo_id, filename, revision=revision), str):
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


def hub_reachable(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """``None`` when ``endpoint`` answers one HEAD request (any HTTP status) within ``timeout`` seconds, else
    the reason in one line. No retries: it is the question "is there a network to the Hub", asked once."""
    from huggingface_hub.utils import get_session  # the Hub's own HTTP client, with its proxy settings

    try:
        get_session().head(endpoint, timeout=timeout)
    except Exception as err:  # noqa: BLE001 - whatever the transport raises, the Hub did not answer
        return f"{type(err).__name__}: {' '.join(str(err).split()) or 'no answer'}"
    return None


def go_offline() -> None:
    """Offline mode for the rest of this process: the Hub libraries then read their cache without retrying."""
    os.environ[HUB_OFFLINE_ENV] = "1"
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True
    try:
        import datasets.config

        datasets.config.HF_HUB_OFFLINE = True
    except ImportError:  # pragma: no cover - datasets is a dependency
        pass


def check_hub_reachable(
    repo_id: str, option: str, filename: str = "config.json", revision: str | None = None
) -> None:
    """Before loading the Hub id ``repo_id``: with ``HF_HUB_OFFLINE`` set, it must be cached
    (:func:`check_cached_when_offline`); else the Hub must answer one request (:func:`hub_reachable`, asked
    once per process), or ``repo_id`` be cached, which then loads offline (:func:`go_offline`).

    Raises:
        OSError: in one line, naming ``option``, ``repo_id``, why the Hub could not be reached and what to do.
    """
    if hub_offline():
        check_cached_when_offline(repo_id, option, filename, revision)
        return
    from huggingface_hub import constants, try_to_load_from_cache

    endpoint = constants.ENDPOINT
    if endpoint not in _REACHABLE:
        _REACHABLE[endpoint] = hub_reachable(endpoint)
    why = _REACHABLE[endpoint]
    if why is None:
        return
    if isinstance(try_to_load_from_cache(repo_id, filename, revision=revision), str):
        logger.warning(
            "the Hugging Face Hub (%s) cannot be reached (%s); %s is loaded from the local cache, with %s=1 "
            "for this run",
            endpoint,
            why,
            repo_id,
            HUB_OFFLINE_ENV,
        )
        go_offline()
        return
    raise OSError(
        f"{option} {repo_id}: not a local directory, and the Hugging Face Hub ({endpoint}) cannot be reached "
        f"({why}) and the local cache holds no copy of it; connect to the network, or give a local checkpoint "
        f"directory (with no network, `export {HUB_OFFLINE_ENV}=1` reads only the cache, without this request)"
    )


def prepare_hub_dataset(name: str) -> None:
    """Before ``datasets`` loads the Hub dataset ``name``: when the Hub does not answer one request, offline mode
    for the run (one log line), so the dataset comes from the local caches at once or fails in one line, not
    after retries. (No error here: ``datasets`` keeps its own cache beside the Hub's.)"""
    if hub_offline():
        return
    from huggingface_hub import constants

    endpoint = constants.ENDPOINT
    if endpoint not in _REACHABLE:
        _REACHABLE[endpoint] = hub_reachable(endpoint)
    if _REACHABLE[endpoint] is not None:
        logger.warning(
            "the Hugging Face Hub (%s) cannot be reached (%s); %s is read from the local cache only, with %s=1 "
            "for this run",
            endpoint,
            _REACHABLE[endpoint],
            name,
            HUB_OFFLINE_ENV,
        )
        go_offline()


def check_push_to_hub(push_to_hub: bool, hub_token: str | None = None) -> None:
    """With ``--push_to_hub true``, a token and a Hub that answers, before anything loads (transformers would
    fail in ``Trainer.__init__``, after the model loaded, with two tracebacks).

    Raises:
        OSError: in one line, naming ``--push_to_hub`` and what is missing.
    """
    if not push_to_hub:
        return
    from huggingface_hub import constants, get_token

    if hub_offline():
        raise OSError(
            f"--push_to_hub true: {HUB_OFFLINE_ENV} is set, so nothing can be uploaded; unset it, or drop --push_to_hub"
        )
    if hub_token is None and get_token() is None:
        raise OSError(
            "--push_to_hub true: no Hugging Face token; log in (`hf auth login`), set HF_TOKEN or --hub_token, or "
            "drop --push_to_hub"
        )
    endpoint = constants.ENDPOINT
    if endpoint not in _REACHABLE:
        _REACHABLE[endpoint] = hub_reachable(endpoint)
    if _REACHABLE[endpoint] is not None:
        raise OSError(
            f"--push_to_hub true: the Hugging Face Hub ({endpoint}) cannot be reached ({_REACHABLE[endpoint]}); "
            "connect to the network, or drop --push_to_hub (the model is saved in --output_dir either way)"
        )
