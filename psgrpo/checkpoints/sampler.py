"""TRL's ``RepeatSampler`` with an epoch-addressable shuffle, so a resumed run sees the same prompts.

TRL's sampler draws each epoch's permutation from one generator that lives as long as the
sampler: epoch e gets the (e+1)-th ``randperm``. A run resumed from a checkpoint builds a fresh
sampler, and ``Trainer`` skips the epochs already trained without iterating them, so the resumed
epoch e would get the *first* permutation, i.e. other prompts than the unbroken run.
:class:`EpochRepeatSampler` reseeds on every ``__iter__`` and discards e permutations first:
the same stream as TRL's sampler in an unbroken run (tested), and the same again after a resume.

The epoch must reach the sampler, also through the wrappers of a resumed epoch on several processes
(accelerate's ``SkipBatchSampler`` around its ``BatchSamplerShard``, which its ``set_epoch`` does not see
through): :func:`set_sampler_epoch` walks the whole chain, and the trainer calls it before every epoch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from trl.trainer.utils import RepeatSampler


class EpochRepeatSampler(RepeatSampler):
    """``RepeatSampler`` whose epoch-e order depends only on (seed, e); ``set_epoch`` is called by the Trainer."""

    epoch: int = 0

    @classmethod
    def like(cls, sampler: RepeatSampler) -> EpochRepeatSampler:
        """The same sampler (data, repeats, shuffle, seed) as TRL built it, made epoch-addressable."""
        return cls(
            data_source=sampler.data_source,
            mini_repeat_count=sampler.mini_repeat_count,
            batch_size=sampler.batch_size,
            repeat_count=sampler.repeat_count,
            shuffle=sampler.shuffle,
            seed=sampler.seed,
        )

    def set_epoch(self, epoch: int) -> None:
        """Called (through accelerate's data loader) at the start of every epoch, also the first resumed one."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.shuffle and self.seed is not None:  # without a seed TRL's order is not reproducible anyway
            self.generator = torch.Generator().manual_seed(self.seed)
            for _ in range(self.epoch):  # the permutations of the earlier epochs
                torch.randperm(self.num_samples, generator=self.generator)
        return super().__iter__()


def set_sampler_epoch(loader: Any, epoch: int) -> int:
    """Call ``set_epoch(epoch)`` on every sampler below ``loader`` (its ``batch_sampler`` / ``sampler`` chain, at
    any depth: ``DataLoaderShard`` → ``SkipBatchSampler`` → ``BatchSamplerShard`` → ``BatchSampler`` → sampler);
    return how many were set."""
    todo, seen, count = [getattr(loader, "batch_sampler", None), getattr(loader, "sampler", None)], set(), 0
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if callable(getattr(node, "set_epoch", None)):
            node.set_epoch(epoch)
            count += 1
        todo += [getattr(node, "batch_sampler", None), getattr(node, "sampler", None)]
    return count
