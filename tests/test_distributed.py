"""psgrpo.distributed in one process: replicated loading, sharding detection, the max collective.

The two-process behaviour (the max over ranks, sharded probes) is tested in
``test_trainer_distributed.py``. DeepSpeed is not installed here: a stand-in config object makes
``transformers`` believe ZeRO-3 is on, which is all ``from_pretrained`` looks at.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
from trainer_helpers import save_tiny_prm, thread_names
from transformers import AutoModelForCausalLM
from transformers.integrations import deepspeed as hf_deepspeed
from transformers.integrations import is_deepspeed_zero3_enabled

from psgrpo.distributed import (
    FSDP_EFFICIENT_LOADING_ENV,
    close_process_group,
    max_over_processes,
    parameters_sharded,
    replicated_loading,
)
from psgrpo.ps.scorers.prm import PRMScorer
from psgrpo.tiny.model import build_tiny_model


class Zero3Config:
    """What transformers reads from an ``HfDeepSpeedConfig`` to decide on ZeRO-3 partitioned init."""

    config = {"zero_optimization": {"stage": 3}}

    def is_zero3(self) -> bool:
        return True


@pytest.fixture()
def zero3():
    config = Zero3Config()  # the global is a weak reference: keep the object alive for the test
    hf_deepspeed.set_hf_deepspeed_config(config)
    yield config
    hf_deepspeed.unset_hf_deepspeed_config()


def test_replicated_loading_switches_zero3_init_off_and_restores_it(zero3, tmp_path, char_tokenizer):
    build_tiny_model(char_tokenizer, hidden_size=32, num_layers=1, intermediate_size=64).save_pretrained(
        tmp_path
    )
    if (
        importlib.util.find_spec("deepspeed") is None
    ):  # ZeRO-3 init would need DeepSpeed (and a process group)
        with pytest.raises(ModuleNotFoundError, match="deepspeed"):
            AutoModelForCausalLM.from_pretrained(tmp_path)
    with replicated_loading():
        assert not is_deepspeed_zero3_enabled()
        model = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert is_deepspeed_zero3_enabled() and parameters_sharded()
    assert all(p.numel() > 0 for p in model.parameters())  # full, unpartitioned weights


def test_replicated_loading_restores_fsdp_efficient_loading_even_on_error(monkeypatch):
    monkeypatch.setenv(FSDP_EFFICIENT_LOADING_ENV, "true")
    with pytest.raises(RuntimeError, match="boom"), replicated_loading():
        assert FSDP_EFFICIENT_LOADING_ENV not in os.environ
        raise RuntimeError("boom")
    assert os.environ[FSDP_EFFICIENT_LOADING_ENV] == "true"


def test_prm_loads_whole_under_zero3(zero3, tmp_path, char_tokenizer):
    """A PRM is not the trainer's model: it must load fully on every process, not be ZeRO-3 partitioned."""
    with replicated_loading():  # building a model under ZeRO-3 would need DeepSpeed too
        save_tiny_prm(tmp_path, char_tokenizer)
    scorer = PRMScorer(str(tmp_path), style="token_classification", step_separator="\n", device="cpu")
    scores = scorer(["Question: 1+1?\n"], [["1 + 1 = 2", "so 2"]])
    assert len(scores[0]) == 2 and all(0.0 <= s <= 1.0 for s in scores[0])
    assert is_deepspeed_zero3_enabled()  # restored for the policy's own loading


def test_parameters_sharded_detects_fsdp(monkeypatch):
    assert not parameters_sharded(SimpleNamespace(fsdp=""))
    assert parameters_sharded(SimpleNamespace(fsdp="full_shard auto_wrap"))
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")  # what `accelerate launch` with an FSDP config sets
    assert parameters_sharded(SimpleNamespace(fsdp=""))


def test_max_over_one_process_needs_no_communication():
    assert max_over_processes(7, SimpleNamespace(num_processes=1)) == 7


def test_close_process_group_without_one_is_a_no_op():
    assert not dist.is_initialized()
    close_process_group()
    assert not dist.is_initialized()


def test_close_process_group_destroys_the_group_and_stops_its_threads(tmp_path):
    """A 1-process gloo group held by a module (as DDP holds it) must still lose its worker threads.

    The group's threads only stop when the group object is freed; the cycle here is only freed by
    the collector, as the trainer's are (see close_process_group).
    """
    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc to list threads")

    def gloo_threads() -> int:
        return thread_names().count("pt_gloo_runloop")

    before = gloo_threads()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    holder = SimpleNamespace(group=dist.group.WORLD)
    holder.self = holder  # a reference cycle, like the trainer's
    dist.all_reduce(torch.ones(3))
    assert gloo_threads() > before
    del holder
    close_process_group()
    assert not dist.is_initialized()
    assert gloo_threads() == before
