"""bf16 autocast only where the hardware computes bf16 natively; the user's --bf16 always wins."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
import trl

from psgrpo.config import precision
from psgrpo.config.process_grpo_config import ProcessGRPOConfig

X86_CPUINFO = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 amx_tile\nbogomips : 1\n"
ARM_CPUINFO = "processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n"


def test_cpu_flags_read_x86_and_arm_cpuinfo():
    assert {"avx2", "avx512_bf16"} <= precision.cpu_flags(X86_CPUINFO)
    assert "bf16" in precision.cpu_flags(ARM_CPUINFO)
    assert precision.cpu_flags("processor : 0\n") == set()


@pytest.fixture()
def native(monkeypatch):
    """Pretend the CPU has (True) or lacks (False) native bf16."""

    def set_native(value: bool) -> None:
        monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: value)
        monkeypatch.setattr(precision, "_logged", set())

    return set_native


def _config(tmp_path, **fields):
    return ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **fields)


def test_unset_bf16_follows_the_cpu(tmp_path, native, caplog):
    native(True)
    assert _config(tmp_path).bf16 is True
    native(False)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        configs = [_config(tmp_path), _config(tmp_path)]
        assert [c.bf16 for c in configs] == [False, False] and all(c.bf16_fell_back for c in configs)
        assert not caplog.text  # the config is silent: a refused input stays one line
        for config in configs:
            precision.log_precision(config)  # what the trainer does once built
    assert caplog.text.count("Training in fp32; pass --bf16 true") == 1  # logged once per process


def test_an_explicit_bf16_false_is_no_fallback(tmp_path, native, caplog):
    native(False)
    assert not _config(tmp_path, bf16=False).bf16_fell_back
    native(True)
    assert not _config(tmp_path).bf16_fell_back


@pytest.mark.parametrize("cpu_native", [True, False])
@pytest.mark.parametrize("forced", [True, False])
def test_an_explicit_bf16_always_wins(tmp_path, native, cpu_native, forced):
    native(cpu_native)
    assert _config(tmp_path, bf16=forced).bf16 is forced


def test_fp16_leaves_bf16_off(tmp_path, native):
    native(True)
    assert precision.resolve_bf16(None, fp16=True, use_cpu=True) is None


def test_cuda_uses_the_gpu_bf16_support(monkeypatch, native):
    native(False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for supported in (True, False):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda supported=supported: supported)
        assert precision.resolve_bf16(None, fp16=False, use_cpu=False) is supported
    assert precision.resolve_bf16(None, fp16=False, use_cpu=True) is False  # use_cpu: the CPU rule


def test_pytorch_capped_at_avx2_counts_as_no_native_bf16():
    """The way this suite imitates an AVX2-only CPU: PyTorch's kernels capped at AVX2 → fp32."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    code = "from psgrpo.config.precision import cpu_has_native_bf16; print(cpu_has_native_bf16())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_states_the_rule():
    from psgrpo.config.parsing import ConfigParser

    parser = ConfigParser((ProcessGRPOConfig,))
    parser.show_all_options = True  # --help-all: the full texts (--help shows each one's first clause)
    help_text = " ".join(parser.format_help().split())
    assert "native bf16" in help_text and "--bf16 true / false forces it" in help_text


# ---- bf16 on a machine whose only device is the CPU: no config needs `use_cpu` (issue 27) ----


@pytest.fixture()
def cpu_only(monkeypatch):
    """No accelerator at all, as on a laptop or a CI runner."""
    monkeypatch.setattr(precision, "accelerator_available", lambda: False)
    monkeypatch.setattr(precision, "_logged", set())


def test_a_config_without_use_cpu_trains_in_bf16_on_a_cpu_with_native_bf16(
    tmp_path, native, cpu_only, caplog
):
    native(True)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        args = ProcessGRPOConfig(output_dir=str(tmp_path), method="grpo")  # the README's first line
    assert (args.bf16, args.use_cpu, args.device.type) == (True, True, "cpu")
    assert "use_cpu=True" not in caplog.text  # the config is silent: a refused input stays one line


def test_the_cpu_bf16_line_comes_once_when_a_trainer_is_built(
    tmp_path, char_tokenizer, native, no_accelerator, caplog
):
    """Logged by the trainer, after every check of the input, and once per process (compare builds many)."""
    from trainer_helpers import tiny_run_args

    from psgrpo.data.arith import make_arith_dataset
    from psgrpo.tiny.model import build_tiny_model
    from psgrpo.trainer import ProcessGRPOTrainer

    native(True)
    fields = tiny_run_args(tmp_path, use_cpu=False, method="grpo")
    args = ProcessGRPOConfig(**fields)
    assert (args.bf16, args.use_cpu) == (True, True)
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        for _ in range(2):
            ProcessGRPOTrainer(
                model=model,
                args=args,
                processing_class=char_tokenizer,
                train_dataset=make_arith_dataset("train", n=8),
            )
    assert caplog.text.count("bf16 on a machine without GPU: training on the CPU (use_cpu=True)") == 1


@pytest.mark.parametrize("cpu_native", [True, False])
def test_the_users_explicit_bf16_and_use_cpu_win(tmp_path, native, cpu_only, cpu_native):
    native(cpu_native)
    forced = ProcessGRPOConfig(output_dir=str(tmp_path), bf16=True)  # --bf16 true on any CPU: trains there
    assert (forced.bf16, forced.use_cpu) == (True, True)
    off = ProcessGRPOConfig(output_dir=str(tmp_path), bf16=False)
    assert (off.bf16, off.use_cpu) == (False, True)  # the CPU is the device: accelerate's DDP needs use_cpu
    kept = ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True)
    assert (kept.bf16, kept.use_cpu) == (cpu_native, True)


def test_use_cpu_is_left_alone_where_there_is_an_accelerator(monkeypatch):
    monkeypatch.setattr(precision, "accelerator_available", lambda: True)
    # a GPU (or MPS, XPU …): transformers' own bf16 checks apply, the run is not moved to the CPU
    assert precision.resolve_use_cpu(False, bf16=True) is False
    assert precision.resolve_use_cpu(True, bf16=False) is True
    monkeypatch.setattr(precision, "accelerator_available", lambda: False)
    assert precision.resolve_use_cpu(False, bf16=True) is True
    assert precision.resolve_use_cpu(False, bf16=False, bf16_full_eval=True) is True
    # fp32 too: accelerate sets up DDP over torchrun on a CPU only with cpu=True (each process trained alone)
    assert precision.resolve_use_cpu(False, bf16=False) is True
    assert precision.resolve_use_cpu(False, bf16=None) is True


@pytest.mark.parametrize("variable", ["ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP"])
def test_a_sharded_launch_in_fp32_keeps_use_cpu_off(monkeypatch, variable):
    """accelerate runs DeepSpeed and FSDP on a CPU only with cpu=False (benchmarks/sharded_cpu.py's fp32 rows)."""
    monkeypatch.setattr(precision, "accelerator_available", lambda: False)
    monkeypatch.setenv(variable, "true")
    assert precision.resolve_use_cpu(False, bf16=False) is False
    assert precision.resolve_use_cpu(False, bf16=True) is True  # transformers refuses bf16 otherwise
    monkeypatch.setenv(variable, "false")
    assert precision.resolve_use_cpu(False, bf16=False) is True
    # a DeepSpeed config given to the trainer (torchrun, no accelerate launch): transformers lets use_cpu win
    assert precision.resolve_use_cpu(False, bf16=False, deepspeed="ds_config.json") is False


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("true", True), ("0", False), ("False", False)])
def test_the_environment_variable_replaces_the_detection(monkeypatch, value, expected):
    monkeypatch.setenv(precision.NATIVE_BF16_ENV, value)
    assert precision.cpu_has_native_bf16() is expected


def test_a_bad_environment_value_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(precision.NATIVE_BF16_ENV, "yes please")
    with pytest.raises(ValueError, match=r"\$PSGRPO_NATIVE_BF16 must be 1 or 0 .*'yes please'"):
        precision.cpu_has_native_bf16()


def _train_parser():
    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser
    from psgrpo.data.tasks import TaskConfig

    return ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig), prog="psgrpo train")


def test_a_yaml_without_use_cpu_parses_on_a_cpu_with_native_bf16(tmp_path, native, cpu_only):
    from psgrpo.loading import with_default_recipe

    native(True)
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(f"method: vps\noutput_dir: {tmp_path / 'out'}\nmax_steps: 3\n")
    _, args, _ = _train_parser().parse_args_and_config(with_default_recipe(["--config", str(recipe)]))
    assert (args.method, args.bf16, args.use_cpu) == ("vps", True, True)


def test_an_unknown_yaml_key_is_reported_not_a_precision_error(tmp_path, native, no_accelerator, monkeypatch):
    from psgrpo.config.parsing import ConfigError

    native(True)
    # a config that cannot be built (transformers refuses bf16 without use_cpu here) ...
    monkeypatch.setattr(
        "psgrpo.config.process_grpo_config.resolve_use_cpu", lambda use_cpu, *args, **kwargs: use_cpu
    )
    with pytest.raises(ConfigError, match="doesn't support bf16/gpu"):
        _train_parser().parse_args_and_config(["--output_dir", str(tmp_path / "out")])
    # ... still reports a misspelt key first, naming the file
    recipe = tmp_path / "typo.yaml"
    recipe.write_text(f"output_dir: {tmp_path / 'out'}\nlearning_rat: 1.0e-5\n")
    with pytest.raises(ConfigError, match=rf"unknown option\(s\) \['--learning_rat', '1e-05'\] in {recipe}"):
        _train_parser().parse_args_and_config(["--config", str(recipe)])


def test_psgrpo_train_runs_a_step_on_a_cpu_with_native_bf16(tmp_path, native, cpu_only, monkeypatch):
    """The CLI with the demo recipe (which sets no use_cpu) trains in bf16 on the CPU."""
    from psgrpo.commands.cli import main

    native(True)
    monkeypatch.chdir(tmp_path)
    flags = ["--max_steps", "1", "--per_device_train_batch_size", "8", "--max_completion_length", "32",
             "--eval_before_after", "false", "--save_strategy", "no", "--report_to", "none"]  # fmt: skip
    assert main(["train", *flags, "--output_dir", "run"]) == 0
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["method"] == "ps" and (tmp_path / "run" / "model.safetensors").exists()
    environment = report["environment"]  # what `psgrpo env` reports, kept with the run
    assert environment["packages"]["trl"] == trl.__version__ and environment["cpu"]["native_bf16"] is True


# ---- the same configs on a CUDA machine (simulated: tests/conftest.py's cuda_present) ----


def test_on_a_cuda_machine_no_config_is_moved_to_the_cpu(native, cuda_present, caplog):
    """What a GPU user gets when no precision is set: bf16 from the GPU's support, use_cpu left off.

    (The config itself is not built here: TrainingArguments would select the simulated device.)"""
    native(False)  # the CPU's own bf16 support does not matter where a GPU trains
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        bf16 = precision.resolve_bf16(None, fp16=False, use_cpu=False)
        use_cpu = precision.resolve_use_cpu(False, bf16)
    assert (bf16, use_cpu) == (True, False)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        # even with use_cpu and bf16 on (as a CPU-only machine would set them), a GPU here means no note
        precision.log_precision(SimpleNamespace(use_cpu=True, bf16=True, bf16_full_eval=False))
    assert not caplog.text
    assert not precision.cpu_fell_back(
        None, False, False, use_cpu=False
    )  # a GPU without bf16 is no CPU fallback


@pytest.mark.parametrize("machine", ["no_accelerator", "cuda_present"])
def test_a_misspelt_yaml_key_is_reported_the_same_on_every_machine(tmp_path, native, machine, request):
    from psgrpo.config.parsing import ConfigError

    request.getfixturevalue(machine)
    native(True)
    recipe = tmp_path / "typo.yaml"
    recipe.write_text(f"output_dir: {tmp_path / 'out'}\nlearning_rat: 1.0e-5\n")
    with pytest.raises(ConfigError, match=rf"unknown option\(s\) \['--learning_rat', '1e-05'\] in {recipe}"):
        _train_parser().parse_args_and_config(["--config", str(recipe)])


@pytest.mark.parametrize("native_fp16", [False, True])
def test_fp16_on_a_cpu_without_native_fp16_is_kept_with_one_warning(
    monkeypatch, no_accelerator, caplog, native_fp16
):
    """--fp16 true on a CPU trains as asked (accelerate autocasts to fp16 there), but emulated fp16 is ~10x
    slower than fp32 per matmul on a CPU without avx512_fp16: one warning per process, none where it is native."""
    monkeypatch.setattr(precision, "cpu_lacks_native_fp16", lambda: not native_fp16)
    args = SimpleNamespace(use_cpu=False, bf16=False, bf16_full_eval=False, fp16=True, bf16_fell_back=False)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        precision.log_precision(args)
        precision.log_precision(args)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == (0 if native_fp16 else 1)
    if not native_fp16:
        assert "fp16 autocast on a CPU without native fp16" in warnings[0].getMessage()
        assert "--bf16 true" in warnings[0].getMessage()


def test_fp16_where_a_gpu_trains_is_no_cpu_matter(cuda_present, monkeypatch, caplog):
    monkeypatch.setattr(precision, "cpu_lacks_native_fp16", lambda: True)
    with caplog.at_level(logging.INFO, logger="psgrpo.config.precision"):
        precision.log_precision(SimpleNamespace(use_cpu=False, bf16=False, bf16_full_eval=False, fp16=True))
    assert not caplog.text


def test_native_fp16_is_read_from_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2", "avx512_fp16"})
    assert not precision.cpu_lacks_native_fp16()
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2", "avx512_bf16"})
    assert precision.cpu_lacks_native_fp16()
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"fp", "asimd", "asimdhp"})  # ARMv8.2
    assert not precision.cpu_lacks_native_fp16()
    monkeypatch.setattr(precision, "cpu_flags", lambda: set())  # no /proc/cpuinfo (macOS): no evidence
    assert not precision.cpu_lacks_native_fp16()
