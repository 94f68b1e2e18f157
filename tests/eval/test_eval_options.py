"""EvalConfig's checks: bad segmenter arguments, dtype, repeated pass@k and an output folder that is / or home
are one ValueError naming the option, before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from psgrpo.commands.evaluate import EvalConfig


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"segmenter_kwargs": '{"bogus": 1}'},
            r"--segmenter_kwargs \{\"bogus\": 1\} do not fit --segmenter markers",
        ),
        (
            {"segmenter": "newline", "segmenter_kwargs": {"pattern": "x"}},
            "do not fit --segmenter newline: .*it takes no arguments: drop --segmenter_kwargs",
        ),
        ({"segmenter_kwargs": {"pattern": "("}}, r"--segmenter_kwargs .* invalid step marker pattern"),
    ],
)
def test_segmenter_kwargs_that_do_not_fit_are_one_value_error(options, expected):
    """They raised TypeError from get_segmenter: a traceback."""
    with pytest.raises(ValueError, match=expected):
        EvalConfig(**options)


def test_segmenter_kwargs_that_fit_are_kept():
    assert EvalConfig(segmenter_kwargs='{"pattern": "(?m)^[0-9]+[.]"}').segmenter_kwargs == {
        "pattern": "(?m)^[0-9]+[.]"
    }
    with pytest.raises(ValueError, match="segmenter='lines' is not registered"):
        EvalConfig(segmenter="lines")


@pytest.mark.parametrize("dtype", ["float17", "int8", "bool", "device", ""])
def test_dtype_must_name_a_torch_floating_dtype(dtype):
    """torch has no float17: an AttributeError once the checkpoint was found."""
    with pytest.raises(
        ValueError, match=rf"--dtype {dtype}: not a torch floating-point dtype; give 'auto', 'bfloat16'"
    ):
        EvalConfig(dtype=dtype)


@pytest.mark.parametrize("dtype", [None, "auto", "bfloat16", "float16", "float32", "float"])
def test_valid_dtypes_are_accepted(dtype):
    assert EvalConfig(dtype=dtype).dtype == dtype


def test_a_repeated_pass_k_is_refused():
    with pytest.raises(ValueError, match=r"--pass_k 1 1: repeats k=1; give each k once, e.g. --pass_k 1$"):
        EvalConfig(pass_k=[1, 1])
    with pytest.raises(ValueError, match=r"repeats k=2, 4; give each k once, e.g. --pass_k 1 2 4"):
        EvalConfig(num_samples=4, do_sample=True, pass_k=[4, 2, 1, 2, 4])
    assert EvalConfig(num_samples=4, do_sample=True, pass_k=[4, 1]).pass_k == [4, 1]


def test_an_output_dir_of_root_or_home_is_refused(tmp_path, monkeypatch):
    """`--output_dir /` wrote summary.json, summary.md and samples.jsonl into the filesystem root."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for given, where in [("/", "the filesystem root"), ("/tmp/..", "the filesystem root"), ("~", "your home directory"),
                         (str(tmp_path), "your home directory")]:  # fmt: skip
        with pytest.raises(ValueError, match=rf"--output_dir {given}: is {where}; eval writes summary.json"):
            EvalConfig(output_dir=given)
    assert EvalConfig(output_dir="~/eval").output_dir == "~/eval"
    assert EvalConfig(output_dir=str(Path(tmp_path) / "eval")).output_dir.endswith("eval")
