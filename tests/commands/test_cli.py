"""The CLI: recipes parse into configs, and the GSM8K recipe's code path runs end to end on tiny models."""

from __future__ import annotations

import json
import logging
import re
import sys

import pytest
from trl import ModelConfig, TrlParser

from psgrpo.commands.cli import SUBCOMMANDS, main
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig
from psgrpo.data.validation import DatasetValidationError
from psgrpo.loading import DEFAULT_RECIPE, RECIPES_DIR, load_model_and_tokenizer
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.qwen_tokenizer import QWEN2_5_VOCAB_SIZE

GSM8K_ROWS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. "
        "How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nShe earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
    },
]


def _parse(argv):
    return TrlParser((TaskConfig, ProcessGRPOConfig, ModelConfig)).parse_args_and_config(argv)


def test_demo_recipe_parses_with_cli_override():
    task, args, model_args = _parse(
        ["--config", str(DEFAULT_RECIPE), "--learning_rate", "1e-5", "--method", "grpo"]
    )
    assert task.dataset == "arith"
    assert args.learning_rate == 1e-5  # the flag overrides the YAML
    assert (
        args.num_generations == 8
    )  # no use_cpu in the recipe: psgrpo.config.precision sets it where bf16 needs it
    assert model_args.model_name_or_path is None  # → embedded checkpoint


def test_gsm8k_recipe_builds_seed_hyperparameters():
    task, args, model_args = _parse(
        ["--config", str(RECIPES_DIR / "gsm8k_qwen2.5_0.5b.yaml"), "--use_cpu", "true"]
    )
    assert model_args.model_name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert (task.dataset, task.chat, task.prompt_template) == ("gsm8k", True, "tags")
    assert args.per_device_train_batch_size // args.num_generations == 8 and args.num_generations == 4
    assert (args.learning_rate, args.epsilon, args.beta, args.max_completion_length) == (5e-6, 0.2, 0.05, 512)
    assert (args.top_k, args.top_p, args.temperature) == (40, 0.9, 0.7)
    assert args.bf16 and args.gradient_checkpointing


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommand_prints_its_help(command, capsys):
    # argparse %-formats help strings: a stray '%' in one (e.g. "95% intervals") crashed `--help`
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"psgrpo {command}" in capsys.readouterr().out


def test_unknown_flag_is_an_error():
    with pytest.raises(ValueError, match="no_such_flag"):
        _parse(["--config", str(DEFAULT_RECIPE), "--no_such_flag", "1"])


def test_missing_tokenizer_is_a_clear_error(tmp_path, char_tokenizer):
    build_tiny_model(char_tokenizer, hidden_size=32, num_layers=1, intermediate_size=64).save_pretrained(
        tmp_path
    )
    with pytest.raises(ValueError, match="has no tokenizer"):
        load_model_and_tokenizer(str(tmp_path))


@pytest.mark.slow
def test_gsm8k_recipe_runs_end_to_end_on_tiny_qwen2(tmp_path, qwen_tokenizer):
    """Same code path as the real recipe (chat template, bf16, gradient checkpointing, β>0), tiny model.

    The tokenizer is Qwen2.5-Instruct's own (built offline from Qwen's ranks) and the model has its
    151,936 embedding rows, only 32 wide.
    """
    data_dir = tmp_path / "gsm8k"
    data_dir.mkdir()
    for split in ("train", "test"):
        (data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GSM8K_ROWS * 4))
    model_dir = tmp_path / "tiny-qwen2"
    model = build_tiny_model(
        qwen_tokenizer, vocab_size=QWEN2_5_VOCAB_SIZE, hidden_size=32, num_layers=2, intermediate_size=64
    )
    model.save_pretrained(model_dir)
    qwen_tokenizer.save_pretrained(model_dir)
    out = tmp_path / "out"
    main(
        [
            "train",
            "--config",
            str(RECIPES_DIR / "gsm8k_qwen2.5_0.5b.yaml"),
            "--model_name_or_path",
            str(model_dir),
            "--dataset",
            str(data_dir),
            "--use_cpu",
            "true",
            "--output_dir",
            str(out),
            "--max_steps",
            "2",
            "--per_device_train_batch_size",
            "4",  # one prompt's group: the embedding rows make each sequence cost, not the model
            "--max_completion_length",
            "12",
            "--max_eval_examples",
            "4",
            "--report_to",
            "none",
            "--save_strategy",
            "no",
            "--logging_steps",
            "1",
        ]
    )
    report = json.loads((out / "report.json").read_text())
    assert set(report["before"]) >= {"accuracy", "format_rate", "mean_tokens"}
    assert 0.0 <= report["after"]["accuracy"] <= 1.0
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    assert json.loads((out / "config.json").read_text())["vocab_size"] == QWEN2_5_VOCAB_SIZE
    saved = load_model_and_tokenizer(str(out))[1]
    assert saved.get_vocab() == qwen_tokenizer.get_vocab() and saved.eos_token == "<|im_end|>"
    logs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("kl" in r for r in logs)  # β = 0.05 from the recipe: the reference model ran


@pytest.mark.slow
def test_default_train_runs_on_the_embedded_checkpoint(tmp_path, capsys):
    """`psgrpo train` with no config: the embedded demo, shortened."""
    out = tmp_path / "demo"
    main(
        [
            "train",
            "--output_dir",
            str(out),
            "--max_steps",
            "2",
            "--max_eval_examples",
            "8",
            "--per_device_train_batch_size",
            "16",
            "--report_to",
            "none",
            "--save_steps",
            "1",
            "--chat_template_kwargs",
            '{"enable_thinking": false}',
        ]
    )
    report = json.loads((out / "report.json").read_text())
    assert report["method"] == "ps" and report["dataset"] == "arith"
    assert report["before"]["format_rate"] > 0.9  # the warm start already follows the format
    assert "held-out accuracy" in capsys.readouterr().out
    assert (out / "checkpoint-2" / "model.safetensors").exists()  # checkpoints are written
    for directory in (out, out / "checkpoint-2"):  # psgrpo eval reads what each was trained on
        record = json.loads((directory / "psgrpo_task.json").read_text())
        assert record["dataset"] == "arith" and record["chat_template_kwargs"] == {"enable_thinking": False}
    # written before the commit: part of what makes the checkpoint complete
    assert (
        "psgrpo_task.json"
        in json.loads((out / "checkpoint-2" / "psgrpo_checkpoint.json").read_text())["files"]
    )


def test_embedded_checkpoint_is_committed_and_loads():
    model, tokenizer = load_model_and_tokenizer(None)
    assert model.config.model_type == "qwen2"
    assert tokenizer.convert_ids_to_tokens(tokenizer("<answer>")["input_ids"]) == ["<answer>"]


# --------------------------------------------------------------------------- psgrpo eval


@pytest.mark.slow
def test_eval_writes_summary_markdown_and_samples(tmp_path, capsys):
    """`psgrpo eval` end to end on the embedded checkpoint: 3 arith prompts x 2 samples."""
    out = tmp_path / "eval"
    argv = ["eval", "--max_eval_examples", "3", "--eval_max_new_tokens", "40", "--num_samples", "2"]
    main([*argv, "--do_sample", "true", "--pass_k", "1", "2", "--output_dir", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    metrics, config = summary["metrics"], summary["config"]
    assert {
        "accuracy",
        "pass@1",
        "pass@2",
        "format_rate",
        "answer_rate",
        "mean_tokens",
        "median_tokens",
    } <= set(metrics)
    assert {"step_complete_rate", "n", "num_samples", "n_completions"} <= set(metrics)
    assert (config["dataset"], config["eval_split"], config["num_samples"], config["pass_k"]) == (
        "arith",
        "test",
        2,
        [1, 2],
    )
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [(s["prompt_index"], s["sample_index"]) for s in samples] == [
        (p, s) for p in range(3) for s in range(2)
    ]
    assert metrics["n"] == 3 and metrics["n_completions"] == len(samples) == 6
    first = [s["correct"] for s in samples if s["sample_index"] == 0]
    assert metrics["accuracy"] == sum(first) / 3
    assert metrics["pass@1"] == pytest.approx(sum(s["correct"] for s in samples) / 6)
    for error_type in ("correct", "format", "calculation", "logic"):
        share = sum(s["error_type"] == error_type for s in samples) / 6
        assert metrics[f"error_type/{error_type}"] == pytest.approx(share)
    assert metrics["step_complete_rate"] == pytest.approx(sum(s["step_complete"] for s in samples) / 6)
    assert metrics["mean_tokens"] == pytest.approx(sum(s["tokens"] for s in samples) / 6)
    assert all(s["prompt"].startswith("Question: ") and s["tokens"] <= 40 for s in samples)
    markdown = (out / "summary.md").read_text()
    assert "| pass@2 (unbiased estimate) |" in markdown and "### Error types (6 completions)" in markdown
    assert markdown in capsys.readouterr().out  # the same report is printed


def test_eval_checkpoint_without_tokenizer(tmp_path, char_tokenizer):
    build_tiny_model(char_tokenizer, hidden_size=32, num_layers=1, intermediate_size=64).save_pretrained(
        tmp_path
    )
    with pytest.raises(ValueError, match=f"checkpoint {tmp_path} has no tokenizer"):
        main(["eval", "--model_name_or_path", str(tmp_path), "--max_eval_examples", "2"])


def test_eval_dataset_without_answer_column(tmp_path):
    rows = [{"question": "How many?", "solution": "2 + 2 = 4\n#### 4"}]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DatasetValidationError) as err:
        main(["eval", "--dataset", str(path)])
    message = str(err.value)
    assert str(path) in message and "'answer'" in message  # which dataset, what was expected
    assert "['question', 'solution']" in message  # the columns it has


def test_eval_empty_split(tmp_path):
    (tmp_path / "test.jsonl").write_text("")
    with pytest.raises(DatasetValidationError, match=r"test\.jsonl\) is empty"):
        main(["eval", "--dataset", str(tmp_path), "--eval_split", "test"])
    with pytest.raises(ValueError, match=r"max_eval_examples=0 is outside its range \[1, inf\]"):
        main(["eval", "--max_eval_examples", "0"])


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (
            ["--num_samples", "2", "--do_sample", "true", "--pass_k", "1", "4"],
            "needs at least 4 samples per prompt",
        ),
        (["--num_samples", "4"], "needs sampled decoding"),
        (["--vllm_kwargs", "{oops"], "vllm_kwargs must be a JSON object"),
        (["--segmenter_kwargs", "[1]"], "segmenter_kwargs must be a JSON object"),
    ],
)
def test_eval_bad_options(flags, match):
    with pytest.raises(ValueError, match=match):
        main(["eval", *flags])


@pytest.mark.parametrize("flags", [["--backend", "tpu"], ["--segmenter", "sentences"]])
def test_eval_flags_outside_their_choices_are_one_line(flags, capsys, monkeypatch):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    assert main(["eval", *flags]) == 2
    err = capsys.readouterr().err
    assert f"psgrpo: error: {flags[0]}: {flags[1]!r} is not allowed; choose one of" in err


def test_eval_vllm_backend_without_vllm(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=re.escape("pip install -e '.[vllm]'")):
        main(["eval", "--backend", "vllm", "--max_eval_examples", "2"])


# --------------------------------------------------------------------------------------------
# user errors read as errors: one line, exit status 2, no traceback (unless --traceback)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--dataset", "/nonexistent/gsm8k"], "/nonexistent/gsm8k"),
        (["train", "--vps_alpha", "nan"], "vps_alpha=nan is not a finite number"),
        (
            ["train", "--model_name_or_path", "/nonexistent/model"],
            "--model_name_or_path /nonexistent/model: no such checkpoint directory",
        ),
        (
            ["eval", "--model_name_or_path", "./no/such/checkpoint"],
            "--model_name_or_path ./no/such/checkpoint: no such checkpoint directory",
        ),
        (
            ["train", "--config", "/nonexistent/recipe.yaml"],
            "config file /nonexistent/recipe.yaml does not exist",
        ),
    ],
)
def test_user_errors_are_one_line_without_traceback(argv, message, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.chdir(
        tmp_path
    )  # the default --output_dir outputs/demo: a `make demo` run in the checkout is refused first
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    error_lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert len(error_lines) == 1 and message in error_lines[0], err


def test_bad_jsonl_is_one_line_naming_the_row(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    (tmp_path / "test.jsonl").write_text('{"question": "q", "answer": "#### 3"}\n{"question": "q2"\n')
    assert main(["eval", "--dataset", str(tmp_path), "--eval_split", "test"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "psgrpo: error:" in err and "line 2" in err


def test_traceback_flag_shows_the_exception(monkeypatch):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    with pytest.raises(ValueError, match="vps_alpha=nan"):
        main(["train", "--traceback", "--vps_alpha", "nan"])


def test_debug_is_left_to_training_arguments(monkeypatch):
    # psgrpo's own switch is --traceback: TrainingArguments' --debug reaches the parser untouched
    import psgrpo.commands.train as train_module

    seen = []
    monkeypatch.setattr(train_module, "train", seen.append)
    assert main(["train", "--debug", "underflow_overflow", "--max_steps", "2"]) == 0
    assert seen == [["--debug", "underflow_overflow", "--max_steps", "2"]]
    _, args, _ = _parse(["--config", str(DEFAULT_RECIPE), "--debug", "underflow_overflow"])
    assert [option.value for option in args.debug] == ["underflow_overflow"]


def test_eval_help_lists_only_what_eval_reads(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    help_text = capsys.readouterr().out
    for training_only in (
        "--heldout_eval_steps",
        "--eval_before_after",
        "--max_train_examples",
        "--train_split",
    ):
        assert training_only not in help_text
    assert "--eval_batch_size" in help_text and "--max_eval_examples" in help_text


@pytest.mark.parametrize(
    ("command", "default"), [(["eval"], 64), (["train"], 100)]
)  # train: the demo recipe's
def test_eval_batch_size_help_shows_the_real_default(command, default, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    (entry,) = [line for line in capsys.readouterr().out.splitlines() if "--eval_batch_size" in line]
    assert entry.endswith(f"(default: {default})") and entry.count("default") == 1


def test_warnings_a_user_cannot_act_on_are_silenced(tmp_path):
    import warnings

    from psgrpo.commands.cli import silence_unactionable_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_unactionable_warnings()
        ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True)  # TRL's gradient_checkpointing default
        for name in ("is_gradient_checkpointing", "gradient_checkpointing_enable"):  # TRL's rollout toggles
            warnings.warn(f"`{name}` is deprecated and will be removed in v6.", FutureWarning, stacklevel=2)
        warnings.warn("`max_length` is deprecated", FutureWarning, stacklevel=2)  # anything else is shown
    assert [str(w.message) for w in caught] == ["`max_length` is deprecated"]


def test_near_miss_flag_gets_a_suggestion(monkeypatch, capsys):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    assert main(["train", "--dataset_name", "gsm8k"]) == 2
    err = capsys.readouterr().err
    assert "unknown option(s) ['--dataset_name', 'gsm8k']" in err and "did you mean --dataset?" in err


def test_a_non_finite_training_value_is_a_one_line_error(monkeypatch, capsys):
    import psgrpo.commands.train as train_module
    from psgrpo.guards import NonFiniteError

    def diverges(argv):
        raise NonFiniteError("step 3: the loss holds a NaN or infinite value in rows 0")

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.setattr(train_module, "train", diverges)
    assert main(["train"]) == 2
    err = capsys.readouterr().err
    assert "psgrpo: error: step 3: the loss holds a NaN" in err and "Traceback" not in err


def _help(*argv: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_train_help_is_short_and_help_all_has_the_rest(capsys):
    short = _help("train", "--help", capsys=capsys)
    assert len(short.splitlines()) <= 150
    assert all(len(line) <= 140 for line in short.splitlines())
    for own in ("--method", "--step_scorer", "--vps_alpha", "--tree_branching", "--dataset", "--diagnostics"):
        assert f"  {own} " in short
    for common in ("--learning_rate", "--num_generations", "--temperature", "--report_to", "--use_peft"):
        assert f"  {common} " in short
    assert "--ddp_backend" not in short and "--help-all" in short
    everything = _help("train", "--help-all", capsys=capsys)
    assert "--ddp_backend" in everything and len(everything.splitlines()) > 1000


def test_help_states_one_default_per_option_the_one_the_run_uses(capsys):
    lines = _help("train", "--help", capsys=capsys).splitlines()
    options = [line for line in lines if line.startswith("  --")]
    assert options and all(line.count("(default: ") == 1 for line in options)
    assert not [
        line
        for line in options
        if re.search(r"\bdefault\b(?!:)", line, flags=re.IGNORECASE) and "--dtype" not in line
    ]
    (method,) = [line for line in options if line.startswith("  --method ")]
    assert method.endswith("(default: ps)")  # the demo recipe's, which a run uses
    (scorer,) = [line for line in options if line.startswith("  --step_scorer ")]
    assert scorer.endswith("(default: reference)")


@pytest.mark.parametrize(("command", "own"), [("inspect", "--num_prompts"), ("eval", "--num_samples")])
def test_each_subcommand_help_leads_with_its_own_options(command, own, capsys):
    text = _help(command, "--help", capsys=capsys)
    assert len(text.splitlines()) <= 170
    first = next(line for line in text.splitlines() if line.startswith("  --") and "--config" not in line)
    assert first.startswith(f"  {own} ") or own in text.split("Task and data:")[0]


def test_top_level_help_names_every_method(capsys):
    from psgrpo.config.options import METHODS

    text = _help("--help", capsys=capsys)
    assert all(method in text for method in METHODS) and "--method grpo / ps / vps / tree" in text


def test_sharded_parameters_skip_the_before_after_evaluation_with_one_warning(tmp_path, monkeypatch, caplog):
    """Under ZeRO-3 / FSDP (here: accelerate launch's FSDP flag in one process) the main process says once
    how to evaluate the saved model instead, and the run trains and reports without before/after."""
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    out = tmp_path / "sharded"
    flags = ["--max_steps", "1", "--per_device_train_batch_size", "8", "--num_generations", "8"]
    with caplog.at_level(logging.WARNING, logger="psgrpo"):
        main(
            [
                "train",
                "--output_dir",
                str(out),
                *flags,
                "--report_to",
                "none",
                "--max_completion_length",
                "32",
            ]
        )
    said = [r.getMessage() for r in caplog.records if "before/after evaluation is skipped" in r.getMessage()]
    assert said == [f"ZeRO-3/FSDP shard the model, so the before/after evaluation is skipped; evaluate the "
                    f"saved checkpoint with `psgrpo eval --model_name_or_path {out}`"]  # fmt: skip
    report = json.loads((out / "report.json").read_text())
    assert "before" not in report and "after" not in report and (out / "model.safetensors").exists()


@pytest.mark.parametrize("rank", [0, 1])
def test_only_the_main_process_says_the_evaluation_is_skipped(tmp_path, monkeypatch, caplog, rank):
    """Every rank skips the evaluation; only rank 0 logs it (the run is stopped right after that decision)."""
    import psgrpo.data.tasks

    class Stop(Exception):
        pass

    skipped = []

    def stop_at_the_data(task, *args, **kwargs):
        skipped.append(not task.eval_before_after)
        raise Stop

    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    monkeypatch.setattr(ProcessGRPOConfig, "process_index", property(lambda self: rank))
    monkeypatch.setattr(psgrpo.data.tasks, "load_task_split", stop_at_the_data)
    with caplog.at_level(logging.WARNING, logger="psgrpo"), pytest.raises(Stop):
        main(["train", "--output_dir", str(tmp_path / "run"), "--report_to", "none"])
    said = [r for r in caplog.records if "before/after evaluation is skipped" in r.getMessage()]
    assert skipped == [True] and len(said) == (1 if rank == 0 else 0)
