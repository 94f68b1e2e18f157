"""Curriculum sampler: schedule, indices only from the easy pool, and TRL's repeat/grouping layout."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trl.trainer.utils import RepeatSampler

from psgrpo.techniques.curriculum import (
    CurriculumRepeatSampler,
    check_difficulties,
    curriculum_fraction,
    easiest_first,
)

DIFFICULTIES = [i % 5 for i in range(40)]  # 8 rows at each level 0..4


def _sampler(**overrides):
    kwargs = dict(
        difficulties=DIFFICULTIES,
        mini_repeat_count=3,
        batch_size=4,
        repeat_count=2,
        steps_per_chunk=1.0,
        curriculum_steps=5,
        start_fraction=0.2,
        seed=0,
    )
    kwargs.update(overrides)
    return CurriculumRepeatSampler(**kwargs)


def _chunks(sampler):
    items = list(sampler)
    size = sampler.batch_size * sampler.mini_repeat_count * sampler.repeat_count
    return [items[i : i + size] for i in range(0, len(items), size)]


def test_fraction_schedule():
    assert curriculum_fraction("linear", 0.0, 0.2) == pytest.approx(0.2)
    assert curriculum_fraction("linear", 0.5, 0.2) == pytest.approx(0.6)
    assert curriculum_fraction("linear", 2.0, 0.2) == pytest.approx(1.0)
    assert curriculum_fraction("none", 0.0, 0.2) == 1.0
    with pytest.raises(ValueError, match="curriculum='.*' is not allowed"):
        curriculum_fraction("exp", 0.1, 0.2)


def test_easiest_first_sorted_and_seeded():
    order = easiest_first(DIFFICULTIES, seed=3)
    assert sorted(order) == list(range(40))
    assert [DIFFICULTIES[i] for i in order] == sorted(DIFFICULTIES)
    assert order == easiest_first(DIFFICULTIES, seed=3)
    assert order != easiest_first(DIFFICULTIES, seed=4)  # ties are shuffled, not in row order


def test_pool_grows_and_indices_stay_in_it():
    sampler = _sampler()
    # chunk k is at step k (steps_per_chunk 1) → fraction 0.2 + 0.8·k/5 of 40 rows
    assert [sampler.pool_size(k) for k in range(7)] == [8, 15, 21, 28, 34, 40, 40]
    for k, chunk in enumerate(_chunks(sampler)):
        allowed = set(sampler.order[: sampler.pool_size(k)])
        assert set(chunk) <= allowed
    first = set(_chunks(sampler)[0])
    assert {DIFFICULTIES[i] for i in first} == {0}  # the easiest fifth is exactly level 0


def test_same_layout_as_trl_repeat_sampler():
    """Same length and the same pattern of repeats: G copies in a row, each chunk repeated repeat_count times."""
    ours = list(_sampler())
    trl = list(RepeatSampler(list(range(40)), mini_repeat_count=3, batch_size=4, repeat_count=2, seed=0))
    assert len(ours) == len(trl) == len(_sampler())

    def pattern(items):  # positions that hold the same index as an earlier one, chunk by chunk
        return [
            [chunk.index(x) for x in chunk] for chunk in (items[i : i + 24] for i in range(0, len(items), 24))
        ]

    assert pattern(ours) == pattern(trl)
    for chunk in _chunks(_sampler()):
        assert len(set(chunk)) == 4  # distinct prompts within a generation batch


def test_epochs_continue_the_schedule_and_are_reproducible():
    sampler = _sampler(curriculum_steps=20)
    epoch0 = _chunks(sampler)
    sampler.set_epoch(1)
    epoch1 = _chunks(sampler)
    assert len(epoch0) == sampler.chunks_per_epoch == 10
    assert epoch1[0] == [i for i in sampler.chunk_indices(10) for _ in range(3)] * 2  # global chunk 10
    again = _sampler(curriculum_steps=20)
    again.set_epoch(1)
    assert _chunks(again) == epoch1  # a resumed run replays the same stream


def test_steps_per_chunk_scales_progress():
    # With gradient accumulation 2 and steps_per_generation 1, a chunk lasts half an optimizer step.
    sampler = _sampler(steps_per_chunk=0.5, curriculum_steps=5)
    assert sampler.pool_size(2) == math.ceil((0.2 + 0.8 * 1 / 5) * 40)


@settings(max_examples=30, deadline=None)
@given(
    difficulties=st.lists(st.integers(0, 9), min_size=6, max_size=60),
    start=st.floats(0.05, 1.0),
    batch=st.integers(1, 6),
)
def test_never_outside_pool_and_never_too_small(difficulties, start, batch):
    if len(difficulties) < batch:
        return
    sampler = _sampler(difficulties=difficulties, batch_size=batch, start_fraction=start, curriculum_steps=3)
    for k, chunk in enumerate(_chunks(sampler)):
        pool = sampler.order[: sampler.pool_size(k)]
        assert len(pool) >= batch
        assert set(chunk) <= set(pool)
        hardest_allowed = max(difficulties[i] for i in pool)
        assert all(difficulties[i] <= hardest_allowed for i in chunk)


def test_bad_difficulties_name_the_row():
    assert check_difficulties([1, 2.5, 3], "difficulty") == [1.0, 2.5, 3.0]
    for bad in (None, "hard", float("nan"), True):
        with pytest.raises(ValueError, match=r"row 1 of the train dataset has level="):
            check_difficulties([1, bad], "level")
    with pytest.raises(ValueError, match="fewer than the 4 distinct prompts"):
        _sampler(difficulties=[0, 1, 2])
