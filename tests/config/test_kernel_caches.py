"""psgrpo/config/kernel_caches.py: psgrpo bounds PyTorch's CPU kernel caches; a user's value wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trainer_helpers import tiny_run_args

from psgrpo.config.kernel_caches import (
    CAPACITY,
    IDEEP_CACHE_ENV,
    ONEDNN_CACHE_ENV,
    ONEDNN_LEGACY_ENV,
    bound_kernel_caches,
    kernel_cache_problem,
)
from psgrpo.config.precision import cpu_has_native_bf16
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.trainer import ProcessGRPOTrainer

ROOT = Path(__file__).resolve().parents[2]
NAMES = (ONEDNN_CACHE_ENV, ONEDNN_LEGACY_ENV, IDEEP_CACHE_ENV)


def test_unset_caches_get_psgrpo_s_capacity():
    environ: dict[str, str] = {"PATH": "/bin"}
    assert bound_kernel_caches(environ) == {ONEDNN_CACHE_ENV: "128", IDEEP_CACHE_ENV: "128"}
    assert environ == {"PATH": "/bin", ONEDNN_CACHE_ENV: "128", IDEEP_CACHE_ENV: "128"}
    assert CAPACITY == 128


@pytest.mark.parametrize(
    ("name", "value", "set_here"),
    [
        (ONEDNN_CACHE_ENV, "0", {IDEEP_CACHE_ENV: "128"}),
        (ONEDNN_CACHE_ENV, " 4096\t", {IDEEP_CACHE_ENV: "128"}),
        (IDEEP_CACHE_ENV, "1", {ONEDNN_CACHE_ENV: "128"}),
        (IDEEP_CACHE_ENV, "05", {ONEDNN_CACHE_ENV: "128"}),
        # oneDNN's older name: setting the new one would override it, so neither is set
        (ONEDNN_LEGACY_ENV, "64", {IDEEP_CACHE_ENV: "128"}),
    ],
)
def test_a_value_the_user_set_wins(name, value, set_here):
    environ = {name: value}
    assert bound_kernel_caches(environ) == set_here
    assert environ == {name: value, **set_here}


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        (
            IDEEP_CACHE_ENV,
            "0",
            "$LRU_CACHE_CAPACITY='0': expected an integer >= 1 (0 or a non-number crashes",
        ),
        (IDEEP_CACHE_ENV, "abc", "$LRU_CACHE_CAPACITY='abc': expected an integer >= 1"),
        (IDEEP_CACHE_ENV, "-1", "$LRU_CACHE_CAPACITY='-1': expected an integer >= 1"),
        (IDEEP_CACHE_ENV, "+5", "$LRU_CACHE_CAPACITY='+5': expected an integer >= 1"),
        (IDEEP_CACHE_ENV, "", "$LRU_CACHE_CAPACITY='': expected an integer >= 1"),
        (IDEEP_CACHE_ENV, "\xa05", "$LRU_CACHE_CAPACITY='\\xa05': expected"),  # C's atoi reads 0 there
        (IDEEP_CACHE_ENV, "\x1c5", "$LRU_CACHE_CAPACITY='\\x1c5': expected"),  # int() would refuse it
        (IDEEP_CACHE_ENV, "4294967296", "$LRU_CACHE_CAPACITY='4294967296': expected"),  # past a C int
        (
            ONEDNN_CACHE_ENV,
            "1k",
            "$ONEDNN_PRIMITIVE_CACHE_CAPACITY='1k': expected an integer >= 0 (oneDNN reads",
        ),
        (ONEDNN_LEGACY_ENV, "x", "$DNNL_PRIMITIVE_CACHE_CAPACITY='x': expected an integer >= 0"),
    ],
)
def test_a_value_that_would_crash_or_mislead_is_one_line_and_nothing_is_set(name, value, expected):
    environ = {name: value}
    with pytest.raises(ValueError) as raised:
        bound_kernel_caches(environ)
    assert str(raised.value).startswith(expected) and "\n" not in str(raised.value)
    assert str(raised.value).endswith("unset it to use psgrpo's 128")
    assert environ == {name: value}
    assert kernel_cache_problem(environ) == str(raised.value)


def _count(text: str) -> int | None:
    """``text`` as C's ``atoi`` reads it where that is unambiguous: ASCII digits, spaces or tabs around."""
    digits = text.strip(" \t")
    return int(digits) if 0 < len(digits) <= 9 and all(c in "0123456789" for c in digits) else None


@given(st.dictionaries(st.sampled_from(NAMES), st.text(alphabet=" \t0123456789-+a٣\xa0\x1c", max_size=6)))
def test_accepted_exactly_when_every_set_variable_is_a_count_the_caches_can_use(environ):
    minimum = {IDEEP_CACHE_ENV: 1, ONEDNN_CACHE_ENV: 0, ONEDNN_LEGACY_ENV: 0}
    usable = all((_count(v) if _count(v) is not None else -1) >= minimum[k] for k, v in environ.items())
    assert (kernel_cache_problem(environ) is None) == usable
    if usable:
        before = dict(environ)
        set_here = bound_kernel_caches(environ)
        assert environ == {**before, **set_here} and not set(set_here) & set(before)


# ---- where psgrpo sets them: the command, and the trainer ----


def _clean_env(**variables: str) -> dict[str, str]:
    """This process's environment without any cache variable, plus ``variables``."""
    return {**{k: v for k, v in os.environ.items() if k not in NAMES}, **variables}


def _psgrpo(args: list[str], **variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m psgrpo ARGS`` in a fresh process with no cache variable but ``variables``."""
    return subprocess.run(
        [sys.executable, "-m", "psgrpo", *args],
        env=_clean_env(**variables),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_the_command_sets_both_before_torch_loads_and_keeps_the_user_s():
    code = (
        "import sys\nimport psgrpo.commands.cli as cli\nreal = cli.bound_kernel_caches\n"
        "cli.bound_kernel_caches = lambda: (print('torch loaded:', 'torch' in sys.modules), real())[1]\n"
        "sys.exit(cli.main(['env', '--json']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    first, rest = result.stdout.split("\n", 1)
    assert first == "torch loaded: False"
    assert json.loads(rest)["cpu"]["kernel_caches"] == {ONEDNN_CACHE_ENV: "128", IDEEP_CACHE_ENV: "128"}
    result = _psgrpo(["env"], **{ONEDNN_CACHE_ENV: "1024"})
    assert f"- CPU kernel caches: ${ONEDNN_CACHE_ENV}=1024, ${IDEEP_CACHE_ENV}=128" in result.stdout


def test_train_refuses_a_crashing_value_in_one_line_before_anything_loads(tmp_path):
    out = tmp_path / "run"
    result = _psgrpo(
        ["train", "--max_steps", "1", "--output_dir", str(out)], PSGRPO_DEBUG="0", **{IDEEP_CACHE_ENV: "0"}
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "psgrpo: error: $LRU_CACHE_CAPACITY='0': expected an integer >= 1 (0 or a non-number crashes PyTorch's "
        "bf16 matmuls on a CPU); unset it to use psgrpo's 128"
    ]
    assert not out.exists()


def test_env_still_reports_and_lists_the_bad_value_as_a_problem():
    result = _psgrpo(["env"], **{IDEEP_CACHE_ENV: "\x1c5"})
    assert result.returncode == 0, result.stderr
    assert "Problems:\n- $LRU_CACHE_CAPACITY='\\x1c5': expected an integer >= 1" in result.stdout


def test_the_trainer_sets_them_for_the_python_api_and_refuses_a_crashing_value(
    tmp_path, monkeypatch, char_tokenizer, tiny_model
):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    build = lambda: ProcessGRPOTrainer(  # noqa: E731
        model=tiny_model,
        args=ProcessGRPOConfig(**tiny_run_args(tmp_path)),
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=char_tokenizer,
    )
    build()
    assert (os.environ[ONEDNN_CACHE_ENV], os.environ[IDEEP_CACHE_ENV]) == ("128", "128")
    monkeypatch.setenv(IDEEP_CACHE_ENV, "0")
    with pytest.raises(ValueError, match=r"^\$LRU_CACHE_CAPACITY='0': expected an integer >= 1"):
        build()


# ---- why: what the variables do to PyTorch's bf16 matmuls on this CPU ----

_MATMULS = """
import os, re, sys, torch
torch.set_num_threads(1)
torch.randn(8, 8) @ torch.randn(8, 8)  # torch in use before the variables are set, as in a trainer
os.environ.update(dict(a.split("=", 1) for a in sys.argv[1:]))
def rss():
    return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024
layer, sizes = torch.nn.Linear(128, 512), []
for n in range(1, 201):  # 200 shapes of about one size, as a training run's changing completion lengths
    x = torch.randn(4096 + 8 * n, 128, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        layer(x).float().sum().backward()
    if n in (50, 200):
        sizes.append(rss())
print(sizes[1] - sizes[0])
"""


def _matmuls(*assignments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MATMULS, *assignments],
        env=_clean_env(OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )


needs_native_bf16 = pytest.mark.skipif(
    not cpu_has_native_bf16(), reason="bf16 matmuls use oneDNN's caches on a CPU with native bf16"
)


@needs_native_bf16
def test_lru_cache_capacity_0_still_crashes_bf16_matmuls_so_the_refusal_stands():
    """If a torch release stops crashing here, the refusal in kernel_caches.py can go."""
    result = _matmuls(f"{IDEEP_CACHE_ENV}=0")
    assert result.returncode == -11, (result.returncode, result.stderr[-500:])  # SIGSEGV


@pytest.mark.slow
@needs_native_bf16
def test_set_after_torch_is_imported_the_variables_still_bound_the_caches():
    """The caches read their variables at the first bf16 matmul, so the trainer's call is early enough.

    A small capacity (16) separates the two cleanly in 200 shapes; the 128 psgrpo sets is measured on whole
    runs in benchmarks/bench_cpu_memory.py.
    """
    growth_torch = float(_matmuls().stdout)
    growth_capped = float(_matmuls(f"{ONEDNN_CACHE_ENV}=16", f"{IDEEP_CACHE_ENV}=16").stdout)
    assert growth_capped < growth_torch / 4, (growth_capped, growth_torch)  # seen here: 9-21 vs 276-442 MiB
