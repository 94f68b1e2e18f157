"""bf16 autocast only where the hardware computes bf16 natively; the user's --bf16 always wins."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch

from psgrpo import precision
from psgrpo.config import ProcessGRPOConfig

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
        monkeypatch.setattr(precision, "_logged_fallback", False)

    return set_native


def _config(tmp_path, **fields):
    return ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **fields)


def test_unset_bf16_follows_the_cpu(tmp_path, native, caplog):
    native(True)
    assert _config(tmp_path).bf16 is True
    native(False)
    with caplog.at_level(logging.INFO, logger="psgrpo.precision"):
        assert _config(tmp_path).bf16 is False
        assert _config(tmp_path).bf16 is False
    assert caplog.text.count("Training in fp32; pass --bf16 true") == 1  # logged once per process


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
    code = "from psgrpo.precision import cpu_has_native_bf16; print(cpu_has_native_bf16())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_states_the_rule():
    from psgrpo.parsing import ConfigParser

    help_text = " ".join(ConfigParser((ProcessGRPOConfig,)).format_help().split())
    assert "native bf16" in help_text and "--bf16 true / false forces it" in help_text
