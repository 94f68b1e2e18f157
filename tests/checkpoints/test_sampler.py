"""EpochRepeatSampler: TRL's stream in an unbroken run, and the same epoch again from a fresh sampler."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from trl.trainer.utils import RepeatSampler

from psgrpo.checkpoints.sampler import EpochRepeatSampler, set_sampler_epoch

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


def test_the_epoch_reaches_the_sampler_of_a_resumed_epoch_on_several_processes():
    """accelerate's set_epoch (and transformers' extra reach) stop at the SkipBatchSampler that wraps a
    BatchSamplerShard when a run on 2+ processes resumes mid-epoch: the sampler kept epoch 0's shuffle."""
    from accelerate.data_loader import BatchSamplerShard, DataLoaderShard, SkipBatchSampler
    from torch.utils.data import BatchSampler

    sampler = EpochRepeatSampler(
        data_source=list(range(8)), mini_repeat_count=2, batch_size=2, shuffle=True, seed=0
    )
    shard = BatchSamplerShard(
        BatchSampler(sampler, batch_size=4, drop_last=False), num_processes=2, process_index=0
    )
    loader = DataLoaderShard(list(range(8)), batch_sampler=SkipBatchSampler(shard, skip_batches=1))
    loader.set_epoch(3)
    assert (
        sampler.epoch == 0
    )  # what accelerate alone leaves (transformers' extra reach is one level short too)
    assert set_sampler_epoch(loader, 3) == 1 and sampler.epoch == 3
    fresh = EpochRepeatSampler(
        data_source=list(range(8)), mini_repeat_count=2, batch_size=2, shuffle=True, seed=0
    )
    fresh.set_epoch(3)
    assert list(sampler) == list(fresh)


def test_the_trainer_sets_the_epoch_before_each_epoch_runs():
    """CheckpointMixin._run_epoch hands the epoch to every sampler under the loader before transformers' epoch."""
    from psgrpo.checkpoints.trainer_mixin import CheckpointMixin

    seen = []

    class Base:
        def _run_epoch(self, **kwargs):
            seen.append(kwargs["train_dataloader"].batch_sampler.sampler.epoch)

    class Trainer(CheckpointMixin, Base):
        pass

    sampler = EpochRepeatSampler(
        data_source=list(range(4)), mini_repeat_count=1, batch_size=4, shuffle=True, seed=0
    )
    loader = DataLoaderLike(sampler)
    Trainer()._run_epoch(model=None, epoch=2, train_dataloader=loader)
    assert seen == [2]


class DataLoaderLike:
    """The attributes the epoch walk follows: ``batch_sampler.sampler``."""

    def __init__(self, sampler):
        from torch.utils.data import BatchSampler

        self.batch_sampler = BatchSampler(sampler, batch_size=4, drop_last=False)
