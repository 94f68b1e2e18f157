"""Mixed precision that fits the hardware: bf16 autocast only where bf16 is native.

TRL's configs turn bf16 autocast on by default, also on CPU. A CPU without bf16 instructions
emulates every bf16 matmul, which made the embedded demo about 7x slower on an AVX2-only
machine (17.9 s vs 2.5 s per step), for no gain in accuracy. psgrpo therefore resolves an
unset ``bf16`` (``None``) as follows:

- CUDA GPU (and ``use_cpu`` not set): bf16 when the GPU supports it (Ampere or newer);
- CPU: bf16 only when the CPU has native bf16 arithmetic — x86 ``avx512_bf16`` or
  ``amx_bf16``, or ARM ``bf16`` — *and* PyTorch's kernels may use it (oneDNN reports bf16
  support, i.e. ``ONEDNN_MAX_CPU_ISA`` does not cap it, and ``ATEN_CPU_CAPABILITY`` is not
  lowered below AVX-512 on x86); otherwise fp32;
- any other accelerator: TRL's default (bf16 unless fp16 is set).

``--bf16 true`` or ``--bf16 false`` always wins. The fp32 fallback is logged once per process.
``--fp16 true`` is kept too, with a warning where the CPU trains and has no native fp16: every fp16
matmul is then emulated, about 10x slower than fp32 (``benchmarks/bench_cpu_autocast.py``; figures in
docs/benchmarks.md).

transformers refuses bf16 without a GPU unless ``use_cpu`` is set. On a machine with no
accelerator at all (no CUDA, MPS, XPU …), where the CPU is the only device anyway,
:func:`resolve_use_cpu` sets ``use_cpu`` for the user (bf16 or not: accelerate needs it for
multi-process CPU training too; in fp32 not under a DeepSpeed or FSDP launch, which needs it off), so
no config needs ``use_cpu: true`` to run on a CPU. An explicit ``use_cpu: true`` is kept; on a machine
with a GPU nothing changes (transformers' own checks apply). ``use_cpu: false`` cannot be told from the default, and on a
machine without an accelerator it could only mean a device there is not.

``PSGRPO_NATIVE_BF16=1`` (or ``0``) replaces the CPU detection by the given answer: for tests that
imitate another CPU in a subprocess, and for containers whose ``/proc/cpuinfo`` is not the host's.
"""

from __future__ import annotations

import functools
import logging
import os
import platform
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

X86_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""``/proc/cpuinfo`` flags of x86 CPUs with native bf16 arithmetic."""

ARM_BF16_FEATURES = ("bf16",)
"""``/proc/cpuinfo`` features of ARM CPUs with native bf16 arithmetic."""

FP16_FLAGS = ("avx512_fp16", "amx_fp16", "fphp", "asimdhp")
"""``/proc/cpuinfo`` flags of CPUs with native fp16 arithmetic (x86 Sapphire Rapids and newer, ARMv8.2)."""

NATIVE_BF16_ENV = "PSGRPO_NATIVE_BF16"
"""Environment variable that overrides :func:`cpu_has_native_bf16` (``1``/``true`` or ``0``/``false``)."""


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (x86 ``flags``, ARM ``Features``); empty elsewhere."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return set(value.split())
    return set()


def _torch_kernels_allow_bf16() -> bool:
    """Whether PyTorch's CPU kernels may use bf16 instructions here (respects oneDNN/ATen ISA caps)."""
    import torch

    try:
        if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            return False
    except (AttributeError, RuntimeError):  # a build without oneDNN: decide on the flags alone
        pass
    if platform.machine().lower() in ("x86_64", "amd64"):
        return torch.backends.cpu.get_cpu_capability().upper().startswith(("AVX512", "AMX"))
    return True


def cpu_has_native_bf16() -> bool:
    """True when this CPU computes bf16 natively and PyTorch's kernels may use it; ``$PSGRPO_NATIVE_BF16``
    (``1``/``0``), when set, is the answer instead.

    Raises:
        ValueError: ``$PSGRPO_NATIVE_BF16`` is set to something other than 1/0/true/false.
    """
    override = os.environ.get(NATIVE_BF16_ENV, "").strip().lower()
    if override:
        if override not in ("1", "0", "true", "false"):
            raise ValueError(f"${NATIVE_BF16_ENV} must be 1 or 0 (true or false), got {override!r}")
        return override in ("1", "true")
    return _detected_native_bf16()


@functools.cache
def _detected_native_bf16() -> bool:
    """The hardware answer of :func:`cpu_has_native_bf16` (cached: /proc/cpuinfo and oneDNN do not change)."""
    flags = cpu_flags()
    has_flag = any(f in flags for f in X86_BF16_FLAGS + ARM_BF16_FEATURES)
    return has_flag and _torch_kernels_allow_bf16()


def cpu_lacks_native_fp16() -> bool:
    """True when ``/proc/cpuinfo`` lists this CPU's flags and none of :data:`FP16_FLAGS` (False where the flags
    cannot be read, e.g. on macOS: no warning without evidence)."""
    flags = cpu_flags()
    return bool(flags) and not any(flag in flags for flag in FP16_FLAGS)


def _cuda_in_use(use_cpu: bool) -> bool:
    import torch

    return not use_cpu and torch.cuda.is_available()


def resolve_bf16(bf16: bool | None, fp16: bool, use_cpu: bool) -> bool | None:
    """The ``bf16`` value to train with, given the user's (``None`` = not set).

    Returns the user's value when set; otherwise the hardware rule of this module's docstring.
    ``None`` is returned for accelerators other than CUDA and CPU, leaving TRL's default. Silent: a CPU
    without native bf16 is reported by :func:`log_precision` once a trainer is built (:func:`cpu_fell_back`).
    """
    if bf16 is not None or fp16:
        return bf16
    import torch

    if _cuda_in_use(use_cpu):
        return torch.cuda.is_bf16_supported()
    on_other_accelerator = not use_cpu and (
        (hasattr(torch.backends, "mps") and torch.backends.mps.is_available())
        or (hasattr(torch, "xpu") and torch.xpu.is_available())
    )
    if on_other_accelerator:
        return None
    return cpu_has_native_bf16()


def cpu_fell_back(user_bf16: bool | None, fp16: bool, resolved: bool | None, use_cpu: bool) -> bool:
    """Whether :func:`resolve_bf16` turned an unset ``bf16`` off because the CPU has no native bf16."""
    return user_bf16 is None and not fp16 and resolved is False and not _cuda_in_use(use_cpu)


def accelerator_available() -> bool:
    """Whether PyTorch sees any accelerator (CUDA, MPS, XPU, an XLA device …), i.e. the CPU is not the only device."""
    import torch
    from transformers.utils import is_torch_xla_available

    if hasattr(torch, "accelerator"):  # torch >= 2.6
        found = torch.accelerator.is_available()
    else:
        found = torch.cuda.is_available() or (
            hasattr(torch.backends, "mps") and torch.backends.mps.is_available()
        )
    return found or is_torch_xla_available()


SHARDED_LAUNCH_ENV = ("ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP")
"""What ``accelerate launch`` sets for a DeepSpeed or FSDP config: accelerate takes those paths only with
``cpu=False``, and its plain CPU path (``cpu=True``) would drop them."""


def sharded_launch() -> bool:
    """Whether this process was launched with a DeepSpeed or FSDP accelerate config (:data:`SHARDED_LAUNCH_ENV`)."""
    return any(os.environ.get(name, "false").lower() == "true" for name in SHARDED_LAUNCH_ENV)


def resolve_use_cpu(
    use_cpu: bool, bf16: bool | None, bf16_full_eval: bool = False, deepspeed: Any = None
) -> bool:
    """``use_cpu`` to train with: ``True`` where the CPU is the only device, else the user's.

    On a machine with no accelerator the run goes to the CPU anyway, but two things depend on saying so:
    transformers refuses bf16 without a GPU unless ``use_cpu`` is set, and accelerate (1.15, 1.16) sets up
    multi-process CPU training (``torchrun``: DDP over gloo) only with ``cpu=True``; without it each process
    got ``DistributedType.NO`` and trained alone, with no word but transformers' "process group is
    initialized, but parallel_mode != ParallelMode.DISTRIBUTED" (found on an AVX2 CPU, where bf16 is off and
    nothing set ``use_cpu``). The one exception is a DeepSpeed or FSDP launch in fp32
    (:func:`sharded_launch`, or a ``deepspeed`` config given to the trainer), which accelerate runs sharded
    on a CPU only with ``cpu=False`` (and transformers would let ``use_cpu`` win over ``deepspeed``). Setting it here
    lets a config (Python, YAML or flags) that never mentions ``use_cpu`` train on a CPU. Silent:
    :func:`log_precision` says so for bf16 once a trainer is built, after every check of the input, so
    that a refused input stays one line.
    """
    if use_cpu or accelerator_available():
        return use_cpu
    return bool(bf16 or bf16_full_eval) or not (sharded_launch() or deepspeed)


PRECISION_NOTES = {
    "use_cpu": "bf16 on a machine without GPU: training on the CPU (use_cpu=True).",
    "fp16_cpu": f"fp16 autocast on a CPU without native fp16 (no {'/'.join(FP16_FLAGS[:2])} flag): every fp16 "
    "matmul is emulated, about 10x slower than fp32. Leave bf16 and fp16 unset (psgrpo then picks bf16 where "
    "the CPU has it, else fp32), or pass --bf16 true.",
    "fallback": f"bf16 autocast is off: this CPU has no native bf16 (no {'/'.join(X86_BF16_FLAGS)} flag, or "
    "PyTorch's kernels are capped below it), and emulated bf16 is several times slower than fp32. Training in "
    "fp32; pass --bf16 true to force bf16.",
}
"""The notes :func:`log_precision` logs, by name."""

_logged: set[str] = set()
"""The precision notes this process has logged (each once: ``psgrpo compare`` builds many trainers)."""


def log_precision(args: Any) -> None:
    """Log, once per process, what the precision rule chose for ``args`` (a ProcessGRPOConfig) on a CPU.

    Called by the trainer once every input check has passed (so a refused input stays one line), on the
    main process only: bf16 training on a machine without GPU (``use_cpu`` set for it), fp32 because the
    CPU has no native bf16 (``args.bf16_fell_back``), or (a warning) fp16 on a CPU without native fp16.
    """
    on_cpu = bool(args.use_cpu) or not accelerator_available()
    notes = {
        "use_cpu": args.use_cpu and bool(args.bf16 or args.bf16_full_eval) and not accelerator_available(),
        "fp16_cpu": on_cpu and bool(getattr(args, "fp16", False)) and cpu_lacks_native_fp16(),
        "fallback": bool(getattr(args, "bf16_fell_back", False)),
    }
    for name, due in notes.items():
        if due and name not in _logged:
            _logged.add(name)
            (logger.warning if name == "fp16_cpu" else logger.info)(PRECISION_NOTES[name])
