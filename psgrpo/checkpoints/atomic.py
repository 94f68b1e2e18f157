"""Atomic checkpoints: a ``checkpoint-N`` directory exists only once everything in it is on disk.

transformers writes ``output_dir/checkpoint-N`` file by file (weights, optimizer, scheduler, RNG,
trainer state; then callbacks add their own files) and rotates old checkpoints in between, so a
process killed during a save leaves a half-written ``checkpoint-N`` that ``get_last_checkpoint``
would pick up next. psgrpo saves instead as follows (:class:`~psgrpo.checkpoints.trainer_mixin.CheckpointMixin`):

1. everything is written into ``output_dir/partial-checkpoint-N/checkpoint-N`` (the staging root
   ``partial-checkpoint-N`` never matches ``checkpoint-*``, so neither transformers nor psgrpo
   mistakes it for a checkpoint);
2. :func:`commit_checkpoint` writes the marker ``psgrpo_checkpoint.json`` (every file's size),
   fsyncs all files and directories, and renames the directory to ``output_dir/checkpoint-N``;
3. :func:`rotate_checkpoints` then applies ``save_total_limit`` and never deletes the checkpoint
   just committed, and removes the staging roots that killed saves left behind.

A rename within one file system is atomic, so after a kill at any point the output directory
holds complete checkpoints and at most some ``partial-checkpoint-*`` leftovers.
:func:`resolve_resume_checkpoint` turns ``resume_from_checkpoint`` into a checkpoint to load:
``True`` (or ``"true"``) takes the newest *complete* checkpoint and warns about every newer
incomplete one it skips; an explicit path that is not a complete checkpoint is an error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

MARKER = "psgrpo_checkpoint.json"
"""Written last into a checkpoint: its presence (with matching file sizes) means the checkpoint is complete."""

STAGING_PREFIX = "partial-"
"""``partial-checkpoint-N``: the staging root a checkpoint is written in before its rename."""

CHECKPOINT_RE = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")
STAGING_RE = re.compile(rf"^{STAGING_PREFIX}{PREFIX_CHECKPOINT_DIR}-(\d+)$")

logger = logging.getLogger(__name__)


def checkpoint_name(step: int) -> str:
    """``checkpoint-{step}``, transformers' name for the checkpoint after ``step`` optimizer steps."""
    return f"{PREFIX_CHECKPOINT_DIR}-{step}"


def staging_root(run_dir: str | Path, step: int) -> Path:
    """``run_dir/partial-checkpoint-{step}``: transformers writes ``checkpoint-{step}`` inside it."""
    return Path(run_dir) / f"{STAGING_PREFIX}{checkpoint_name(step)}"


def fsync_path(path: Path) -> None:
    """Flush a file, or a directory's entries, to disk (directories: POSIX only; a no-op elsewhere)."""
    if path.is_dir() and os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_marker(checkpoint: Path, step: int) -> None:
    """fsync every file of ``checkpoint``, then write :data:`MARKER` listing their sizes (bytes), atomically."""
    files = {}
    for path in sorted(p for p in checkpoint.rglob("*") if p.is_file()):
        fsync_path(path)
        files[path.relative_to(checkpoint).as_posix()] = path.stat().st_size
    for directory in [checkpoint, *(p for p in checkpoint.rglob("*") if p.is_dir())]:
        fsync_path(directory)
    tmp = checkpoint / f"{MARKER}.tmp"
    tmp.write_text(json.dumps({"global_step": step, "files": files}, indent=1))
    fsync_path(tmp)
    os.replace(tmp, checkpoint / MARKER)
    fsync_path(checkpoint)


def incomplete_reason(checkpoint: str | Path) -> str | None:
    """Why ``checkpoint`` is not a complete psgrpo checkpoint, or ``None`` when it is one.

    Complete = a directory holding :data:`MARKER` whose every listed file exists with the listed size.
    """
    path = Path(checkpoint)
    if STAGING_RE.match(path.name) or STAGING_RE.match(path.parent.name):
        return (
            "it is the staging directory of a save that never finished (the process was stopped while saving)"
        )
    if not path.is_dir():
        return "it does not exist or is not a directory"
    marker = path / MARKER
    if not marker.is_file():
        return (
            f"it has no {MARKER}, which psgrpo writes last when a checkpoint is complete: the save was "
            "interrupted, or another program wrote the directory"
        )
    try:
        files = json.loads(marker.read_text())["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        return f"its {MARKER} is unreadable ({err})"
    for name, size in files.items():
        file = path / name
        if not file.is_file():
            return f"{name} is missing (listed in {MARKER})"
        if file.stat().st_size != size:
            return f"{name} has {file.stat().st_size} bytes, {MARKER} says {size}"
    return None


def commit_checkpoint(staged: Path, final: Path, step: int) -> None:
    """Mark ``staged`` complete and rename it to ``final``; then remove its staging root.

    An existing ``final`` (an older run's checkpoint of the same step) is first moved into the
    staging root, so that ``final`` is at every instant either absent, the old or the new complete
    checkpoint. The new checkpoint gets the current mtime (rotation orders by it).
    """
    write_marker(staged, step)
    if final.exists():
        os.rename(final, staged.parent / "replaced")
    os.rename(staged, final)
    os.utime(final)
    fsync_path(final.parent)
    shutil.rmtree(staged.parent)


def _numbered(run_dir: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
    """``(step, path)`` of the directories in ``run_dir`` whose name matches ``pattern``, newest step first."""
    if not run_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in run_dir.iterdir() if p.is_dir() and (m := pattern.match(p.name))]
    return sorted(found, reverse=True)


def last_complete_checkpoint(run_dir: str | Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The complete checkpoint with the highest step, and ``(path, reason)`` of each newer incomplete one.

    Incomplete ones are ``checkpoint-N`` directories without a valid marker and the staging roots of
    interrupted saves (``partial-checkpoint-N``), both with a step above the chosen checkpoint's.
    """
    run_dir = Path(run_dir)
    # newest step first; at equal steps the checkpoint before a staging leftover of the same step
    candidates = sorted(
        [(step, 1, path) for step, path in _numbered(run_dir, CHECKPOINT_RE)]
        + [(step, 0, path) for step, path in _numbered(run_dir, STAGING_RE)],
        key=lambda item: item[:2],
        reverse=True,
    )
    skipped: list[tuple[int, Path, str]] = []
    for step, _, path in candidates:
        reason = incomplete_reason(path)
        if reason is None:
            return path, [(p, r) for s, p, r in skipped if s > step]
        skipped.append((step, path, reason))
    return None, [(p, r) for _, p, r in skipped]


def resolve_resume_checkpoint(
    resume: str | bool | None, run_dir: str | Path, *, api: bool = False
) -> str | None:
    """The checkpoint ``Trainer.train(resume_from_checkpoint=...)`` should load, or ``None`` to start fresh.

    Args:
        resume: ``None``/``False``/``"false"``: no resume. ``True``/``"true"`` (any case): the newest
            complete checkpoint in ``run_dir``, skipping (with a warning naming each) newer incomplete ones.
            Anything else: a checkpoint directory, which must be complete.
        run_dir: the output directory the checkpoints are in.
        api: the messages name the Python API's ``resume_from_checkpoint=True`` instead of the flag.

    Raises:
        ValueError: ``True`` and no complete checkpoint exists, or an explicit path that is not a
            complete checkpoint (the message says why and names the newest complete one).
    """
    if isinstance(resume, str) and resume.strip().lower() in ("true", "false"):
        resume = resume.strip().lower() == "true"
    if resume is None or resume is False:
        return None
    if resume is True:
        chosen, skipped = last_complete_checkpoint(run_dir)
        for path, reason in skipped:
            logger.warning("resume: skipping incomplete checkpoint %s: %s", path, reason)
        if chosen is None:
            found = "; ".join(f"{p.name} ({r})" for p, r in skipped) or "none"
            from psgrpo.preflight import option_text

            raise ValueError(
                f"{option_text('resume_from_checkpoint', True if api else 'true', api=api)}: no complete checkpoint "
                f"in {run_dir} (incomplete ones: {found}). Start without "
                f"{option_text('resume_from_checkpoint', api=api)}, or pass a complete checkpoint directory."
            )
        logger.info("resume: from the last complete checkpoint %s", chosen)
        return str(chosen)
    reason = incomplete_reason(resume)
    if reason is not None:
        parent = Path(resume).parent
        newest, _ = last_complete_checkpoint(parent.parent if STAGING_RE.match(parent.name) else parent)
        hint = (
            f"the newest complete checkpoint next to it is {newest}"
            if newest
            else "there is no complete one next to it"
        )
        from psgrpo.preflight import option_text

        picks = option_text("resume_from_checkpoint", True if api else "true", api=api)
        raise ValueError(
            f"cannot resume from {resume}: {reason}. Resume from a complete checkpoint instead ({hint}; "
            f"{picks} picks it)."
        )
    return str(resume)


def rotate_checkpoints(run_dir: str | Path, keep: int | None, newest: Path, best: str | None = None) -> None:
    """Delete the oldest checkpoints (by mtime) beyond ``keep``, never ``newest`` nor ``best``; drop staging leftovers.

    Unlike transformers' rotation, which protects whichever checkpoint sorts last, the one just
    committed is named, so a higher-numbered checkpoint left by another run cannot displace it.
    """
    run_dir = Path(run_dir)
    for _, leftover in _numbered(run_dir, STAGING_RE):
        shutil.rmtree(leftover, ignore_errors=True)
    if keep is None or keep <= 0:
        return
    checkpoints = sorted((p for _, p in _numbered(run_dir, CHECKPOINT_RE)), key=lambda p: p.stat().st_mtime)
    protected = {Path(newest).resolve()} | ({Path(best).resolve()} if best else set())
    excess = len(checkpoints) - max(keep, len(protected))
    for path in checkpoints:
        if excess <= 0:
            break
        if path.resolve() not in protected:
            shutil.rmtree(path, ignore_errors=True)
            excess -= 1
