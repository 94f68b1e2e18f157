"""Bounded CPU kernel caches, so a long CPU run's memory stays flat.

On a CPU, PyTorch computes bf16 matmuls with oneDNN, which compiles a kernel for each input shape and
keeps it in two caches: oneDNN's own (``ONEDNN_PRIMITIVE_CACHE_CAPACITY``) and ideep's, PyTorch's layer
over it (``LRU_CACHE_CAPACITY``), each 1,024 entries by default. Training shapes change every step
(each batch's completion length), so both fill with kernels for shapes that may never come back. On
arith-hard in bf16 a run with PyTorch's sizes grew by about 40 MiB a step over its first 60 steps and
still by 9 MiB a step from 60 to 240; two `psgrpo compare` lanes reached 9.2 and 9.6 GB after four
240-step runs each. With both caches at 128 entries the run ended at half the memory, at the same time
per step (``benchmarks/bench_cpu_memory.py``; figures in docs/benchmarks.md). Capping one cache alone is
not enough. An fp32 run's memory was flat either way: its matmuls hardly use these caches.

Both caches read their variable when the first bf16 matmul runs, not when torch is imported. So
:func:`bound_kernel_caches` sets each unset variable to :data:`CAPACITY` in two places: where the
``psgrpo`` command starts, and in ``ProcessGRPOTrainer.__init__``, for the Python API. Both come before
training's first matmul. A value of yours wins, and so does oneDNN's older name
``DNNL_PRIMITIVE_CACHE_CAPACITY``. ``LRU_CACHE_CAPACITY`` of 0 or a non-number makes PyTorch's bf16
matmuls crash with a segmentation fault (torch 2.13, tests/config/test_kernel_caches.py), so it is
refused with one line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping

CAPACITY = 128
"""Entries per cache that psgrpo sets where the user set none (PyTorch's default: 1,024)."""

ONEDNN_CACHE_ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
"""oneDNN's primitive cache: 0 turns it off (every kernel compiled again: 1.9x the time of a bf16 step)."""

ONEDNN_LEGACY_ENV = "DNNL_PRIMITIVE_CACHE_CAPACITY"
"""oneDNN's older name for the same cache: the ``ONEDNN_`` one wins where both are set."""

IDEEP_CACHE_ENV = "LRU_CACHE_CAPACITY"
"""ideep's cache in PyTorch: 0 or a non-number crashes bf16 matmuls on the CPU (torch 2.13)."""

_COUNT = re.compile(r"[ \t]*[0-9]{1,9}[ \t]*")
"""What both libraries read as the number it looks like: ASCII digits (C's ``atoi``), well inside an int."""

_RULES = (
    (IDEEP_CACHE_ENV, 1, "0 or a non-number crashes PyTorch's bf16 matmuls on a CPU"),
    (ONEDNN_CACHE_ENV, 0, "oneDNN reads only its leading digits, and none turns its cache off"),
    (ONEDNN_LEGACY_ENV, 0, "oneDNN reads only its leading digits, and none turns its cache off"),
)


def kernel_cache_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """One line on a cache variable set to a value that would crash or mislead; ``None`` when all are fine.

    ``LRU_CACHE_CAPACITY`` must be an integer >= 1, the oneDNN ones integers >= 0; at most 9 digits,
    ASCII digits with spaces or tabs around them only.
    """
    environ = os.environ if environ is None else environ
    for name, minimum, why in _RULES:
        value = environ.get(name)
        if value is not None and not (_COUNT.fullmatch(value) and int(value) >= minimum):
            return (
                f"${name}={value!r}: expected an integer >= {minimum} ({why}); unset it to use psgrpo's "
                f"{CAPACITY}"
            )
    return None


def bound_kernel_caches(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each cache variable that is unset to :data:`CAPACITY`; returns the ones it set.

    Effective where no bf16 matmul has run yet in this process (the caches read their variable then).

    Raises:
        ValueError: :func:`kernel_cache_problem`'s line, for a value the user set; nothing is set then.
    """
    environ = os.environ if environ is None else environ
    problem = kernel_cache_problem(environ)
    if problem is not None:
        raise ValueError(problem)
    set_here = {}
    if ONEDNN_CACHE_ENV not in environ and ONEDNN_LEGACY_ENV not in environ:
        set_here[ONEDNN_CACHE_ENV] = str(CAPACITY)
    if IDEEP_CACHE_ENV not in environ:
        set_here[IDEEP_CACHE_ENV] = str(CAPACITY)
    environ.update(set_here)
    return set_here
