"""Which ``psgrpo compare`` process trains a run: an exclusive OS lock per run, held while it trains.

Several compare processes may share one ``OUTPUT_DIR`` (two cores, two processes, one sweep). Before
a run trains, its process takes a non-blocking ``flock`` on ``runs/.<label>-seed<N>.lock``; a process
that finds the lock taken leaves that run to its holder and goes on to the next. The kernel drops
the lock when the holder exits, however it exits (an exception, ``kill -9``, a lost session), so a
dead process never leaves a run claimed, and its unfinished directory is restarted by the next
process that claims it. Without the lock a second process would take the first one's half-written
run directory for an interrupted run and delete it.

``flock`` is honoured between processes of one machine; on a network file system it may not be, so
run the processes that share a directory on one machine. Where ``fcntl`` does not exist (Windows)
every claim succeeds, which is the behaviour of a single process.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no flock; one compare process per OUTPUT_DIR
    fcntl = None  # type: ignore[assignment]


def claim_path(run_dir: Path) -> Path:
    """``runs/.<label>-seed<N>.lock`` beside ``run_dir`` (outside it: the run directory is cleared on restart)."""
    return run_dir.with_name(f".{run_dir.name}.lock")


def claim_run(run_dir: Path) -> IO[str] | None:
    """Take ``run_dir``'s lock without waiting; return the open lock file, or None when another process holds it.

    Keep the returned file open while the run trains and close it afterwards (closing releases the
    lock). The file names the holder (``pid N on HOST``) for :func:`claim_holder`.
    """
    path = claim_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    if fcntl is not None:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    handle.flush()
    return handle


def claim_holder(run_dir: Path) -> str:
    """Who holds ``run_dir``'s lock, as its holder wrote it (``pid N on HOST``), or ``another process``."""
    try:
        return claim_path(run_dir).read_text().strip() or "another process"
    except OSError:
        return "another process"
