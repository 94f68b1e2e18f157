"""Bounded CPU kernel caches, so a long CPU run's memory stays flat.

On a CPU, PyTorch computes bf16 matmuls with oneDNN, which compiles a kernel for each input shape and
keeps it in two caches: oneDNN's own (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``) and ideep's, PyTorch's layer
over it (``LRU_CACHE_CAPACITY``), each 1,024 entries by default. Training shapes change every step
(each batch's completion length), so both fill with kernels for shapes that may never come back. On
arith-hard in bf16 a run's resident memory grew by about 40 MiB a step with PyTorch's defaults, and two
`psgrpo compare` lanes reached 9.2 and 9.6 GB after four 240-step runs each. With both caches at 128
entries it levels off, at the same time per step (``benchmarks/bench_cpu_memory.py``; figures in
docs/benchmarks.md). Capping one cache alone is not enough. An fp32 run's memory was flat either way:
its matmuls hardly use these caches.

The ``psgrpo`` command therefore sets both variables to :data:`CAPACITY` before torch loads, unless they
are already set: a value of yours wins. The Python API sets nothing (set them before ``import torch``).
``LRU_CACHE_CAPACITY`` of 0 or a non-number makes PyTorch's bf16 matmuls crash with a segmentation
fault, so the command refuses it with one line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping

CAPACITY = 128
"""Entries per cache that the ``psgrpo`` command sets where the user set none (PyTorch's default: 1,024)."""

ONEDNN_CACHE_ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
"""oneDNN's primitive cache: 0 turns it off (every kernel compiled again: 1.9x the time of a bf16 step)."""

IDEEP_CACHE_ENV = "LRU_CACHE_CAPACITY"
"""ideep's cache in PyTorch: 0 or a non-number crashes bf16 matmuls on the CPU (torch 2.13)."""


def kernel_cache_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """One line on a cache variable set to a value that would crash or mislead; ``None`` when both are fine.

    ``LRU_CACHE_CAPACITY`` must be an integer >= 1 (0 or a non-number crashes bf16 matmuls), and
    ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` an integer >= 0 (oneDNN reads a non-number as 0, cache off).
    """
    environ = os.environ if environ is None else environ
    for name, minimum, why in (
        (IDEEP_CACHE_ENV, 1, "0 or a non-number crashes PyTorch's bf16 matmuls on a CPU"),
        (ONEDNN_CACHE_ENV, 0, "oneDNN reads a non-number as 0, which turns its cache off"),
    ):
        value = environ.get(name)
        if value is not None and not (re.fullmatch(r"\s*[0-9]+\s*", value) and int(value) >= minimum):
            return (
                f"${name}={value!r}: expected an integer >= {minimum} ({why}); unset it to use psgrpo's "
                f"{CAPACITY}"
            )
    return None


def bound_kernel_caches(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each cache variable that is unset to :data:`CAPACITY`; returns the ones it set.

    Call it before torch is imported: both caches read their variable once.

    Raises:
        ValueError: :func:`kernel_cache_problem`'s line, for a value the user set; nothing is set then.
    """
    environ = os.environ if environ is None else environ
    problem = kernel_cache_problem(environ)
    if problem is not None:
        raise ValueError(problem)
    set_here = {name: str(CAPACITY) for name in (ONEDNN_CACHE_ENV, IDEEP_CACHE_ENV) if name not in environ}
    environ.update(set_here)
    return set_here
