"""Atomic checkpoints on the file system: commit, completeness, choosing the checkpoint to resume, rotation.

What a kill leaves behind is a file-system state; these tests build those states directly (and,
for the commit, interrupt it at each rename). The real SIGKILL runs are in test_resume_equals_unbroken.py.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.checkpoints.atomic import (
    MARKER,
    commit_checkpoint,
    incomplete_reason,
    last_complete_checkpoint,
    resolve_resume_checkpoint,
    rotate_checkpoints,
    staging_root,
)


def _stage(run_dir: Path, step: int, payload: bytes = b"weights") -> Path:
    """A staged checkpoint as transformers leaves it in the staging root: a few files, a sub-directory."""
    staged = staging_root(run_dir, step) / f"checkpoint-{step}"
    (staged / "sub").mkdir(parents=True)
    (staged / "model.safetensors").write_bytes(payload)
    (staged / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (staged / "sub" / "shard.bin").write_bytes(b"x" * 10)
    return staged


def _commit(run_dir: Path, step: int, payload: bytes = b"weights") -> Path:
    final = run_dir / f"checkpoint-{step}"
    commit_checkpoint(_stage(run_dir, step, payload), final, step)
    return final


def test_commit_writes_the_marker_and_renames(tmp_path):
    final = _commit(tmp_path, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-3"]  # staging root gone
    marker = json.loads((final / MARKER).read_text())
    assert marker == {
        "global_step": 3,
        "files": {
            "model.safetensors": 7,
            "sub/shard.bin": 10,
            "trainer_state.json": len(json.dumps({"global_step": 3})),
        },
    }
    assert incomplete_reason(final) is None


def test_commit_replaces_a_checkpoint_of_the_same_step(tmp_path):
    _commit(tmp_path, 4, b"old")
    final = _commit(tmp_path, 4, b"new weights")
    assert (final / "model.safetensors").read_bytes() == b"new weights" and incomplete_reason(final) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-4"]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda c: (c / MARKER).unlink(), "has no psgrpo_checkpoint.json"),
        (lambda c: (c / "sub" / "shard.bin").unlink(), "sub/shard.bin is missing"),
        (
            lambda c: (c / "model.safetensors").write_bytes(b"w"),
            "model.safetensors has 1 bytes, psgrpo_checkpoint.json says 7",
        ),
        (lambda c: (c / MARKER).write_text("{"), "psgrpo_checkpoint.json is unreadable"),
    ],
)
def test_damaged_checkpoints_are_incomplete(tmp_path, damage, reason):
    final = _commit(tmp_path, 2)
    damage(final)
    assert reason in incomplete_reason(final)


def test_staging_and_missing_directories_are_incomplete(tmp_path):
    staged = _stage(tmp_path, 5)
    assert "staging directory" in incomplete_reason(staged)
    assert "staging directory" in incomplete_reason(staged.parent)
    assert "does not exist" in incomplete_reason(tmp_path / "checkpoint-9")


def test_resume_true_skips_incomplete_checkpoints_with_a_warning(tmp_path, caplog):
    _commit(tmp_path, 2)
    (tmp_path / "checkpoint-4").mkdir()  # e.g. a plain transformers save killed half-way
    _stage(tmp_path, 6)  # a psgrpo save killed half-way
    with caplog.at_level(logging.WARNING):
        assert resolve_resume_checkpoint("True", tmp_path) == str(tmp_path / "checkpoint-2")
    assert f"skipping incomplete checkpoint {tmp_path / 'partial-checkpoint-6'}" in caplog.text
    assert f"skipping incomplete checkpoint {tmp_path / 'checkpoint-4'}" in caplog.text
    assert resolve_resume_checkpoint(True, tmp_path) == str(tmp_path / "checkpoint-2")


def test_resume_flags_that_mean_no_resume(tmp_path):
    for value in (None, False, "false", " FALSE "):
        assert resolve_resume_checkpoint(value, tmp_path) is None


def test_resume_true_without_a_complete_checkpoint_is_an_error(tmp_path):
    _stage(tmp_path, 2)
    with pytest.raises(
        ValueError, match=r"no complete checkpoint in .* partial-checkpoint-2 \(it is the staging"
    ):
        resolve_resume_checkpoint(True, tmp_path)
    with pytest.raises(ValueError, match="incomplete ones: none"):
        resolve_resume_checkpoint(True, tmp_path / "missing")


def test_explicit_incomplete_checkpoint_is_an_error_naming_the_complete_one(tmp_path):
    complete = _commit(tmp_path, 2)
    (tmp_path / "checkpoint-4").mkdir()
    with pytest.raises(
        ValueError, match=rf"cannot resume from .*checkpoint-4: it has no {MARKER}.*{complete}"
    ):
        resolve_resume_checkpoint(str(tmp_path / "checkpoint-4"), tmp_path)
    staged = _stage(tmp_path, 6)
    with pytest.raises(ValueError, match=rf"staging directory of a save that never finished.*{complete}"):
        resolve_resume_checkpoint(str(staged), tmp_path)
    assert resolve_resume_checkpoint(str(complete), tmp_path) == str(complete)


class Killed(BaseException):
    """Stands for a SIGKILL: nothing after the point where it is raised runs."""


@pytest.mark.parametrize(("fail_at", "resumed"), [(1, "checkpoint-4"), (2, "checkpoint-2")])
def test_a_commit_interrupted_at_either_rename_resumes_a_complete_checkpoint(
    tmp_path, monkeypatch, fail_at, resumed
):
    """Replacing checkpoint-4 renames twice: before the first the old checkpoint-4 is intact, before the second it
    is gone; either way resume takes a complete checkpoint, never the staged one."""
    _commit(tmp_path, 2)
    _commit(tmp_path, 4, b"old")
    calls = []
    real_rename = os.rename

    def rename(src, dst):
        calls.append(dst)
        if len(calls) == fail_at:
            raise Killed
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(Killed):
        commit_checkpoint(_stage(tmp_path, 4, b"new"), tmp_path / "checkpoint-4", 4)
    monkeypatch.undo()
    chosen = resolve_resume_checkpoint(True, tmp_path)
    assert chosen == str(tmp_path / resumed) and incomplete_reason(chosen) is None
    if resumed == "checkpoint-4":
        assert (tmp_path / "checkpoint-4" / "model.safetensors").read_bytes() == b"old"


def test_rotation_keeps_the_committed_checkpoint_and_drops_leftovers(tmp_path):
    for step in (2, 4, 10):  # checkpoint-10: left by an earlier run in the same directory
        _commit(tmp_path, step)
    os.utime(tmp_path / "checkpoint-10", (1, 1))  # older than everything
    newest = _commit(tmp_path, 6)
    _stage(tmp_path, 8)
    rotate_checkpoints(tmp_path, keep=1, newest=newest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-6"]


def test_rotation_protects_the_best_checkpoint_and_ignores_no_limit(tmp_path):
    best = _commit(tmp_path, 2)
    _commit(tmp_path, 4)
    newest = _commit(tmp_path, 6)
    rotate_checkpoints(tmp_path, keep=None, newest=newest, best=str(best))
    assert len(list(tmp_path.iterdir())) == 3
    rotate_checkpoints(tmp_path, keep=1, newest=newest, best=str(best))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-6"]


KINDS = st.sampled_from(["complete", "no_marker", "truncated", "staged"])


@settings(max_examples=20, deadline=None)
@given(st.dictionaries(st.integers(1, 30), KINDS, max_size=6))
def test_last_complete_checkpoint_is_the_newest_complete_one(layout):
    """Any mix of complete, damaged and staged checkpoints: the highest complete step wins; newer others are named."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        for step, kind in layout.items():
            if kind == "staged":
                _stage(run_dir, step)
                continue
            final = _commit(run_dir, step)
            if kind == "no_marker":
                (final / MARKER).unlink()
            elif kind == "truncated":
                (final / "model.safetensors").write_bytes(b"")
        chosen, skipped = last_complete_checkpoint(run_dir)
        complete = [s for s, k in layout.items() if k == "complete"]
        expected = max(complete, default=None)
        assert chosen == (None if expected is None else run_dir / f"checkpoint-{expected}")
        newer = {s for s, k in layout.items() if k != "complete" and (expected is None or s > expected)}
        assert {int(p.name.rsplit("-", 1)[1]) for p, _ in skipped} == newer


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.integers(1, 50), min_size=1, max_size=7, unique=True),
    st.integers(0, 8),
    st.data(),
)
def test_rotation_deletes_only_the_oldest(steps, keep, data):
    """keep k: the k − 1 most recent others survive with the committed one; nothing newer is ever deleted."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        for age, step in enumerate(steps):  # steps in commit order: the list order, not the step number
            os.utime(_commit(run_dir, step), (age, age))
        newest = run_dir / f"checkpoint-{data.draw(st.sampled_from(steps))}"
        os.utime(newest, (100, 100))
        rotate_checkpoints(run_dir, keep=keep, newest=newest)
        left = {p.name for p in run_dir.iterdir()}
        by_age = [f"checkpoint-{s}" for s in steps if f"checkpoint-{s}" != newest.name] + [newest.name]
        expected = by_age if keep == 0 else by_age[-max(keep, 1) :]
        assert left == set(expected)
