"""EpochRepeatSampler: TRL's stream in an unbroken run, and the same epoch again from a fresh sampler."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from trl.trainer.utils import RepeatSampler

from psgrpo.checkpoints.sampler import EpochRepeatSampler

SAMPLERS = st.fixed_dictionaries(
    {
        "data_source": st.integers(1, 40).map(range),
        "mini_repeat_count": st.integers(1, 4),
        "batch_size": st.integers(1, 6),
        "repeat_count": st.integers(1, 3),
        "seed": st.integers(0, 2**31 - 1),
    }
)


@settings(max_examples=50, deadline=None)
@given(SAMPLERS, st.integers(1, 5))
def test_unbroken_stream_equals_trl(kwargs, epochs):
    """Iterated epoch after epoch (set_epoch before each, as the Trainer does), it yields TRL's sampler's stream."""
    trl_sampler, ours = RepeatSampler(**kwargs), EpochRepeatSampler(**kwargs)
    for epoch in range(epochs):
        ours.set_epoch(epoch)
        assert list(ours) == list(trl_sampler)
    assert len(ours) == len(trl_sampler)


@settings(max_examples=50, deadline=None)
@given(SAMPLERS, st.integers(0, 5))
def test_a_fresh_sampler_yields_the_same_epoch(kwargs, epoch):
    """What a resumed run builds: a new sampler, set to epoch e, yields epoch e of the long-lived one."""
    long_lived = EpochRepeatSampler(**kwargs)
    for e in range(epoch + 1):
        long_lived.set_epoch(e)
        expected = list(long_lived)
    fresh = EpochRepeatSampler.like(RepeatSampler(**kwargs))
    fresh.set_epoch(epoch)
    assert list(fresh) == expected


def test_unshuffled_and_unseeded_samplers_keep_trl_behaviour():
    unshuffled = EpochRepeatSampler(range(6), mini_repeat_count=2, batch_size=3, shuffle=False)
    unshuffled.set_epoch(3)
    assert list(unshuffled) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    unseeded = EpochRepeatSampler(range(6), mini_repeat_count=1, batch_size=3, seed=None)
    assert sorted(unseeded) == list(range(6))
