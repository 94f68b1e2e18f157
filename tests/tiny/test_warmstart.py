"""psgrpo warmstart: a short SFT writes a complete, reloadable checkpoint, atomically."""

from __future__ import annotations

import json

from transformers import AutoModelForCausalLM, AutoTokenizer

from psgrpo.commands.cli import main
from psgrpo.tiny.warmstart import WarmstartConfig, check_replaceable, save_checkpoint, warmstart


def test_warmstart_writes_a_reloadable_checkpoint(tmp_path):
    out = tmp_path / "ckpt"
    result = warmstart(
        WarmstartConfig(
            output_dir=str(out),
            max_steps=3,
            per_device_train_batch_size=4,
            hidden_size=32,
            num_layers=1,
            eval_examples=4,
        )
    )
    assert result["train_seconds"] > 0 and 0.0 <= result["heldout_accuracy"] <= 1.0
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "qwen2" and model.config.hidden_size == 32
    assert tokenizer.decode(tokenizer("<answer>7</answer>")["input_ids"]) == "<answer>7</answer>"
    assert not list(tmp_path.glob(".ckpt.*")) and not (tmp_path / "ckpt.old").exists()  # no staging left


def test_save_checkpoint_replaces_existing_dir(tmp_path, tiny_model, char_tokenizer):
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    save_checkpoint(tiny_model, char_tokenizer, out)
    assert (out / "model.safetensors").exists() and not (out / "stale.txt").exists()


SMALLEST = [
    "--max_steps",
    "1",
    "--per_device_train_batch_size",
    "2",
    "--hidden_size",
    "16",
    "--num_layers",
    "1",
]
SMALLEST += ["--eval_examples", "2"]
"""The smallest warm start the command runs: one step of a one-layer, 16-wide model, two rows evaluated."""


def test_cli_warmstart_prints_json(tmp_path, capsys):
    main(["warmstart", "--output_dir", str(tmp_path / "c"), *SMALLEST])
    printed = capsys.readouterr().out
    assert json.loads(printed[printed.rindex("{\n") :])["heldout_n"] == 2.0


def test_sft_rows_default_to_the_dataset_rows_and_mix_in_early_answers():
    from psgrpo.data.arith import make_arith_dataset
    from psgrpo.data.arith_probe import PROBE_OPEN
    from psgrpo.tiny.warmstart import sft_dataset

    plain = sft_dataset(WarmstartConfig(), 50)
    assert (
        plain.to_list()
        == make_arith_dataset("train", n=50).select_columns(["prompt", "completion"]).to_list()
    )
    mixed = sft_dataset(
        WarmstartConfig(dataset="arith-hard", early_answer_prob=0.5, early_answer_wrong_prob=0.5), 200
    )
    early = [row for row in mixed if row["prompt"].endswith(PROBE_OPEN)]
    assert 60 <= len(early) <= 140
    assert all(
        row["completion"].endswith("</answer>") and "<reasoning>" not in row["completion"] for row in early
    )
    assert all("does" in row["prompt"] for row in mixed)  # arith-hard questions name whom they ask about


def test_warmstart_config_rejects_bad_options():
    import pytest

    with pytest.raises(ValueError, match=r"dataset='gsm8k' is not allowed; choose one of 'arith'"):
        WarmstartConfig(dataset="gsm8k")
    with pytest.raises(ValueError, match=r"early_answer_wrong_prob=2 is outside its range \[0.0, 1.0\]"):
        WarmstartConfig(early_answer_wrong_prob=2)
    for field, value in [("eval_every", 0), ("max_steps", -5), ("per_device_train_batch_size", 0),
                         ("validation_examples", -1), ("num_train_examples", 0), ("target_accuracy", float("nan")),
                         ("learning_rate", float("nan")), ("learning_rate", 0.0)]:  # fmt: skip
        with pytest.raises(ValueError, match=rf"{field}="):  # eval_every 0 divided by zero after a step
            WarmstartConfig(**{field: value})


def test_warmstart_refuses_to_wipe_a_folder_that_holds_more_than_a_checkpoint(
    tmp_path, tiny_model, char_tokenizer
):
    """It replaces its output folder whole: a training run or `.` there was deleted (a review, 2026-12-07)."""
    import pytest

    run = tmp_path / "run"
    (run / "checkpoint-50").mkdir(parents=True)
    (run / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(FileExistsError, match=r"--output_dir .*run: holds more than a warm-start checkpoint"):
        check_replaceable(run)
    with pytest.raises(FileExistsError, match="no config.json"):
        check_replaceable(tmp_path)  # a folder of anything (here: run/)
    check_replaceable(tmp_path / "new")
    previous = tmp_path / "ckpt"  # an earlier warm start's output: replaced, as before
    save_checkpoint(tiny_model, char_tokenizer, previous)
    check_replaceable(previous)


def quick_config(output_dir, **overrides) -> WarmstartConfig:
    """A warm start of one or two steps on a few rows, with ``overrides``."""
    settings = {
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "eval_examples": 2,
        "validation_examples": 2,
        "max_new_tokens": 8,
    }
    return WarmstartConfig(output_dir=str(output_dir), **{**settings, **overrides})


def test_warmstart_on_a_variant_with_early_answers(tmp_path):
    config = quick_config(
        tmp_path / "hard",
        dataset="arith-hard",
        early_answer_prob=0.5,
        early_answer_wrong_prob=0.5,
        max_steps=2,
        hidden_size=16,
        num_layers=1,
    )
    result = warmstart(config)
    assert result["sft_steps"] == 2.0 and result["heldout_n"] == 2.0
    assert (tmp_path / "hard" / "model.safetensors").exists()


def test_warmstart_help_lists_the_new_options(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["warmstart", "--help"])
    printed = capsys.readouterr().out
    assert "--early_answer_prob" in printed and "--dataset" in printed and "5% warm-up" in printed


def test_warmstart_continues_from_a_checkpoint(tmp_path, tiny_model, char_tokenizer):
    start = tmp_path / "start"
    save_checkpoint(tiny_model, char_tokenizer, start)  # hidden size 32, 2 layers
    result = warmstart(
        quick_config(tmp_path / "next", init_from=str(start), dataset="arith-long", max_new_tokens=4)
    )
    assert result["sft_steps"] == 1.0
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "next")
    assert (model.config.hidden_size, model.config.num_hidden_layers) == (
        32,
        2,
    )  # the start's, not the defaults


def test_the_default_output_dir_leaves_the_shipped_checkpoint_alone():
    """Pasted from the docs, `psgrpo warmstart` used to write over psgrpo/tiny/checkpoint, the model every
    `embedded:arith` run loads; only `make warmstart` names that folder now."""
    from pathlib import Path

    from psgrpo.tiny import CHECKPOINT_DIR

    default = Path(WarmstartConfig().output_dir)
    assert default == Path("outputs/warmstart") and default.resolve() != Path(CHECKPOINT_DIR).resolve()
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "psgrpo warmstart --output_dir psgrpo/tiny/checkpoint" in makefile


def test_warmstart_keeps_a_users_folder_named_like_its_old_output(tmp_path, tiny_model, char_tokenizer):
    """It moved the output it replaces to a fixed `<output_dir>.old` and deleted that name first: a user's folder
    called so was lost (a review, 2026-12-07). The old output goes aside into a folder made for it, and only that
    goes."""
    out = tmp_path / "ckpt"
    save_checkpoint(tiny_model, char_tokenizer, out)  # an earlier warm start's output (hidden size 32)
    (tmp_path / "ckpt.old").mkdir()
    (tmp_path / "ckpt.old" / "NOTES.txt").write_text("mine")
    main(["warmstart", "--output_dir", str(out), *SMALLEST])
    assert (tmp_path / "ckpt.old" / "NOTES.txt").read_text() == "mine"
    assert AutoModelForCausalLM.from_pretrained(out).config.hidden_size == 16  # replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "ckpt.old"]  # nothing of its own left


def test_a_failed_swap_puts_the_earlier_checkpoint_back(tmp_path, tiny_model, char_tokenizer, monkeypatch):
    from pathlib import Path

    import pytest

    out = tmp_path / "ckpt"
    save_checkpoint(tiny_model, char_tokenizer, out)
    rename = Path.rename

    def failing(self, target):
        if self.name.startswith(".ckpt.") and not self.name.startswith(".ckpt.old."):
            raise OSError("disk gone")  # the staged checkpoint cannot be swapped in
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError, match="disk gone"):
        save_checkpoint(tiny_model, char_tokenizer, out)
    assert (out / "model.safetensors").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_warmstart_refuses_a_folder_with_a_users_files_and_keeps_them(tmp_path, capsys, monkeypatch):
    """`wproj/` held config.json, main.py and notes.txt: warmstart exited 0 and deleted main.py and notes.txt
    (it only looked for run files, folders or a missing config.json). Now any file save_checkpoint does not
    write itself, hidden ones too, is refused before training, in one line."""
    import pytest

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    wproj = tmp_path / "wproj"
    wproj.mkdir()
    (wproj / "config.json").write_text("{}")
    (wproj / "main.py").write_text("print('mine')\n")
    (wproj / "notes.txt").write_text("notes")
    assert main(["warmstart", "--output_dir", str(wproj), *SMALLEST]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert f"--output_dir {wproj}: holds more than a warm-start checkpoint (main.py, notes.txt)" in line
    assert "give a new or empty --output_dir" in line
    assert sorted(p.name for p in wproj.iterdir()) == ["config.json", "main.py", "notes.txt"]
    assert (wproj / "main.py").read_text() == "print('mine')\n"
    (wproj / "main.py").unlink()
    (wproj / "notes.txt").unlink()
    (wproj / ".env").write_text("KEY=1")  # hidden: save_checkpoint writes none
    with pytest.raises(FileExistsError, match=r"\(\.env\)"):
        check_replaceable(wproj)


def test_check_replaceable_accepts_exactly_what_save_checkpoint_writes(tmp_path, tiny_model, char_tokenizer):
    """Every name save_checkpoint writes (a chat template too) is its own, so a warm start may replace its
    earlier output; a name beside them is not."""
    import copy

    import pytest

    from psgrpo.tiny.warmstart import checkpoint_names, not_written_by_save

    tokenizer = copy.deepcopy(char_tokenizer)  # the session's tokenizer stays as it was
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    out = tmp_path / "ckpt"
    save_checkpoint(tiny_model, tokenizer, out)
    written = {p.name for p in out.iterdir()}
    assert "chat_template.jinja" in written and written <= checkpoint_names()
    assert not_written_by_save(out) == []
    check_replaceable(out)
    for name in ("model-00001-of-00002.safetensors", "model.safetensors.index.json"):
        (out / name).write_text("{}")  # a sharded model's weights
    check_replaceable(out)
    (out / "train.py").write_text("")
    (out / "model.safetensors.bak").write_text("")
    with pytest.raises(FileExistsError, match=r"\(model\.safetensors\.bak, train\.py\)"):
        check_replaceable(out)
