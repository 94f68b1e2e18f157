"""benchmarks/sharded_cpu.py: its checks on made-up runs, and DDP vs FSDP through ``accelerate launch`` for real."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import yaml


def _steps(*losses: float, first: int = 1, grad_norm: float = 0.5) -> list[dict]:
    return [
        {"step": first + i, "loss": loss, "grad_norm": grad_norm, "reward": 1.0 + i}
        for i, loss in enumerate(losses)
    ]


SMALL = ["--train_flags", "--per_device_train_batch_size 8 --num_generations 4"]
"""The tests' runs: 8 completions a process in groups of 4, not the demo's 64 in groups of 8 (a third of the time;
the checks are the same)."""


def _run_script(bench, tmp_path, *flags: str, timeout: float) -> subprocess.CompletedProcess:
    """benchmarks/sharded_cpu.py with ``flags``, its report into ``tmp_path``."""
    command = [sys.executable, str(bench.__file__), *flags, "--output_dir", str(tmp_path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def test_a_config_is_the_shipped_one_for_two_cpu_processes_in_fp32_or_as_shipped_in_bf16(
    import_benchmark, tmp_path
):
    bench = import_benchmark("sharded_cpu")
    assert set(bench.TRAINS_AS) == set(bench.CONFIGS)
    for name in bench.CONFIGS:
        shipped = yaml.safe_load((bench.CONFIG_DIR / f"{name}.yaml").read_text())
        assert shipped["mixed_precision"] == "bf16"
        for precision, mixed in [("fp32", "no"), ("bf16", "bf16")]:
            config = yaml.safe_load(bench.launch_config(name, tmp_path, precision).read_text())
            assert (
                config["num_processes"] == 2
                and config["mixed_precision"] == mixed
                and "gpu_ids" not in config
            )
            assert config["distributed_type"] == shipped["distributed_type"]
            assert config.get("deepspeed_config") == shipped.get("deepspeed_config")
            assert config.get("fsdp_config") == shipped.get("fsdp_config")


def test_bf16_takes_the_gpu_path_not_the_plain_cpu_one(import_benchmark, tmp_path, monkeypatch):
    """On a machine without an accelerator, bf16 alone would set ``use_cpu``, and accelerate would drop the
    sharded config for its plain CPU path; in a bf16 worker it does not, and transformers accepts bf16."""
    import transformers.training_args

    import psgrpo.config.precision
    from psgrpo import ProcessGRPOConfig

    bench = import_benchmark("sharded_cpu")
    # registered first, so that the test's teardown puts back what bf16_as_on_a_gpu replaces
    for module, name in [
        (transformers.training_args, "is_torch_bf16_gpu_available"),
        (psgrpo.config.precision, "accelerator_available"),
    ]:
        monkeypatch.setattr(module, name, getattr(module, name))
    if not psgrpo.config.precision.accelerator_available():
        assert ProcessGRPOConfig(output_dir=str(tmp_path), bf16=True).use_cpu
    bench.bf16_as_on_a_gpu()
    config = ProcessGRPOConfig(output_dir=str(tmp_path), bf16=True)
    assert config.bf16 and not config.use_cpu


def test_ps_prm_scores_with_a_tiny_prm_that_loads(import_benchmark, tmp_path):
    bench = import_benchmark("sharded_cpu")
    assert bench.method_flags("vps", tmp_path) == ["--method", "vps"] and not list(tmp_path.iterdir())
    flags = bench.method_flags("ps-prm", tmp_path)
    assert flags[:4] == ["--method", "ps", "--step_scorer", "prm"]
    from psgrpo.ps.scorers.prm import PRMScorer

    scorer = PRMScorer(**json.loads(flags[5]))
    (scores,) = scorer(["2 + 2?"], [["Step 1: 2 + 2 = 4", "Step 2: answer 4"]])
    assert len(scores) == 2 and all(0.0 <= score <= 1.0 for score in scores)
    assert bench.method_flags("ps-prm", tmp_path) == flags  # built once


def test_a_run_is_checked_for_its_status_steps_and_finite_gradients(import_benchmark):
    bench = import_benchmark("sharded_cpu")
    assert bench.check_run({"rc": 0, "steps": _steps(0.1, 0.2, 0.3, 0.4)}, 1) == []
    assert bench.check_run({"rc": 0, "steps": _steps(0.3, 0.4, first=3)}, 3) == []
    assert bench.check_run({"rc": 1, "steps": []}, 1) == ["exit status 1", "logged steps []"]
    said = {
        "rc": 3,
        "steps": _steps(0.1, 0.2, 0.3, 0.4),
        "worker": [bench.WORKER_SAYS + "trained as MULTI_CPU"],
    }
    assert bench.check_run(said, 1) == ["exit status 3", "trained as MULTI_CPU"]
    two_worlds = _steps(0.1, 0.1, 0.2, 0.2)  # two processes that each trained alone log every step twice
    two_worlds[1]["step"], two_worlds[2]["step"], two_worlds[3]["step"] = 1, 2, 2
    assert bench.check_run({"rc": 0, "steps": two_worlds}, 1) == ["logged steps [1, 1, 2, 2]"]
    assert bench.check_run({"rc": 0, "steps": _steps(0.1, math.nan, 0.3, 0.4)}, 1) == [
        "step 2: loss nan, grad norm 0.5"
    ]
    frozen = _steps(0.1, 0.2, 0.3, 0.4, grad_norm=0.0)  # no gradient reached the weights
    assert len(bench.check_run({"rc": 0, "steps": frozen}, 1)) == 4


def test_the_gap_is_the_largest_relative_difference_and_a_missing_step_is_infinite(import_benchmark):
    bench = import_benchmark("sharded_cpu")
    ours, theirs = _steps(0.1, 0.2, 0.3, 0.4), _steps(0.1, 0.2, 0.3, 0.404)
    assert bench.largest_gap(ours, theirs, range(1, 4)) == 0.0
    assert bench.largest_gap(ours, theirs, range(3, 5)) == pytest.approx(0.004 / 0.404)
    assert bench.largest_gap(ours[:3], theirs, range(3, 5)) == math.inf
    assert bench.largest_gap(ours, theirs[:1], range(1, 3)) == math.inf


def _made_up_launches(bench, monkeypatch, step_1_loss: dict[str, float]) -> None:
    """``launch`` answers each config's made-up 4 steps (step 1's loss from ``step_1_loss``; a resume logs the
    unbroken run's steps 3-4) and leaves the checkpoint a resume copies; the saved model is whole."""

    def launch(
        config, method, run_dir, log, timeout_s, resume, precision="fp32", weights="float32", train_flags=()
    ):
        assert list(train_flags) == ["--num_generations", "4"]  # --train_flags, split as a shell would
        steps = _steps(step_1_loss[config.stem], 0.2, 0.3, 0.4)
        (run_dir / f"checkpoint-{bench.RESUME_FROM}").mkdir(parents=True, exist_ok=True)
        return {"rc": 0, "wall_s": 1.0, "steps": steps[bench.RESUME_FROM :] if resume else steps}

    monkeypatch.setattr(bench, "launch", launch)
    monkeypatch.setattr(bench, "saved_weights", lambda run_dir: {"w": ((2,), "F32")})
    monkeypatch.setattr(bench, "whole_model", lambda run_dir, saved=None: True)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_step_1_is_checked_against_ddp_in_fp32_and_zero2_against_fsdp_in_bf16(
    import_benchmark, tmp_path, monkeypatch, precision
):
    """fp32: every config starts where DDP starts. bf16: DDP autocasts from fp32 weights, so its gap is only
    reported; ZeRO-2 and FSDP compute step 1 from the same bf16 weights, so they must agree."""
    import argparse

    bench = import_benchmark("sharded_cpu")
    args = argparse.Namespace(
        output_dir=tmp_path, configs=["ddp", "deepspeed_zero2", "fsdp"], methods=["grpo"], timeout_s=60.0,
        precision=precision, weights="float32", start_rtol=1e-4, resume_rtol=1e-6, train_flags="--num_generations 4",
    )  # fmt: skip
    _made_up_launches(bench, monkeypatch, {"ddp": 0.100, "deepspeed_zero2": 0.110, "fsdp": 0.110})
    rows = {row["config"]: row for row in bench.run_all(args)}
    assert rows["deepspeed_zero2"]["start_gap"] == pytest.approx(0.01 / 0.11)
    if precision == "fp32":
        assert [rows[c]["problems"] for c in ("ddp", "deepspeed_zero2", "fsdp")] == [
            [], ["step 1 differs from DDP's by 9.09e-02 (relative)"], ["step 1 differs from DDP's by 9.09e-02 (relative)"]
        ]  # fmt: skip
        assert "bf16_peer_gap" not in rows["fsdp"]
        return
    assert all(not row["problems"] for row in rows.values()) and rows["fsdp"]["bf16_peer_gap"] == 0.0
    assert "| 9.1e-02 | 0.0e+00 |" in bench.markdown(list(rows.values()), {"precision": "bf16"})

    _made_up_launches(bench, monkeypatch, {"ddp": 0.100, "deepspeed_zero2": 0.110, "fsdp": 0.120})
    rows = {row["config"]: row for row in bench.run_all(args)}
    assert rows["deepspeed_zero2"]["problems"] == []
    assert rows["fsdp"]["problems"] == [
        "step 1 differs from deepspeed_zero2's by 8.33e-02 (relative), which computes it from the same bf16 weights"
    ]


def test_a_saved_model_is_whole_only_with_every_parameter_at_its_shape(
    import_benchmark, tmp_path, char_tokenizer
):
    """ZeRO-3 and FSDP save per-rank shards unless gathered; a truncated tensor or a missing one is not whole."""
    from safetensors.torch import load_file, save_file

    from psgrpo.tiny.model import build_tiny_model

    bench = import_benchmark("sharded_cpu")
    build_tiny_model(
        char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64
    ).save_pretrained(tmp_path)
    assert bench.whole_model(tmp_path)
    # copies: the loaded tensors may map the file, which is rewritten below (a bus error under safetensors 0.4)
    weights = {key: value.clone() for key, value in load_file(tmp_path / "model.safetensors").items()}
    name = next(key for key in weights if key.endswith("mlp.up_proj.weight"))
    save_file({**weights, name: weights[name][:1]}, tmp_path / "model.safetensors", metadata={"format": "pt"})
    assert not bench.whole_model(tmp_path)
    save_file(
        {k: v for k, v in weights.items() if k != name},
        tmp_path / "model.safetensors",
        metadata={"format": "pt"},
    )
    assert not bench.whole_model(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    assert not bench.whole_model(tmp_path)


def test_deepspeed_configs_without_deepspeed_stop_with_one_line(import_benchmark, tmp_path):
    import importlib.util

    if importlib.util.find_spec("deepspeed") is not None:
        pytest.skip("deepspeed is installed here: the refusal cannot be seen")
    bench = import_benchmark("sharded_cpu")
    result = _run_script(bench, tmp_path, "--configs", "deepspeed_zero3", timeout=120)
    assert (
        result.returncode == 1
        and "make sharded-cpu" in result.stderr
        and len(result.stderr.splitlines()) == 1
    )
    assert not list(tmp_path.iterdir())


def test_train_flags_that_do_not_split_stop_with_one_line(import_benchmark, tmp_path):
    bench = import_benchmark("sharded_cpu")
    result = _run_script(bench, tmp_path, "--configs", "ddp", "--train_flags", "--seed '1", timeout=120)
    assert result.returncode == 2  # argparse's usage, then the one line that says what is wrong
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith('error: --train_flags "--seed \'1": No closing quotation')
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_fsdp_through_accelerate_and_the_trainer_trains_resumes_and_starts_as_ddp(import_benchmark, tmp_path):
    """The real thing, without DeepSpeed: vps (whose probe forwards each rank must run as often as the others
    under sharding) on 2 CPU processes, DDP then FSDP, 4 steps, FSDP resumed from step 2 (about 1 min)."""
    bench = import_benchmark("sharded_cpu")
    flags = ["--configs", "ddp", "fsdp", "--methods", "vps", *SMALL]
    result = _run_script(bench, tmp_path, *flags, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = json.loads((tmp_path / "sharded_cpu.json").read_text())["rows"]
    assert [(row["config"], row["method"], row["problems"]) for row in rows] == [
        ("ddp", "vps", []),
        ("fsdp", "vps", []),
    ]
    fsdp = rows[1]
    assert fsdp["whole_model"] and fsdp["resume_gap"] <= 1e-6 and fsdp["start_gap"] <= 1e-4
    assert len(fsdp["losses"]) == 4 and "| fsdp | vps | ok |" in (tmp_path / "sharded_cpu.md").read_text()
    # FSDP for real, not DDP under its name: accelerate's FSDP checkpoint (the worker also checks the type)
    assert list((tmp_path / "fsdp" / "vps" / "checkpoint-2").glob("pytorch_model_fsdp*"))
    assert not list((tmp_path / "ddp" / "vps" / "checkpoint-2").glob("pytorch_model_fsdp*"))


@pytest.mark.slow
def test_a_launch_past_its_time_is_a_failure_and_leaves_no_process(import_benchmark, tmp_path):
    """A hang (here: a limit too short for the run) is killed with the workers torchrun started in their own
    sessions, and reported (about 10 s)."""
    bench = import_benchmark("sharded_cpu")
    result = _run_script(
        bench, tmp_path, "--configs", "ddp", "--methods", "grpo", "--timeout_s", "3", timeout=300
    )
    assert result.returncode == 1
    (row,) = json.loads((tmp_path / "sharded_cpu.json").read_text())["rows"]
    assert row["problems"][0] == "exit status killed after 3 s (a hang?)"
    import shutil

    if shutil.which("pgrep") is not None:  # procps
        left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
        assert left.stdout == "", left.stdout


@pytest.mark.slow
def test_fsdp_in_bf16_computes_in_bf16_and_resumes_exactly(import_benchmark, tmp_path):
    """FSDP as shipped (bf16) on the path a GPU takes: FSDP2's bf16 ``MixedPrecisionPolicy`` around the
    policy's forwards, vps probes included; fp32 weights saved; resumed from step 2 to the same bits (about
    1 min where the CPU emulates bf16)."""
    bench = import_benchmark("sharded_cpu")
    flags = ["--configs", "fsdp", "--methods", "vps", "--precision", "bf16", *SMALL]
    result = _run_script(bench, tmp_path, *flags, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "sharded_cpu.json").read_text())
    (row,) = report["rows"]
    assert report["environment"]["train_flags"] == SMALL[1]
    assert row["problems"] == [] and row["whole_model"] and row["saved_dtypes"] == ["F32"]
    assert row["resume_gap"] == 0.0 and len(row["losses"]) == 4
    assert yaml.safe_load((tmp_path / "fsdp.yaml").read_text())["mixed_precision"] == "bf16"
    assert list((tmp_path / "fsdp" / "vps" / "checkpoint-2").glob("pytorch_model_fsdp*"))
