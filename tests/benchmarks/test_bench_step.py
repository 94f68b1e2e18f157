"""benchmarks/bench_step.py and its shared helpers (benchmarks/_common.py), on the smallest settings."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from trl import GRPOConfig


@pytest.fixture(scope="module")
def bench(import_benchmark):
    """``(bench_step, _common)`` imported as the scripts import each other (benchmarks/ on sys.path)."""
    return import_benchmark("bench_step"), import_benchmark("_common")


def test_trl_and_psgrpo_configs_share_every_trl_field(bench, tmp_path):
    _, common = bench
    _, trl_args = common.recipe_configs("trl", tmp_path, max_completion_length=8)
    task, ps_args = common.recipe_configs("ps", tmp_path, max_completion_length=8)
    assert type(trl_args) is GRPOConfig and ps_args.method == "ps"
    assert task.dataset == "arith"  # from the demo recipe
    assert trl_args.max_completion_length == ps_args.max_completion_length == 8
    assert trl_args.report_to == [] and trl_args.logging_steps == 1  # BENCH_SETTINGS
    for field in dataclasses.fields(GRPOConfig):
        assert getattr(trl_args, field.name) == getattr(ps_args, field.name), field.name


def test_recipe_configs_reject_unknown_trainers_and_fields(bench, tmp_path):
    _, common = bench
    with pytest.raises(ValueError, match="unknown trainer 'ppo'"):
        common.recipe_configs("ppo", tmp_path)
    with pytest.raises(ValueError, match="max_completion_lenght"):
        common.recipe_configs("grpo", tmp_path, max_completion_lenght=8)


def test_markdown_table(bench):
    _, common = bench
    assert common.markdown_table(["a", "b"], [[1, "x"], [2.5, "y"]]) == (
        "| a | b |\n|---|---|\n| 1 | x |\n| 2.5 | y |"
    )


def test_peak_rss_resets_to_the_current_level(bench):
    _, common = bench
    if not common.reset_peak_rss():
        pytest.skip("the kernel's peak-RSS mark cannot be reset here (not Linux)")
    block = bytearray(64 * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: 64 MiB resident
    del block
    assert common.peak_rss_mib() >= common.current_rss_mib() + 60
    # Other threads of a long test process (torch's pools, finalizers) allocate and free meanwhile:
    # the mark after a reset is the level at the reset, so bracket it with readings on both sides.
    before = common.current_rss_mib()
    common.reset_peak_rss()
    peak = common.peak_rss_mib()
    assert peak < max(before, common.current_rss_mib()) + 10


@pytest.mark.slow
def test_smallest_sweep_writes_the_report(bench, tmp_path):
    bench_step, _ = bench
    output = tmp_path / "report.json"
    args = ["--sizes", "tiny", "--lengths", "8", "--steps", "1", "--warmup", "1", "--output", str(output)]
    returned = bench_step.main(args)
    report = json.loads(output.read_text())
    assert report == json.loads(json.dumps(returned))
    assert report["mode"] == "lockstep" and report["aims"] == {"grpo": 1.02, "ps": 1.10, "vps": 1.15}
    assert [r["trainer"] for r in report["results"]] == [
        "trl",
        "grpo",
        "ps",
        "vps",
        "tree",
    ]  # tree: no aim yet
    keys = {
        "model",
        "params",
        "completion_length",
        "trainer",
        "median_step_s",
        "tokens_per_s",
        "peak_rss_mib",
        "step_rss_increase_mib",
        "ratio_vs_trl",
        "first_step_matches_trl",
    }
    for row in report["results"]:
        assert keys <= row.keys()
        assert (row["model"], row["completion_length"]) == ("tiny", 8)
        assert 0.8e6 < row["params"] < 0.9e6
        assert row["completion_tokens_per_step"] == 4 * 4 * 8  # every completion forced to exactly 8 tokens
        assert len(row["step_seconds"]) == 1 and row["median_step_s"] > 0
        assert row["tokens_per_s"] == pytest.approx(128 / row["median_step_s"])
        assert row["peak_rss_mib"] >= row["step_rss_increase_mib"] >= 0
        assert row["peak_cuda_allocated_gib"] is None and row["step_cuda_increase_gib"] is None  # a CPU run
        # Interleaved trainers with their own RNG state sample what each would sample alone.
        assert row["first_step_matches_trl"] is True
    assert report["results"][0]["ratio_vs_trl"] == 1.0
    assert report["results"][1]["aim"] == 1.02


@pytest.mark.slow
def test_qwen_vocab_size_has_qwens_tokenizer_and_embedding_rows(bench, qwen_tokenizer):
    bench_step, _ = bench
    model, tokenizer = bench_step.load_model("qwen-vocab")
    config = model.config
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (151_936, 512, 4)
    assert sum(p.numel() for p in model.parameters()) == 89_857_536  # 77.8 M of it the tied embedding
    assert tokenizer.get_vocab() == qwen_tokenizer.get_vocab() and tokenizer.eos_token == "<|im_end|>"
    assert bench_step.parse_args([]).sizes == ["tiny", "24m"]  # qwen-vocab only when asked for


@pytest.mark.parametrize(
    ("cuda", "version", "mode"),
    [
        (True, "2.11.0+cu130", "default"),
        (True, "2.12.1", "default"),
        (True, "2.13.0", None),
        (False, "2.11.0", None),
    ],
)
def test_lockstep_compiles_decoding_without_cuda_graphs_only_where_threads_break_them(
    bench, monkeypatch, cuda, version, mode
):
    bench_step, _ = bench
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch, "__version__", version)
    config = bench_step.lockstep_compile_config()
    assert (None if config is None else config.mode) == mode


class _FakeAccelerator:
    device = torch.device("cuda", 0)


class _FakeTrainer:
    """Just what Lockstep touches: a CUDA accelerator, callbacks and a train() whose work is done on the device."""

    accelerator = _FakeAccelerator()

    def __init__(self):
        self.callbacks = []

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def train(self):
        for callback in self.callbacks:
            callback.on_train_begin(None, None, None)


def test_on_cuda_a_lockstep_turn_waits_for_the_device_and_reads_its_memory(bench, monkeypatch):
    """A CUDA-present simulation: each turn synchronizes the trainer's device before each clock reading (else
    kernels still queued count in the next trainer's turn) and reports the GPU memory allocated there."""
    bench_step, _ = bench
    rng = bench_step.get_rng_state()  # before CUDA is faked: no CUDA generator state
    calls = []
    gib = 2**30
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(("synchronize", device)))
    monkeypatch.setattr(
        torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append(("reset", device))
    )
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 2 * gib)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3.5 * gib)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [])
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda states: None)
    lockstep = bench_step.Lockstep(_FakeTrainer(), rng)
    setup = lockstep.advance()  # up to on_train_begin
    last = lockstep.advance()  # the rest of train()
    assert lockstep.finished
    device = torch.device("cuda", 0)
    assert calls == [("synchronize", device), ("reset", device), ("synchronize", device)] * 2
    for turn in (setup, last):
        assert (turn.start_cuda_gib, turn.peak_cuda_gib) == (2.0, 3.5) and turn.seconds >= 0


def test_the_recipe_model_trains_in_bf16_weights_when_bf16_is_on(bench, tmp_path, monkeypatch):
    """As the GSM8K recipe loads it: with fp32 weights under bf16 autocast, transformers 5.17 (the CUDA image's)
    refuses a compiled static cache (psgrpo.generation.check_cache_dtype) for every trainer, stock TRL too."""
    import transformers

    bench_step, common = bench
    monkeypatch.setattr(transformers, "__version__", "5.17.0")
    monkeypatch.setattr(bench_step, "RECIPE_BF16_SIZES", frozenset({"tiny"}))  # the 494 M model, in small
    overrides = dict(max_steps=1, max_completion_length=8, bf16=True, compiled_generation=True)
    _, reference = common.recipe_configs("grpo", tmp_path / "ref", **overrides)
    reward_funcs = bench_step.get_reward_funcs(reference.reward_funcs)
    for kind in ("trl", "grpo"):
        trainer = bench_step.build_trainer(kind, "tiny", str(tmp_path / kind), reward_funcs, 2, **overrides)
        assert (
            trainer.model.dtype == torch.bfloat16
            and trainer.generation_config.cache_implementation == "static"
        )
    monkeypatch.setattr(bench_step, "RECIPE_BF16_SIZES", frozenset())
    with pytest.raises(ValueError, match="needs transformers >= 5.25"):
        bench_step.build_trainer("trl", "tiny", str(tmp_path / "fp32"), reward_funcs, 2, **overrides)
