"""psgrpo eval knows the task a checkpoint was trained on, and reads a run directory's newest checkpoint."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from psgrpo.checkpoints.atomic import write_marker
from psgrpo.commands.cli import main
from psgrpo.eval.trained_on import (
    TASK_RECORD,
    apply_task_record,
    read_task_record,
    recorded_chat_template_kwargs,
    resolve_eval_checkpoint,
    run_record,
    task_record,
    write_record,
    write_task_record,
)

HARD = SimpleNamespace(
    dataset="arith-hard", eval_split="test", prompt_template=None, chat=False, system_prompt=None
)


def embedded_checkpoint(run_dir: Path, step: int) -> Path:
    """A complete ``checkpoint-step`` of ``run_dir`` holding the embedded tiny model (real weights, tokenizer)."""
    from psgrpo.tiny import resolve_checkpoint

    checkpoint = run_dir / f"checkpoint-{step}"
    shutil.copytree(resolve_checkpoint(None), checkpoint)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    write_marker(checkpoint, step)
    return checkpoint


def test_the_record_is_read_from_the_checkpoint_or_its_run_directory(tmp_path):
    write_task_record(tmp_path, HARD)
    (tmp_path / "checkpoint-3").mkdir()
    for path in (tmp_path, tmp_path / "checkpoint-3"):
        record, source = read_task_record(path)
        assert record["dataset"] == "arith-hard" and source == tmp_path / TASK_RECORD
    assert read_task_record(None) is None and read_task_record(tmp_path / "elsewhere" / "x") is None


def test_an_embedded_checkpoint_names_the_task_it_was_warm_started_on():
    """``psgrpo eval --model_name_or_path embedded:arith-hard`` without --dataset evaluated on arith (a review)."""
    from psgrpo.tiny import EMBEDDED_CHECKPOINTS

    record, source = read_task_record("embedded:arith-hard")
    assert record == {"dataset": "arith-hard"} and source == EMBEDDED_CHECKPOINTS["arith-hard"]
    task = SimpleNamespace(dataset="arith", eval_split="test")
    line = apply_task_record(task, "embedded:arith-hard", set(), "embedded:arith-hard")
    assert task.dataset == "arith-hard" and "was trained on arith-hard" in line
    assert read_task_record("embedded:nope") is None


def test_the_record_applies_except_where_the_user_said_otherwise(tmp_path):
    write_task_record(tmp_path, HARD)
    task = SimpleNamespace(
        dataset="arith", eval_split="test", prompt_template=None, chat=False, system_prompt=None
    )
    line = apply_task_record(task, str(tmp_path), set(), "run")
    assert task.dataset == "arith-hard" and "run was trained on arith-hard" in line and "--dataset" in line
    task.dataset = "arith"
    assert apply_task_record(task, str(tmp_path), {"dataset"}, "run") is None and task.dataset == "arith"


def test_a_run_directory_with_only_checkpoints_resolves_to_the_newest_complete_one(tmp_path):
    for step in (1, 3):
        (tmp_path / f"checkpoint-{step}").mkdir()
        write_marker(tmp_path / f"checkpoint-{step}", step)
    (tmp_path / "checkpoint-5").mkdir()  # a save that never finished: no marker
    assert resolve_eval_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-3")
    (tmp_path / "config.json").write_text("{}")  # a final model: used as it is
    assert resolve_eval_checkpoint(str(tmp_path)) == str(tmp_path)
    assert resolve_eval_checkpoint("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


def test_only_incomplete_checkpoints_name_what_to_pass(tmp_path):
    (tmp_path / "checkpoint-2").mkdir()
    with pytest.raises(
        FileNotFoundError, match=r"holds no model .*checkpoint-2 \(it has no psgrpo_checkpoint"
    ):
        resolve_eval_checkpoint(str(tmp_path))


def test_the_run_record_names_the_method_and_eval_applies_only_the_task(tmp_path):
    """What the trainer writes into each checkpoint (tests/checkpoints/test_checkpoint_mixin.py saves one)."""
    write_record(tmp_path / "checkpoint-4", run_record(HARD, "ps"))
    record = json.loads((tmp_path / "checkpoint-4" / TASK_RECORD).read_text())
    assert record["dataset"] == "arith-hard" and record["method"] == "ps"  # the method, for resuming
    assert read_task_record(tmp_path / "checkpoint-4")[0] == task_record(HARD)
    assert "method" not in run_record(HARD)


def test_eval_of_a_run_directory_uses_its_newest_checkpoint_and_its_task(
    tmp_path, caplog, capsys, monkeypatch
):
    """The README flow: a run that saved only checkpoint-N, trained on arith-hard, evaluated without --dataset."""
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    run = tmp_path / "run"
    embedded_checkpoint(run, 2)
    write_task_record(run / "checkpoint-2", HARD)
    flags = ["--max_eval_examples", "2", "--eval_max_new_tokens", "4", "--output_dir", str(tmp_path / "eval")]
    with caplog.at_level(logging.INFO, logger="psgrpo"):
        assert main(["eval", "--model_name_or_path", str(run), *flags]) == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"its newest complete checkpoint {run / 'checkpoint-2'} is evaluated" in m for m in messages)
    assert any("was trained on arith-hard" in m and "evaluated on arith-hard/test" in m for m in messages)
    config = json.loads((tmp_path / "eval" / "summary.json").read_text())["config"]
    assert config["dataset"] == "arith-hard" and config["model"] == str(run / "checkpoint-2")
    assert "on arith-hard/test" in capsys.readouterr().out


def test_eval_decodes_a_checkpoint_as_its_training_run_evaluated_it(tmp_path):
    """A GSM8K run evaluates all 1,319 test rows at 512 new tokens; eval's own defaults (200 rows, 256
    tokens) would score the same checkpoint lower, on other rows, where a completion runs past 256."""
    trained = SimpleNamespace(**vars(HARD), max_eval_examples=None, eval_max_new_tokens=512)
    write_task_record(tmp_path, trained)
    task = SimpleNamespace(**vars(HARD), max_eval_examples=200, eval_max_new_tokens=None)
    task.dataset = "arith"
    line = apply_task_record(task, str(tmp_path), set(), "run")
    assert (task.max_eval_examples, task.eval_max_new_tokens) == (None, 512)
    assert (
        "evaluated on arith-hard/test (all problems, at most 512 new tokens, as its training run set)" in line
    )
    task = SimpleNamespace(**vars(HARD), max_eval_examples=50, eval_max_new_tokens=None)
    line = apply_task_record(task, str(tmp_path), {"max_eval_examples"}, "run")  # what the user typed stays
    assert (task.max_eval_examples, task.eval_max_new_tokens) == (50, 512)
    assert "(at most 512 new tokens, as its training run set)" in line
    write_task_record(tmp_path, HARD)  # a record from before these fields: eval keeps its defaults
    task = SimpleNamespace(**vars(HARD), max_eval_examples=200, eval_max_new_tokens=None)
    line = apply_task_record(task, str(tmp_path), set(), "run")
    assert (task.max_eval_examples, task.eval_max_new_tokens) == (
        200,
        None,
    ) and "as its training run set" not in line


def test_train_records_the_evaluation_it_ran(tmp_path):
    from psgrpo.commands.train import train

    out = tmp_path / "run"
    train(["--output_dir", str(out), "--max_steps", "1", "--max_eval_examples", "4", "--eval_before_after",
           "false", "--max_completion_length", "24", "--per_device_train_batch_size", "4",
           "--num_generations", "2", "--report_to", "none", "--save_strategy", "no"])  # fmt: skip
    record = json.loads((out / TASK_RECORD).read_text())
    assert (record["max_eval_examples"], record["eval_max_new_tokens"]) == (4, 24)


def test_the_runs_chat_template_kwargs_are_recorded_and_read_back(tmp_path):
    """A run trained with --chat_template_kwargs (Qwen3's {"enable_thinking": false}) rendered its prompts so;
    psgrpo eval on its checkpoint rendered them without, and scored another prompt than the one trained on."""
    kwargs = {"enable_thinking": False}
    assert run_record(HARD, "ps", kwargs)["chat_template_kwargs"] == kwargs
    assert "chat_template_kwargs" not in run_record(HARD, "ps", {})  # unset: no key, as before
    write_task_record(tmp_path, HARD, "ps", kwargs)
    (tmp_path / "checkpoint-3").mkdir()
    for path in (tmp_path, tmp_path / "checkpoint-3"):  # the checkpoint's own record, else its run's
        assert recorded_chat_template_kwargs(path) == (kwargs, tmp_path / TASK_RECORD)
    assert read_task_record(tmp_path)[0] == task_record(HARD)  # not a task field: apply_task_record leaves it
    write_task_record(tmp_path / "checkpoint-3", HARD, "ps")  # its own record, without: none
    assert recorded_chat_template_kwargs(tmp_path / "checkpoint-3") is None
    assert recorded_chat_template_kwargs(None) is None
    assert recorded_chat_template_kwargs("embedded:arith-hard") is None


@pytest.mark.parametrize(
    ("typed", "expected"),
    [([], {"enable_thinking": False}), (["--chat_template_kwargs", "{}"], {})],
    ids=["as-trained", "typed-overrides"],
)
def test_eval_renders_prompts_with_the_runs_chat_template_kwargs_unless_given(
    tmp_path, caplog, monkeypatch, typed, expected
):
    import psgrpo.eval.generation as generation

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    run = tmp_path / "run"
    checkpoint = embedded_checkpoint(run, 2)
    write_task_record(checkpoint, HARD, "ps", {"enable_thinking": False})
    seen: list[dict] = []
    real = generation.evaluate_samples

    def spy(*args, **kwargs):
        seen.append(kwargs["chat_template_kwargs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(generation, "evaluate_samples", spy)
    flags = ["--max_eval_examples", "2", "--eval_max_new_tokens", "4"]
    with caplog.at_level(logging.INFO, logger="psgrpo"):
        assert main(["eval", "--model_name_or_path", str(checkpoint), *flags, *typed]) == 0
    assert seen == [expected]
    told = [r.getMessage() for r in caplog.records if "chat_template_kwargs" in r.getMessage()]
    assert bool(told) == (not typed) and all('{"enable_thinking": false}' in m for m in told)


def test_eval_refuses_chat_template_kwargs_that_are_not_an_object(capsys, monkeypatch):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    assert main(["eval", "--chat_template_kwargs", "[1]"]) != 0
    err = capsys.readouterr().err
    assert "chat_template_kwargs must be a JSON object" in err and "Traceback" not in err
