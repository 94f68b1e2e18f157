"""psgrpo.timing: exclusive per-phase wall time, and a real step's ``time/<phase>_s`` metrics."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from trainer_helpers import length_reward, save_tiny_model, tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.timing import PHASES, PhaseTimer, device_seconds, metric_name
from psgrpo.trainer import ProcessGRPOTrainer


class FakeClock:
    """A clock that moves only when told: ``advance(s)``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_a_nested_phase_is_taken_out_of_the_outer_one():
    clock = FakeClock()
    timer = PhaseTimer(enabled=True, clock=clock)
    with timer.phase("outer"):
        clock.advance(1.0)
        with timer.phase("inner"):
            clock.advance(2.0)
            assert timer.current == "inner"
        clock.advance(4.0)
    assert timer.current is None
    assert timer.take() == {"outer": 5.0, "inner": 2.0}
    assert timer.take() == {}  # taken once


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0, 10), st.floats(0, 10)), max_size=8))
def test_the_phases_add_up_to_the_elapsed_time(segments):
    """Any nesting: each phase opens, waits, opens the next inside it …; the totals sum to the clock's advance."""
    clock = FakeClock()
    timer = PhaseTimer(enabled=True, clock=clock)

    def nest(rest):
        if not rest:
            return
        (name, before, after), *deeper = rest
        with timer.phase(name):
            clock.advance(before)
            nest(deeper)
            clock.advance(after)

    nest(segments)
    totals = timer.take()
    assert sum(totals.values()) == pytest.approx(clock.now)
    assert all(value >= 0 for value in totals.values())


def test_a_disabled_timer_measures_nothing():
    clock = FakeClock()
    timer = PhaseTimer(enabled=False, clock=clock)
    with timer.phase("generation"):
        clock.advance(3.0)
        assert timer.current is None
    assert timer.take() == {}


def test_cuda_is_synchronized_at_each_edge_only_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append(a))
    for synchronize, expected in ((True, 4), (False, 0)):
        calls.clear()
        timer = PhaseTimer(enabled=True, synchronize=synchronize)
        with timer.phase("outer"), timer.phase("inner"):
            pass
        assert len(calls) == expected


def test_device_seconds_waits_for_a_cuda_device_and_for_nothing_else(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append(a))
    clock = FakeClock()
    clock.advance(2.5)
    assert device_seconds(torch.device("cuda", 1), clock) == 2.5
    assert calls == [(torch.device("cuda", 1),)]  # that device, not the current one
    for other in (torch.device("cpu"), None):
        assert device_seconds(other, clock) == 2.5
    assert len(calls) == 1


def test_vps_reads_its_probe_seconds_after_the_probes_on_their_device(monkeypatch, tmp_path, char_tokenizer):
    """The two readings around the probe forwards go through device_seconds with the completions' device."""
    import psgrpo.vps.signal as vps_signal

    devices = []
    real = vps_signal.device_seconds
    monkeypatch.setattr(vps_signal, "device_seconds", lambda device: devices.append(device) or real(device))
    _train(tmp_path, char_tokenizer, method="vps", max_steps=1)
    assert devices and len(devices) % 2 == 0 and set(devices) == {torch.device("cpu")}


def _train(tmp_path, char_tokenizer, **overrides):
    model_dir = save_tiny_model(tmp_path / "model", char_tokenizer)  # beta > 0 loads the reference from it
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, beta=0.05, **overrides))
    trainer = ProcessGRPOTrainer(
        model=str(model_dir),
        reward_funcs=[length_reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=char_tokenizer,
    )
    trainer.train()
    return [log for log in trainer.state.log_history if "step_time" in log]


@pytest.mark.parametrize("method", ["ps", "vps"])
def test_a_step_logs_every_phase_and_they_add_up_to_the_step(tmp_path, char_tokenizer, method):
    (log,) = _train(tmp_path, char_tokenizer, method=method, phase_times=True)
    times = {phase: log[metric_name(phase)] for phase in PHASES}
    assert all(value >= 0 for value in times.values())
    # a rollout generates, scores, computes the reference log-probs (beta > 0) and the method's signal
    for phase in (
        "generation",
        "logprobs",
        "rewards",
        "process_signal",
        "advantages",  # psgrpo's own rollout code (its decorator once slid onto _generate: a review)
        "loss_forward",
        "backward",
        "optimizer",
    ):
        assert times[phase] > 0, phase
    assert sum(times.values()) == pytest.approx(log[metric_name("step")], rel=1e-6)
    assert times["generation"] < log["step_time"]  # TRL's own timer covers generation, loss and backward


def test_without_the_option_nothing_is_timed(tmp_path, char_tokenizer):
    (log,) = _train(tmp_path, char_tokenizer, method="grpo")
    assert not [key for key in log if key.startswith("time/")]
