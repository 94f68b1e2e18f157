"""psgrpo warmstart: a short SFT writes a complete, reloadable checkpoint, atomically."""

from __future__ import annotations

import json

from transformers import AutoModelForCausalLM, AutoTokenizer

from psgrpo.commands.cli import main
from psgrpo.tiny.warmstart import WarmstartConfig, save_checkpoint, warmstart


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


def test_cli_warmstart_prints_json(tmp_path, capsys):
    main(
        [
            "warmstart",
            "--output_dir",
            str(tmp_path / "c"),
            "--max_steps",
            "1",
            "--per_device_train_batch_size",
            "2",
            "--hidden_size",
            "16",
            "--num_layers",
            "1",
            "--eval_examples",
            "2",
        ]
    )
    printed = capsys.readouterr().out
    assert json.loads(printed[printed.rindex("{\n") :])["heldout_n"] == 2.0
