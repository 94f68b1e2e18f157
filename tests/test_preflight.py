"""Checks before anything loads, and what an early stop leaves (psgrpo/preflight.py)."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.checkpoints.atomic import write_marker
from psgrpo.eval.trained_on import write_record
from psgrpo.preflight import (
    check_output_dir,
    check_resume_target,
    interrupted_message,
    output_dir_removed_on_failure,
    output_dir_state,
    resume_command,
)


def test_output_dir_checks_create_nothing(tmp_path):
    check_output_dir(tmp_path / "new" / "run")  # creatable
    check_output_dir(tmp_path)  # exists
    check_output_dir(None)
    assert list(tmp_path.iterdir()) == []
    afile = tmp_path / "report.json"
    afile.write_text("{}")
    with pytest.raises(NotADirectoryError, match=f"--output_dir {afile}: is a file"):
        check_output_dir(afile)
    with pytest.raises(NotADirectoryError, match="is a file, so the directory cannot be created"):
        check_output_dir(afile / "run", option="--output_dir")
    with pytest.raises(PermissionError, match="--output_dir /proc/psgrpo/run: cannot be created"):
        check_output_dir("/proc/psgrpo/run")


def test_a_failed_run_leaves_no_directory_it_created(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError), output_dir_removed_on_failure(out):
        (out / "runs" / "tensorboard").mkdir(parents=True)  # folders only: nothing written
        raise ValueError("learning_rate=-1.0 is outside its range")
    assert not out.exists()
    with pytest.raises(KeyboardInterrupt), output_dir_removed_on_failure(out):
        out.mkdir()
        (out / "metrics.jsonl").write_text('{"step": 1, "loss": 0.25}\n')  # a result: kept
        raise KeyboardInterrupt
    assert (out / "metrics.jsonl").is_file()


def test_output_dir_state_is_what_the_removal_needs(tmp_path):
    """Only the process that saves (and so creates the folder) may count it as new; ``None`` is never removed."""
    assert output_dir_state(tmp_path / "new") == ((tmp_path / "new").resolve(), False)
    assert output_dir_state(tmp_path) == (tmp_path.resolve(), True)
    assert output_dir_state(tmp_path / "new", should_save=False)[1] is True  # another rank's: never removed
    assert output_dir_state(None) == (None, True)
    with pytest.raises(ValueError), output_dir_removed_on_failure(tmp_path / "new", existed=True):
        (tmp_path / "new").mkdir()
        raise ValueError("bad")
    assert (tmp_path / "new").is_dir()


def test_an_existing_directory_is_never_removed(tmp_path):
    with pytest.raises(ValueError), output_dir_removed_on_failure(tmp_path):
        raise ValueError("bad")
    assert tmp_path.is_dir()


def checkpoint(run_dir, step):
    path = run_dir / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    write_marker(path, step)
    return path


def test_resume_target_resolved_before_loading(tmp_path):
    assert check_resume_target(None, str(tmp_path), 10) is None
    with pytest.raises(ValueError, match="no complete checkpoint"):
        check_resume_target("true", str(tmp_path), 10)
    newest = checkpoint(tmp_path, 4)
    assert check_resume_target("true", str(tmp_path), 10) == str(newest)
    assert check_resume_target(True, str(tmp_path), -1) == str(newest)  # epochs decide: no step bound
    with pytest.raises(
        ValueError, match="is at step 4 and --max_steps is 4, so there is nothing left to train"
    ):
        check_resume_target("true", str(tmp_path), 4)


def test_resume_refusals_name_the_python_api_arguments_when_asked(tmp_path):
    """``ProcessGRPOTrainer.train`` passes ``api=True``: its users set ``max_steps=``, never ``--max_steps``."""
    with pytest.raises(ValueError, match=r"^resume_from_checkpoint=True: no complete checkpoint") as none:
        check_resume_target(True, str(tmp_path), 10, api=True)
    assert "Start without resume_from_checkpoint," in str(none.value)
    newest = checkpoint(tmp_path, 4)
    with pytest.raises(
        ValueError, match="is at step 4 and max_steps is 4, .* raise max_steps above 4"
    ) as done:
        check_resume_target(str(newest), str(tmp_path), 4, api=True)
    write_record(newest, {"method": "ps"})
    with pytest.raises(
        ValueError, match="trained with method='ps', and this run asks for method='grpo'"
    ) as other:
        check_resume_target(str(newest), str(tmp_path), 10, "grpo", api=True)
    assert f"with model='{newest}' and a new output_dir" in str(other.value)
    incomplete = tmp_path / "checkpoint-6"
    incomplete.mkdir()
    with pytest.raises(ValueError, match="resume_from_checkpoint=True picks it") as broken:
        check_resume_target(str(incomplete), str(tmp_path), 10, api=True)
    assert not any("--" in str(e.value) for e in (none, done, other, broken))
    with pytest.raises(ValueError, match="trained with --method ps, and this run asks for --method grpo"):
        check_resume_target(str(newest), str(tmp_path), 10, "grpo")  # the command line's wording stays


FLAG = st.sampled_from(["--method", "--max_steps", "--output_dir", "--dataset", "--config"])
VALUE = st.sampled_from(["grpo", "200", "outputs/demo run", "data/gsm8k", "demo"])


@given(
    pairs=st.lists(st.tuples(FLAG, VALUE), max_size=5),
    resume=st.sampled_from([[], ["true"], ["x/checkpoint-5"]]),
)
def test_resume_command_keeps_the_flags_and_resumes_once(pairs, resume):
    argv = [item for pair in pairs for item in pair]
    if resume:
        argv = [*argv[:2], "--resume_from_checkpoint", *resume, *argv[2:]]
    words = shlex.split(resume_command(argv))
    assert words[:2] == ["psgrpo", "train"] and words[-2:] == ["--resume_from_checkpoint", "true"]
    assert words[2:-2] == [item for pair in pairs for item in pair]


def test_interrupted_message(tmp_path):
    run = tmp_path / "run"
    assert "no complete checkpoint in" in interrupted_message(str(run), [])
    checkpoint(run, 2)
    newest = checkpoint(run, 3)
    (run / "partial-checkpoint-4").mkdir()  # the save Ctrl-C stopped
    message = interrupted_message(str(run), ["--method", "grpo", "--output_dir", str(run)])
    assert message == (
        f"interrupted; the newest complete checkpoint is {newest}; resume with: psgrpo train --method grpo "
        f"--output_dir {run} --resume_from_checkpoint true"
    )


@pytest.mark.parametrize(
    ("model", "dtype", "expected"),
    [
        (None, None, "float32"),  # the embedded checkpoint's config.json says float32
        (None, "auto", "float32"),
        (None, "bfloat16", "bfloat16"),  # --dtype wins, nothing is read
        ("local", None, "bfloat16"),  # a local checkpoint's torch_dtype (the older key)
        ("Qwen/Not-In-The-Cache", None, None),  # a Hub id not cached: unknown, nothing downloaded
    ],
)
def test_the_weights_dtype_is_read_without_loading_them(tmp_path, monkeypatch, model, dtype, expected):
    import torch

    from psgrpo.loading import weights_dtype

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if model == "local":
        (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
        model = str(tmp_path)
    elif model is not None:  # a Hub id: checkpoint_path's own offline check is tested elsewhere
        monkeypatch.setattr("psgrpo.loading.checkpoint_path", lambda name, revision=None: name)
    assert weights_dtype(model, dtype) == (getattr(torch, expected) if expected else None)


def test_compiled_generation_over_other_weights_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    """transformers < 5.25 cannot decode bf16 autocast over fp32 weights with a static cache: the refusal
    used to come after the model loaded and the whole before-training evaluation ran."""
    import transformers

    import psgrpo.loading
    from psgrpo.commands.train import train

    monkeypatch.setattr(transformers, "__version__", "5.17.0")
    monkeypatch.setattr(psgrpo.loading, "load_policy", lambda *a, **k: pytest.fail("the model loaded first"))
    out = tmp_path / "run"
    argv = ["--output_dir", str(out), "--bf16", "true", "--use_cpu", "true", "--compiled_generation", "true"]
    with pytest.raises(ValueError) as err:
        train([*argv, "--dtype", "float32"])
    assert str(err.value).startswith(
        "--compiled_generation true: compiled_generation=True with bfloat16 autocast over float32 weights "
        "needs transformers >= 5.25 (found 5.17.0"
    )
    assert not out.exists()
    with pytest.raises(ValueError, match="over float32 weights"):  # the embedded checkpoint is float32
        train(argv)
    monkeypatch.setattr(transformers, "__version__", "5.25.0")
    with pytest.raises(pytest.fail.Exception, match="the model loaded first"):  # accepted: on to loading
        train([*argv, "--dtype", "float32"])


def test_several_trackers_on_the_command_line_are_one_comma_separated_value():
    """The command line takes one --report_to value (a YAML list works as it is): 'tensorboard,wandb'."""
    from psgrpo.preflight import split_report_to

    assert split_report_to(["tensorboard,wandb"]) == ["tensorboard", "wandb"]
    assert split_report_to("tensorboard, trackio") == ["tensorboard", "trackio"]
    assert split_report_to(["tensorboard", "wandb"]) == ["tensorboard", "wandb"]  # a YAML list: unchanged
    assert split_report_to("none") == "none" and split_report_to(None) is None


@pytest.mark.parametrize("value", ["tensorboard,none", "all,tensorboard", "tensorboard,"])
def test_none_or_all_beside_a_tracker_is_refused_before_the_model_loads(tmp_path, value):
    """transformers refuses the mix in Trainer.__init__, after the model loaded and the first evaluation ran."""
    from psgrpo.commands.train import train

    with pytest.raises(
        ValueError, match=rf"^--report_to {value}: '[a-z]*'|^--report_to {value}: 'an empty name'"
    ):
        train(["--output_dir", str(tmp_path / "o"), "--report_to", value])
    assert not (tmp_path / "o").exists()


def test_each_comma_separated_tracker_is_checked_before_the_model_loads(tmp_path):
    from psgrpo.commands.train import train

    with pytest.raises(ValueError, match=r"^--report_to nonsense: not an integration transformers knows"):
        train(["--output_dir", str(tmp_path / "o"), "--report_to", "tensorboard,nonsense"])
    assert not (tmp_path / "o").exists()


def test_a_model_folder_is_not_trained_into(tmp_path):
    """A folder holding a model or tokenizer psgrpo did not train (the base model itself, say) was written over by
    the run's final save, exit 0 (a bad-input sweep, 2026-12-07)."""
    from psgrpo.preflight import check_no_earlier_run

    base = tmp_path / "qwen"
    base.mkdir()
    (base / "config.json").write_text("{}")
    (base / "tokenizer.json").write_text("{}")
    with pytest.raises(
        FileExistsError, match=r"holds a model or tokenizer psgrpo did not train \(config.json, "
    ):
        check_no_earlier_run(base, None)
    (base / "checkpoint-3").mkdir()  # resuming the folder's own checkpoint is what it is for
    check_no_earlier_run(base, str(base / "checkpoint-3"))
    check_no_earlier_run(tmp_path / "new", None)


def test_reward_functions_and_their_weights_are_checked_before_loading():
    """TRL found a missing weight or a repeated function only after the model loaded (a bad-input sweep)."""
    from psgrpo.preflight import check_reward_options

    with pytest.raises(ValueError, match=r"--reward_weights has 1 value\(s\) for 2 reward function\(s\)"):
        check_reward_options(["correctness", "format"], [1.0])
    with pytest.raises(ValueError, match="--reward_funcs lists correctness more than once"):
        check_reward_options(["correctness", "correctness"], None)
    check_reward_options(["correctness", "format"], [1.0, 0.5])
    check_reward_options(["correctness"], None)
