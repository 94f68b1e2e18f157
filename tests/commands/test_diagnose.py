"""psgrpo diagnose: options are checked before loading, and the report is printed and written."""

from __future__ import annotations

import json

import pytest

from psgrpo.commands import diagnose as diagnose_module
from psgrpo.commands.cli import main
from psgrpo.commands.diagnose import DiagnoseConfig


def test_writes_json_and_prints_the_table(tmp_path, monkeypatch, capsys, tiny_model, char_tokenizer):
    import psgrpo.loading

    monkeypatch.setattr(
        psgrpo.loading, "load_model_and_tokenizer", lambda *a, **k: (tiny_model, char_tokenizer)
    )
    out = tmp_path / "q.json"
    main(["diagnose", "--problems", "3", "--corruptions", "1", "--kinds", "step_end", "--output", str(out)])
    saved = json.loads(out.read_text())
    assert saved["config"]["problems"] == 3 and saved["groups"] == 3
    assert set(saved["step_end"]) >= {"prob", "log", "gnorm_log", "places"} and "entropy" not in saved
    assert "| step_end | prob |" in capsys.readouterr().out


def test_the_embedded_checkpoint_by_name(tmp_path):
    report = diagnose_module.run_diagnose(
        DiagnoseConfig(model_name_or_path="embedded:arith", problems=4, corruptions=1, kinds=["step_end"])
    )
    assert report["groups"] == 4 and report["step_end"]["places"]["step_end"] == 1.0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"dataset": "gsm8k"}, "dataset='gsm8k' is not allowed"),
        ({"kinds": ["entropy", "line"]}, "kinds='line' is not allowed; choose one of 'step_end'"),
        ({"kinds": []}, "kinds is empty"),
        ({"corruptions": 0}, r"corruptions=0 is outside its range \[1, inf\]"),
    ],
)
def test_bad_options_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        DiagnoseConfig(**overrides)


def test_cli_error_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    assert main(["diagnose", "--problems", "0"]) == 2
    assert "psgrpo: error: problems=0 is outside its range [1, inf]" in capsys.readouterr().err


def small_diagnose(model, *extra: str) -> list[str]:
    """``psgrpo diagnose`` on ``model`` at the smallest size: 2 problems, 1 wrong copy, step ends only."""
    return ["diagnose", "--model_name_or_path", str(model), "--problems", "2", "--corruptions", "1",
            "--kinds", "step_end", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("recorded", "given", "probed"),
    [
        ("arith-hard", [], "arith-hard"),
        ("arith-hard", ["--dataset", "arith"], "arith"),
        ("gsm8k", [], "arith"),
    ],
)
def test_a_checkpoint_is_probed_on_the_task_it_was_trained_on(
    tmp_path, monkeypatch, caplog, capsys, tiny_model, char_tokenizer, recorded, given, probed
):
    """As psgrpo eval does: an arith-hard checkpoint used to be probed on arith without a word."""
    import psgrpo.loading

    monkeypatch.setattr(
        psgrpo.loading, "load_model_and_tokenizer", lambda *a, **k: (tiny_model, char_tokenizer)
    )
    checkpoint = tmp_path / "run"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    (checkpoint / "psgrpo_task.json").write_text(json.dumps({"dataset": recorded, "eval_split": "test"}))
    out = tmp_path / "q.json"
    with caplog.at_level("INFO", logger="psgrpo"):
        main(small_diagnose(checkpoint, "--output", str(out), *given))
    assert json.loads(out.read_text())["config"]["dataset"] == probed
    assert f"{probed}/test: " in capsys.readouterr().out
    said = [r.getMessage() for r in caplog.records if "psgrpo diagnose:" in r.getMessage()]
    if given:
        assert said == []
    else:
        assert len(said) == 1 and f"was trained on {recorded}" in said[0]


def test_a_run_folder_is_probed_at_its_newest_checkpoint_and_the_log_says_diagnose(
    tmp_path, monkeypatch, caplog, tiny_model, char_tokenizer
):
    import psgrpo.loading
    from psgrpo.checkpoints.atomic import write_marker

    loaded = []
    monkeypatch.setattr(
        psgrpo.loading,
        "load_model_and_tokenizer",
        lambda path, **k: loaded.append(path) or (tiny_model, char_tokenizer),
    )
    checkpoint = tmp_path / "run" / "checkpoint-3"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text("{}")
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    write_marker(checkpoint, 3)
    with caplog.at_level("INFO", logger="psgrpo"):
        main(small_diagnose(tmp_path / "run"))
    assert loaded == [str(checkpoint)]
    said = [r.getMessage() for r in caplog.records if "holds no final model" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("psgrpo diagnose: ") and f"{checkpoint} is probed" in said[0]
