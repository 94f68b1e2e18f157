"""Multi-process helpers: symmetric collectives, sharded-parameter detection, replicated loading.

Under ``accelerate launch`` every process holds one slice of the generation batch (TRL slices
it by ``process_index``). Two things then need care beyond what TRL does:

* With sharded parameters (DeepSpeed ZeRO-3, FSDP) every forward of the policy all-gathers
  parameters, a collective that *every* process must join. A process that runs fewer
  forwards than the others leaves them waiting forever. :func:`max_over_processes` lets the
  VPS probes agree on one number of forward chunks before running any (see
  :func:`psgrpo.vps.probes.idle_forwards`).
* A model the trainer does not wrap (the PRM of PS-GRPO) must be loaded whole on every
  process. ``transformers`` would otherwise partition it at load time under ZeRO-3
  (``deepspeed.zero.Init``), or load real weights on local rank 0 only under FSDP's
  cpu-RAM-efficient loading; :func:`replicated_loading` switches both off for one load.

And one thing at the end of a run: :func:`close_process_group`.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

FSDP_EFFICIENT_LOADING_ENV = "FSDP_CPU_RAM_EFFICIENT_LOADING"
"""Environment variable (set by ``accelerate launch`` from ``fsdp_cpu_ram_efficient_loading``)."""


def max_over_processes(value: int, accelerator: Any) -> int:
    """The largest ``value`` over all processes (a collective: every process must call it).

    With one process it returns ``value`` without communicating.
    """
    if accelerator.num_processes == 1:
        return value
    local = torch.tensor([value], dtype=torch.long, device=accelerator.device)
    return int(accelerator.gather(local).max().item())


def local_rows(accelerator: Any, n_local: int) -> slice:
    """This process's rows of a batch gathered from all processes, each holding ``n_local`` rows.

    ``accelerate``'s gathers concatenate the processes' rows in rank order, so process ``r`` owns
    rows ``[r · n_local, (r + 1) · n_local)`` of the gathered batch.
    """
    start = accelerator.process_index * n_local
    return slice(start, start + n_local)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "false").strip().lower() in ("1", "true", "yes", "on")


def parameters_sharded(args: Any = None) -> bool:
    """True when the policy's parameters are (or will be) sharded across processes.

    That is DeepSpeed ZeRO-3 (``transformers``' ``is_deepspeed_zero3_enabled()``, set once the
    ``TrainingArguments`` are built) or FSDP (``args.fsdp`` or ``accelerate launch``'s
    ``ACCELERATE_USE_FSDP``). Such a model cannot run a forward outside the trainer's engine
    before training, and under FSDP's efficient loading only local rank 0 holds real weights.
    """
    from transformers.integrations import is_deepspeed_zero3_enabled

    fsdp = bool(getattr(args, "fsdp", None)) or _env_flag("ACCELERATE_USE_FSDP")
    return is_deepspeed_zero3_enabled() or fsdp


@contextmanager
def replicated_loading() -> Iterator[None]:
    """Within the block, ``from_pretrained`` loads the full model on every process.

    Switches off (and afterwards restores) ``transformers``' ZeRO-3 partitioned init and FSDP's
    cpu-RAM-efficient loading. Use it for models that only run inference and are never handed
    to the trainer's engine, such as a PRM; each process then keeps a full copy.
    """
    from transformers.integrations import deepspeed as hf_deepspeed

    config_ref = hf_deepspeed._hf_deepspeed_config_weak_ref
    config = config_ref() if config_ref is not None else None
    efficient_loading = os.environ.pop(FSDP_EFFICIENT_LOADING_ENV, None)
    hf_deepspeed.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        if config is not None:
            hf_deepspeed.set_hf_deepspeed_config(config)
        if efficient_loading is not None:
            os.environ[FSDP_EFFICIENT_LOADING_ENV] = efficient_loading


def close_process_group() -> None:
    """Wait for every process, destroy the default process group and free it; a no-op without one.

    Call it last, once the trainer is unreachable (returned from the function that built it, or
    ``del``-eted). Why the ``gc.collect()``: ``destroy_process_group`` does not stop gloo's worker
    threads while the DDP-wrapped model still references the group, and the trainer sits in
    reference cycles that only the collector breaks. Left alone, those threads outlive the
    interpreter, and one that frees its last finished work at exit needs the GIL and aborts the
    process ("terminate called without an active exception", SIGABRT) after a run that went well
    (pytorch/pytorch#190489). Collecting here frees the group while the interpreter is alive, and
    its destructor joins the threads.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    dist.barrier()
    dist.destroy_process_group()
    gc.collect()
