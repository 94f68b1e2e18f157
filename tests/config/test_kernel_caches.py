"""psgrpo/config/kernel_caches.py: the `psgrpo` command bounds PyTorch's CPU kernel caches, a user's value wins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.config.kernel_caches import (
    CAPACITY,
    IDEEP_CACHE_ENV,
    ONEDNN_CACHE_ENV,
    bound_kernel_caches,
    kernel_cache_problem,
)

ROOT = Path(__file__).resolve().parents[2]


def test_unset_caches_get_psgrpo_s_capacity():
    environ: dict[str, str] = {"PATH": "/bin"}
    assert bound_kernel_caches(environ) == {ONEDNN_CACHE_ENV: "128", IDEEP_CACHE_ENV: "128"}
    assert environ == {"PATH": "/bin", ONEDNN_CACHE_ENV: "128", IDEEP_CACHE_ENV: "128"}
    assert CAPACITY == 128


@pytest.mark.parametrize(
    ("name", "value"), [(ONEDNN_CACHE_ENV, "0"), (ONEDNN_CACHE_ENV, "4096"), (IDEEP_CACHE_ENV, "1")]
)
def test_a_value_the_user_set_wins_and_only_the_other_is_set(name, value):
    other = IDEEP_CACHE_ENV if name == ONEDNN_CACHE_ENV else ONEDNN_CACHE_ENV
    environ = {name: value}
    assert bound_kernel_caches(environ) == {other: "128"}
    assert environ == {name: value, other: "128"}


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
        (IDEEP_CACHE_ENV, "", "$LRU_CACHE_CAPACITY='': expected an integer >= 1"),
        (
            ONEDNN_CACHE_ENV,
            "1k",
            "$ONEDNN_PRIMITIVE_CACHE_CAPACITY='1k': expected an integer >= 0 (oneDNN reads",
        ),
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


@given(st.text(alphabet=" 0123456789-a٣\t", max_size=5), st.text(alphabet=" 0123456789-a٣\t", max_size=5))
def test_accepted_exactly_when_both_are_counts_the_caches_can_use(ideep, onednn):
    environ = {IDEEP_CACHE_ENV: ideep, ONEDNN_CACHE_ENV: onednn}

    def count(text: str) -> int | None:  # ASCII digits only: int() also reads '٣', which C's atoi does not
        return int(text) if text.strip() and all(c in "0123456789" for c in text.strip()) else None

    usable = (count(ideep) or 0) >= 1 and count(onednn) is not None
    assert (kernel_cache_problem(environ) is None) == usable
    if usable:
        assert bound_kernel_caches(environ) == {} and environ == {
            IDEEP_CACHE_ENV: ideep,
            ONEDNN_CACHE_ENV: onednn,
        }


def _psgrpo(args: list[str], **variables: str) -> subprocess.CompletedProcess[str]:
    """``python -m psgrpo ARGS`` in a fresh process whose environment has neither cache variable but ``variables``."""
    env = {k: v for k, v in os.environ.items() if k not in (ONEDNN_CACHE_ENV, IDEEP_CACHE_ENV)}
    return subprocess.run(
        [sys.executable, "-m", "psgrpo", *args],
        env={**env, **variables},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_the_command_sets_both_before_torch_and_keeps_the_user_s():
    result = _psgrpo(["env", "--json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cpu"]["kernel_caches"] == {
        ONEDNN_CACHE_ENV: "128",
        IDEEP_CACHE_ENV: "128",
    }
    result = _psgrpo(["env"], **{ONEDNN_CACHE_ENV: "1024"})
    assert f"- CPU kernel caches: ${ONEDNN_CACHE_ENV}=1024, ${IDEEP_CACHE_ENV}=128" in result.stdout


def test_train_refuses_a_crashing_value_in_one_line_before_anything_loads(tmp_path):
    out = tmp_path / "run"
    result = _psgrpo(["train", "--max_steps", "1", "--output_dir", str(out)], **{IDEEP_CACHE_ENV: "0"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "psgrpo: error: $LRU_CACHE_CAPACITY='0': expected an integer >= 1 (0 or a non-number crashes PyTorch's "
        "bf16 matmuls on a CPU); unset it to use psgrpo's 128"
    ]
    assert not out.exists()


def test_env_still_reports_and_lists_the_bad_value_as_a_problem():
    result = _psgrpo(["env"], **{IDEEP_CACHE_ENV: "0"})
    assert result.returncode == 0, result.stderr
    assert "Problems:\n- $LRU_CACHE_CAPACITY='0': expected an integer >= 1" in result.stdout
    assert f"${IDEEP_CACHE_ENV}=0" in result.stdout
