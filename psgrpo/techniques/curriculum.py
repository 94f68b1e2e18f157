"""Curriculum: sample training prompts from the easiest part of the dataset first, then harder ones.

Rows are ranked by a numeric difficulty column (arith: number of steps; GSM8K: number of gold
solution lines; ties in random order). At training progress p (optimizer step / ``curriculum_steps``)
prompts are drawn from the easiest fraction

    f(p) = start + (1 − start) · min(p, 1)                (``linear``)

of that ranking, so the pool grows from ``curriculum_start_fraction`` of the data to all of it.

:class:`CurriculumRepeatSampler` replaces TRL's ``RepeatSampler`` and keeps its layout: the index
stream is a series of chunks, each holding ``batch_size`` distinct prompts (one generation batch),
each prompt ``mini_repeat_count`` (= num_generations) times in a row, the whole chunk repeated
``repeat_count`` (= num_iterations × steps_per_generation) times. A chunk spans
``repeat_count / gradient_accumulation_steps`` optimizer steps, which is how the sampler knows the
progress of chunk k without looking at the trainer: p_k = k · steps_per_chunk / curriculum_steps.
Each chunk draws from its own seeded generator, so every process (same seed) yields the same
stream and resuming from a checkpoint replays it exactly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from psgrpo.config.options import Curriculum, check_choice


def curriculum_fraction(schedule: str, progress: float, start_fraction: float) -> float:
    """Fraction of the easiest rows available at ``progress`` (≥ 0; values past 1 mean the end)."""
    if schedule == "none":
        return 1.0
    if schedule == "linear":
        return start_fraction + (1.0 - start_fraction) * min(max(progress, 0.0), 1.0)
    check_choice("curriculum", schedule, Curriculum)
    raise AssertionError(f"curriculum {schedule!r} is allowed but has no schedule")


def easiest_first(difficulties: Sequence[float], seed: int) -> list[int]:
    """Row indices sorted by difficulty (ascending); rows of equal difficulty in a seeded random order."""
    order = torch.randperm(len(difficulties), generator=torch.Generator().manual_seed(seed)).tolist()
    return sorted(order, key=lambda i: difficulties[i])  # stable: keeps the random order within ties


def check_difficulties(values: Sequence[object], column: str) -> list[float]:
    """The difficulty column as floats; ValueError naming the first bad row otherwise."""
    out = []
    for row, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(
                f"curriculum: row {row} of the train dataset has {column}={value!r}; expected a finite number "
                "(higher = harder)"
            )
        out.append(float(value))
    return out


class CurriculumRepeatSampler(Sampler[int]):
    """TRL's ``RepeatSampler`` layout, with each chunk's prompts drawn from the current easy pool.

    Args:
        difficulties: one number per dataset row (higher = harder).
        mini_repeat_count: consecutive copies of each prompt (num_generations).
        batch_size: distinct prompts per chunk (generation_batch_size / num_generations).
        repeat_count: times each chunk is repeated (num_iterations × steps_per_generation).
        steps_per_chunk: optimizer steps one chunk lasts (repeat_count / gradient_accumulation_steps).
        curriculum_steps: optimizer steps until the whole dataset is in the pool.
        start_fraction: pool fraction at step 0.
        schedule: ``linear`` (or ``none``: the whole dataset from the start).
        seed: seeds the tie order and every chunk's draw.
    """

    def __init__(
        self,
        difficulties: Sequence[float],
        mini_repeat_count: int,
        batch_size: int,
        repeat_count: int,
        steps_per_chunk: float,
        curriculum_steps: int,
        start_fraction: float,
        schedule: str = "linear",
        seed: int = 0,
    ) -> None:
        if len(difficulties) < batch_size:
            raise ValueError(
                f"curriculum: the train dataset has {len(difficulties)} rows, fewer than the {batch_size} distinct "
                "prompts of one generation batch"
            )
        if curriculum_steps <= 0:
            raise ValueError(f"curriculum_steps must be positive, got {curriculum_steps}")
        self.order = easiest_first(difficulties, seed)
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.steps_per_chunk = steps_per_chunk
        self.curriculum_steps = curriculum_steps
        self.start_fraction = start_fraction
        self.schedule = schedule
        self.seed = seed
        self.chunks_per_epoch = len(difficulties) // batch_size
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Called by the Trainer (through accelerate) at the start of each epoch."""
        self.epoch = epoch

    def pool_size(self, chunk: int) -> int:
        """How many of the easiest rows chunk ``chunk`` (counted from the start of training) draws from."""
        progress = chunk * self.steps_per_chunk / self.curriculum_steps
        fraction = curriculum_fraction(self.schedule, progress, self.start_fraction)
        wanted = math.ceil(fraction * len(self.order) - 1e-9)  # 0.6 · 40 is 24.000000000000004 in floats
        return min(len(self.order), max(self.batch_size, wanted))

    def chunk_indices(self, chunk: int) -> list[int]:
        """The ``batch_size`` distinct row indices of chunk ``chunk``."""
        size = self.pool_size(chunk)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + chunk)
        picks = torch.randperm(size, generator=generator)[: self.batch_size].tolist()
        return [self.order[i] for i in picks]

    def __iter__(self) -> Iterator[int]:
        first = self.epoch * self.chunks_per_epoch
        for chunk in range(first, first + self.chunks_per_epoch):
            indices = self.chunk_indices(chunk)
            for _ in range(self.repeat_count):
                for index in indices:
                    yield from [index] * self.mini_repeat_count

    def __len__(self) -> int:
        return self.chunks_per_epoch * self.batch_size * self.mini_repeat_count * self.repeat_count
