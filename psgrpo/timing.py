"""Where a training step's time goes: wall seconds per phase, logged as ``time/<phase>_s``.

``--phase_times true`` (off by default, so a normal run pays nothing but a ``nullcontext`` per phase)
times each optimizer step by phase, with exclusive accounting: a phase nested in another is taken out
of the outer one, so the phases of a step add up to its wall time. The phases, and the TRL members
:class:`PhaseTimingMixin` wraps to get them (no TRL code is copied)::

    generation       GRPOTrainer._generate (tokenising prompts, transformers' generate or vLLM,
                     decoding; tree sampling's levels and its entropy forwards run inside it)
    logprobs         GRPOTrainer._get_per_token_logps_and_entropies called by the rollout: the
                     reference model's and the old policy's log-probs (B, T)
    rewards          GRPOTrainer._calculate_rewards (every reward function)
    rollout_other    the rest of GRPOTrainer._generate_and_score_completions: padding, gathers,
                     A_i, TRL's metrics and completion logging
    process_signal   the method's signal (ps scorer, vps probes, tree values); 0 for grpo
    advantages       the token advantages A_t, their checks and the process metrics
    loss_forward     GRPOTrainer.compute_loss (the policy forward and the clipped loss)
    backward         the rest of GRPOTrainer.training_step: accelerate's backward
    guards           psgrpo's finite loss and gradient check after the backward
    optimizer        the optimizer's step (between the Trainer's pre- and post-optimizer callbacks)
    other            the step's wall time not in any phase: gradient clipping, the scheduler,
                     zero_grad, the data loader, callbacks and logging

Each phase edge calls ``torch.cuda.synchronize()`` when the model is on a CUDA device (only when
the breakdown is on), so kernels launched in one phase are not counted in the next. That costs a
little overlap; the step times with the breakdown on are therefore an upper bound of those without.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
from transformers import TrainerCallback

PHASES = (
    "generation",
    "logprobs",
    "rewards",
    "rollout_other",
    "process_signal",
    "advantages",
    "loss_forward",
    "backward",
    "guards",
    "optimizer",
    "other",
)
"""Every phase :class:`PhaseTimer` reports for a training step, in the order a step runs them."""

METRIC_PREFIX = "time/"
METRIC_SUFFIX = "_s"


def device_seconds(device: torch.device | None, clock: Any = time.perf_counter) -> float:
    """``clock()`` once the work queued on ``device`` has finished.

    CUDA runs kernels asynchronously: a reading taken right after a launch would leave the kernels still
    running out of the interval that launched them. On any other device (or ``None``) it is just ``clock()``.
    """
    if getattr(device, "type", None) == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize(device)
    return clock()


def metric_name(phase: str) -> str:
    """``generation`` → ``time/generation_s`` (seconds per optimizer step, averaged over logged steps)."""
    return f"{METRIC_PREFIX}{phase}{METRIC_SUFFIX}"


class PhaseTimer:
    """Accumulates wall seconds per phase, exclusive of nested phases.

    Args:
        enabled: when False, :meth:`phase` is a ``nullcontext`` and nothing is measured.
        synchronize: call ``torch.cuda.synchronize()`` at every phase edge (a model on a CUDA device).
        clock: a ``() -> seconds`` clock (``time.perf_counter``; tests pass a fake one).
    """

    def __init__(self, enabled: bool, synchronize: bool = False, clock: Any = time.perf_counter) -> None:
        self.enabled = enabled
        self.synchronize = synchronize and torch.cuda.is_available()
        self._clock = clock
        self._stack: list[str] = []
        self._since = 0.0  # when the innermost open phase last resumed
        self.totals: dict[str, float] = defaultdict(float)

    @property
    def current(self) -> str | None:
        """The innermost open phase, or ``None`` outside every phase."""
        return self._stack[-1] if self._stack else None

    def _edge(self) -> float:
        if self.synchronize:
            torch.cuda.synchronize()
        return self._clock()

    def phase(self, name: str) -> Any:
        """Context manager timing ``name`` (a no-op when the timer is off)."""
        return self._phase(name) if self.enabled else nullcontext()

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        now = self._edge()
        if self._stack:  # the outer phase pauses while this one runs
            self.totals[self._stack[-1]] += now - self._since
        self._stack.append(name)
        self._since = now
        try:
            yield
        finally:
            now = self._edge()
            self.totals[self._stack.pop()] += now - self._since
            self._since = now  # the outer phase, if any, resumes

    def take(self) -> dict[str, float]:
        """The seconds accumulated per phase since the last call (phases with none left out), then reset."""
        totals, self.totals = dict(self.totals), defaultdict(float)
        return totals


class StepPhaseCallback(TrainerCallback):
    """Times the optimizer step and the whole step, and hands the step's phases to TRL's metrics.

    At ``on_step_end`` it appends ``time/<phase>_s`` for every phase of :data:`PHASES` (0 for a phase
    that did not run) and ``time/step_s`` (the step's wall time, from ``on_step_begin``) to
    ``trainer._metrics["train"]``, which TRL averages over the logged steps.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self._step_start: float | None = None
        self._optimizer_start: float | None = None

    def on_step_begin(self, args, state, control, **kwargs) -> None:
        timer = self.trainer.phase_timer
        timer.take()  # anything timed between steps (evaluation, a callback) is not this step's
        self._step_start = timer._edge()

    def on_pre_optimizer_step(self, args, state, control, **kwargs) -> None:
        self._optimizer_start = self.trainer.phase_timer._edge()

    def on_optimizer_step(self, args, state, control, **kwargs) -> None:
        timer = self.trainer.phase_timer
        if self._optimizer_start is not None:
            timer.totals["optimizer"] += timer._edge() - self._optimizer_start
            self._optimizer_start = None

    def on_step_end(self, args, state, control, **kwargs) -> None:
        timer = self.trainer.phase_timer
        if self._step_start is None:
            return
        step = timer._edge() - self._step_start
        totals = timer.take()
        totals["other"] = max(0.0, step - sum(totals.values()))
        metrics = self.trainer._metrics["train"]
        for phase in PHASES:
            metrics[metric_name(phase)].append(totals.get(phase, 0.0))
        metrics[metric_name("step")].append(step)
        self._step_start = None


class PhaseTimingMixin:
    """Wraps the TRL members a step runs in :class:`PhaseTimer` phases (see the module doc).

    Mix it in before ``trl.GRPOTrainer``; ``args.phase_times`` (a :class:`ProcessGRPOConfig` field;
    absent on a stock ``GRPOConfig``, where :meth:`enable_phase_times` turns it on) enables it.
    Without it every wrapper is one ``nullcontext``.
    """

    phase_timer: PhaseTimer = PhaseTimer(enabled=False)

    def enable_phase_times(self) -> None:
        """Time this trainer's steps from now on (``time/<phase>_s`` metrics); call after ``__init__``."""
        if self.phase_timer.enabled:
            return
        device = getattr(self.accelerator, "device", None)
        self.phase_timer = PhaseTimer(enabled=True, synchronize=getattr(device, "type", None) == "cuda")
        self.add_callback(StepPhaseCallback(self))

    def _generate(self, prompts):
        with self.phase_timer.phase("generation"):
            return super()._generate(prompts)

    def _generate_and_score_completions(self, inputs):
        with self.phase_timer.phase("rollout_other"):
            return super()._generate_and_score_completions(inputs)

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        # the rollout's reference / old log-probs; inside compute_loss (loss_forward) or generation
        # (tree's entropy forwards) the call stays in that phase
        own = self.phase_timer.current == "rollout_other"
        with self.phase_timer.phase("logprobs") if own else nullcontext():
            return super()._get_per_token_logps_and_entropies(*args, **kwargs)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        with self.phase_timer.phase("rewards"):
            return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        with self.phase_timer.phase("loss_forward"):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def training_step(self, model, inputs, num_items_in_batch=None):
        with self.phase_timer.phase("backward"):
            return super().training_step(model, inputs, num_items_in_batch)


def timed(phase: str) -> Any:
    """Decorate a trainer method so that its own time (nested phases taken out) counts as ``phase``."""

    def decorate(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self.phase_timer.phase(phase):
                return method(self, *args, **kwargs)

        return wrapper

    return decorate
