"""Bad input, tried as a user would: one ``psgrpo: error:`` line naming the option typed, before any model
loads, and no output directory left behind (issue 27's table, one test per row)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hub_fakes import fake_hub

from psgrpo.checkpoints.atomic import write_marker
from psgrpo.commands.cli import INTERRUPTED_STATUS, main

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


@pytest.fixture()
def no_model_loads(monkeypatch):
    """Fail the test if a command gets as far as loading a model."""
    import psgrpo.loading

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad input was reported")

    monkeypatch.setattr(psgrpo.loading, "load_model_and_tokenizer", refuse)
    monkeypatch.setenv("PSGRPO_DEBUG", "0")


def error_line(capsys) -> str:
    """The one ``psgrpo: error:`` line of stderr (and no traceback)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert len(lines) == 1, err
    return lines[0]


def run_train(out: Path, *flags: str) -> int:
    return main(["train", "--output_dir", str(out), "--report_to", "none", *flags])


def test_max_steps_zero(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    assert run_train(out, "--max_steps", "0") == 2
    line = error_line(capsys)
    assert "max_steps=0 trains no step" in line and "-1" in line
    assert not out.exists()


@pytest.mark.parametrize("native_bf16", ["1", "0"])
def test_a_refusal_is_one_line_of_stderr_from_the_shell(tmp_path, native_bf16):
    """What a user sees: on a CPU-only machine a precision note (bf16 on the CPU, or fp32 on a CPU without
    native bf16) and a traceback hint used to add lines; both kinds of CPU, whichever this one is."""
    out = tmp_path / "run"
    env = {**os.environ, "PSGRPO_DEBUG": "0", "OMP_NUM_THREADS": "1", "PSGRPO_NATIVE_BF16": native_bf16}
    done = subprocess.run(
        [sys.executable, "-m", "psgrpo", "train", "--top_p", "1.5", "--output_dir", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("psgrpo: error: top_p=1.5 is outside its range")
    assert done.stderr.strip().endswith("(`psgrpo train --help` lists the options)")
    assert not out.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ("--step_scorer", "arithmetic"),  # drops the demo recipe's step_scorer_kwargs: an INFO note
        ("--method", "grpo", "--ps_lambda", "2"),  # another method's option: a warning
    ],
)
def test_a_refusal_after_parsing_is_still_one_line(tmp_path, flags):
    """The note and the warning that a valid command line earns wait until psgrpo train's own checks passed:
    nothing to resume in an empty --output_dir (the last check) is refused in one line of stderr, alone."""
    empty = tmp_path / "run"
    empty.mkdir()
    env = {**os.environ, "PSGRPO_DEBUG": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "psgrpo",
            "train",
            *flags,
            "--output_dir",
            str(empty),
            "--resume_from_checkpoint",
            "true",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("psgrpo: error:"), (
        done.stderr
    )


def test_negative_learning_rate_before_the_model_loads(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    assert run_train(out, "--learning_rate", "-1") == 2
    assert "learning_rate=-1.0 is outside its range [0.0, inf]" in error_line(capsys)
    assert not out.exists()


def test_malformed_yaml_names_the_file_and_line(tmp_path, capsys, no_model_loads):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("method: ps\nlearning_rate: [1.0e-5\nmax_steps: 3\n")
    out = tmp_path / "run"
    assert run_train(out, "--config", str(recipe)) == 2
    line = error_line(capsys)
    assert f"{recipe}: line 3" in line and "not valid YAML" in line
    assert not out.exists()


def test_gsm8k_from_an_unreachable_hub(tmp_path, capsys, monkeypatch, no_model_loads):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.chdir(tmp_path)
    probed = fake_hub(monkeypatch)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    out = tmp_path / "run"
    assert run_train(out, "--dataset", "gsm8k") == 2
    line = error_line(capsys)
    assert "--dataset gsm8k:" in line and "ConnectionError" in line
    assert (
        "HF_HUB_OFFLINE is set" in line
    )  # the one probe failed, so the cache alone was read, without retries
    assert len(probed) == 1
    assert not out.exists()


def test_hub_model_with_no_network_fails_at_once(tmp_path, capsys, monkeypatch, no_model_loads):
    import huggingface_hub

    probed = fake_hub(monkeypatch)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    out = tmp_path / "run"
    assert run_train(out, "--model_name_or_path", "psgrpo-tests/no-such-model") == 2
    line = error_line(capsys)
    assert line.startswith(
        "psgrpo: error: --model_name_or_path psgrpo-tests/no-such-model: not a local directory"
    )
    assert "cannot be reached (ConnectError" in line and len(probed) == 1
    assert not out.exists()


@pytest.mark.parametrize("path", ["outputs/demo", "./demo", "checkpoints/run-1/", "ABSOLUTE"])
def test_eval_of_a_checkpoint_never_written_is_not_a_hub_lookup(
    path, tmp_path, capsys, monkeypatch, no_model_loads
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # online: a Hub lookup would retry for 50 s
    path = str(tmp_path / "outputs" / "demo") if path == "ABSOLUTE" else path
    start = time.perf_counter()
    assert main(["eval", "--model_name_or_path", path, "--output_dir", "outputs/eval"]) == 2
    line = error_line(capsys)
    assert f"--model_name_or_path {path}: no such checkpoint directory" in line
    assert time.perf_counter() - start < 20
    assert not (tmp_path / "outputs").exists()


def test_hub_id_with_hf_hub_offline_fails_at_once(tmp_path, capsys, monkeypatch, no_model_loads):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    start = time.perf_counter()
    assert run_train(out, "--model_name_or_path", "psgrpo-tests/no-such-model") == 2
    line = error_line(capsys)
    assert "--model_name_or_path psgrpo-tests/no-such-model" in line and "HF_HUB_OFFLINE is set" in line
    assert time.perf_counter() - start < 20  # not 50 s of retries
    assert not out.exists()


def test_prm_without_a_model_shows_no_kwargs_the_user_never_set(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    assert (
        run_train(out, "--method", "ps", "--step_scorer", "prm") == 2
    )  # over the demo recipe's reference scorer
    line = error_line(capsys)
    assert "step_scorer='prm' needs the process reward model" in line and "--step_scorer_kwargs" in line
    assert "reference_weight" not in line and "correct_weight" not in line  # the recipe's, for its own scorer
    assert not out.exists()


def test_prm_path_that_does_not_exist(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    prm = tmp_path / "prm"
    assert (
        run_train(
            out,
            "--method",
            "ps",
            "--step_scorer",
            "prm",
            "--step_scorer_kwargs",
            json.dumps({"model": str(prm)}),
        )
        == 2
    )
    line = error_line(capsys)
    assert f"step_scorer_kwargs['model'] {prm}: no such checkpoint directory" in line
    assert "a Hub id such as Qwen/Qwen2.5-Math-PRM-7B" in line  # a PRM, not a policy, as the example
    assert not out.exists()


SCORER_VALUE_ROWS = [
    ("reference", {"blame_stop": "later"}, "blame_stop must be one of ('next_step', 'last_equation', 'conclusion')"),
    ("reference", {"correct_weight": 0.0, "reference_weight": 0.0}, "must be >= 0, with one above 0"),
    ("arithmetic", {"necessary_weight": -0.4}, "must be >= 0, with one above 0"),
    ("prm", {"model": "PRM", "style": "classifier"}, "style must be one of ['token_classification', 'causal_lm']"),
    ("prm", {"model": "PRM", "format": "qwen"}, "format must be one of ['qwen2.5-math-prm', 'math-shepherd', 'trl']"),
    ("prm", {"model": "PRM", "encoding": "chars"}, "encoding must be 'tokens' or 'text'"),
    ("prm", {"model": "PRM", "batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
    ("prm", {"model": "PRM", "template": "{steps} for {question}"}, "template must contain '{question}' and end"),
]  # fmt: skip
"""``(step_scorer, step_scorer_kwargs, what the line says)``: values the scorer itself refuses, which used to be
reported only once the policy had loaded (the scorer is built with the trainer)."""


def test_step_scorer_values_that_fit_pass_before_anything_loads(tmp_path):
    """A PRM's own settings with its loading keywords (``trust_remote_code``, ``dtype``) and the recipe's weights."""
    from psgrpo.config.checks import check_step_scorer

    (tmp_path / "prm").mkdir()
    (tmp_path / "prm" / "config.json").write_text("{}")
    prm = {"model": str(tmp_path / "prm"), "format": "qwen2.5-math-prm", "trust_remote_code": True}
    check_step_scorer("prm", {**prm, "dtype": "bfloat16", "batch_size": 4, "max_length": 4096})
    check_step_scorer(
        "reference", {"correct_weight": 0.0, "reference_weight": 1.0, "blame_stop": "conclusion"}
    )


@pytest.mark.parametrize(("scorer", "kwargs", "expected"), SCORER_VALUE_ROWS)
def test_a_step_scorer_value_it_refuses(scorer, kwargs, expected, tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    if kwargs.get("model") == "PRM":
        (tmp_path / "prm").mkdir()  # a directory that exists: the value, not the path, is refused
        kwargs = {**kwargs, "model": str(tmp_path / "prm")}
    flags = ["--method", "ps", "--step_scorer", scorer, "--step_scorer_kwargs", json.dumps(kwargs)]
    assert run_train(out, *flags) == 2
    line = error_line(capsys)
    assert f"do not fit step_scorer '{scorer}'" in line and expected in line, line
    assert not out.exists()
    assert main(["score-steps", "--data", str(tmp_path / "steps.jsonl"), *flags[2:]]) == 2
    assert expected in error_line(capsys)


PRM_KIND_ROWS = [
    ({"architectures": ["Qwen2ForCausalLM"]}, {}, "is a Qwen2ForCausalLM checkpoint, which has no token-classification head"),
    ({"architectures": ["Qwen2ForTokenClassification"]}, {"format": "math-shepherd"}, "has no language-model head"),
    ({"auto_map": {"AutoModel": "prm.PRM"}}, {"format": "qwen2.5-math-prm"}, 'pass "trust_remote_code": true'),
]  # fmt: skip
"""``(the PRM's config.json, more step_scorer_kwargs, what the line says)``: checkpoints whose config shows that
they would load with a random head (or only as remote code), refused from config.json before the policy loads."""


@pytest.mark.parametrize(("config", "kwargs", "expected"), PRM_KIND_ROWS)
def test_a_prm_checkpoint_of_the_wrong_kind(config, kwargs, expected, tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    (tmp_path / "prm").mkdir()
    (tmp_path / "prm" / "config.json").write_text(json.dumps({"model_type": "qwen2", **config}))
    kwargs = json.dumps({"model": str(tmp_path / "prm"), **kwargs})
    flags = ["--method", "ps", "--step_scorer", "prm", "--step_scorer_kwargs", kwargs]
    assert run_train(out, *flags) == 2
    line = error_line(capsys)
    assert f"step_scorer_kwargs['model']: PRM {tmp_path / 'prm'}" in line and expected in line, line
    assert not out.exists()
    assert main(["score-steps", "--data", str(tmp_path / "steps.jsonl"), *flags[2:]]) == 2
    assert expected in error_line(capsys)


@pytest.mark.parametrize("kind", ["file", "below_a_file", "unwritable"])
def test_output_dir_that_cannot_be_written(kind, tmp_path, capsys, no_model_loads):
    afile = tmp_path / "notes.txt"
    afile.write_text("Natalia sold 48 clips in April.\n")
    out = {"file": afile, "below_a_file": afile / "run", "unwritable": Path("/proc/psgrpo-test/run")}[kind]
    assert run_train(out) == 2
    line = error_line(capsys)
    assert f"--output_dir {out}:" in line
    assert {"file": "is a file", "below_a_file": "is a file", "unwritable": "not writable"}[kind] in line
    assert afile.read_text() == "Natalia sold 48 clips in April.\n" and not Path("/proc/psgrpo-test").exists()


@pytest.mark.parametrize(
    ("command", "flag", "expected"),
    [
        (["inspect", "--num_prompts", "1"], "--output_dir", "is a file"),
        (["inspect", "--num_prompts", "1"], "--output_file", "is a directory"),
        (["inspect", "--num_prompts", "1"], "--output_file", "its folder"),
        (
            ["eval", "--max_eval_examples", "1"],
            "--output_file",
            "is a directory",
        ),  # was refused after evaluating
        (["eval", "--max_eval_examples", "1"], "--output_file", "its folder"),
        (["diagnose", "--problems", "2"], "--output", "is a directory"),
        (["diagnose", "--problems", "2"], "--output", "its folder"),
        (["warmstart", "--max_steps", "1"], "--output_dir", "is a file"),
        (["score-steps", "--data", "rows.jsonl"], "--output_dir", "is a file"),
    ],
)
def test_every_command_checks_where_it_writes_before_loading(
    command, flag, expected, tmp_path, capsys, monkeypatch, no_model_loads
):
    """inspect, diagnose, warmstart and score-steps refuse an unwritable output at once, as train and eval do."""
    monkeypatch.chdir(tmp_path)
    afile = tmp_path / "notes.txt"
    afile.write_text("Natalia sold 48 clips in April.\n")
    (tmp_path / "rows.jsonl").write_text("")
    target = {"is a file": afile, "is a directory": tmp_path}.get(expected, afile / "out.html")
    assert main([*command, flag, str(target)]) == 2
    line = error_line(capsys)
    assert f"{target}" in line and expected in line, line
    assert afile.read_text() == "Natalia sold 48 clips in April.\n"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_output_dir_in_a_read_only_directory(tmp_path, capsys, no_model_loads):
    parent = tmp_path / "locked"
    parent.mkdir(mode=0o500)
    try:
        assert run_train(parent / "run") == 2
        assert f"--output_dir {parent / 'run'}: cannot be created: {parent} is not writable" in error_line(
            capsys
        )
    finally:
        parent.chmod(0o700)
    assert not (parent / "run").exists()


def test_num_generations_names_the_flags_typed(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    assert run_train(out, "--num_generations", "3", "--per_device_train_batch_size", "4") == 2
    line = error_line(capsys)
    assert "num_generations=3" in line and "per_device_train_batch_size=4" in line
    assert "generation_batch_size" not in line.replace("per_device_train_batch_size", "")
    assert not out.exists()


def fake_checkpoint(run_dir: Path, step: int) -> Path:
    """A complete checkpoint-``step`` as far as resuming is concerned (trainer state and marker)."""
    checkpoint = run_dir / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    write_marker(checkpoint, step)
    return checkpoint


def test_resume_when_max_steps_is_already_reached(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    checkpoint = fake_checkpoint(out, 2)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    assert run_train(out, "--max_steps", "2", "--resume_from_checkpoint", "true") == 2
    line = error_line(capsys)
    assert f"{checkpoint} is at step 2 and --max_steps is 2" in line and "nothing left to train" in line
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # nothing trained, nothing written


def test_one_jsonl_as_train_and_eval_warns(tmp_path, capsys, caplog, monkeypatch):
    import psgrpo.loading

    data = tmp_path / "gsm8k.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in GSM8K_ROWS))

    def stop(*args, **kwargs):
        raise ValueError("stopped where the model would load")

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.setattr(psgrpo.loading, "load_policy", stop)
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="psgrpo"):
        assert run_train(out, "--dataset", str(data)) == 2
    assert "stopped where the model would load" in error_line(capsys)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("2 of the 2 held-out rows" in w and "training data" in w for w in warnings), warnings
    assert not out.exists()  # the run stopped before writing anything


def wait_for(predicate, timeout: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if process.poll() is not None:
            raise AssertionError(f"the run ended first: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"timed out: {process.communicate()}")
        time.sleep(0.2)


def deliverable_sigint() -> None:
    """In the child before exec: SIGINT neither ignored nor blocked, whatever the parent had."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.slow
def test_ctrl_c_during_training_names_the_checkpoint_and_how_to_resume(tmp_path):
    out = tmp_path / "run"
    flags = [
        "--method", "grpo", "--per_device_train_batch_size", "8", "--num_generations", "4",
        "--max_completion_length", "16", "--max_train_examples", "64", "--eval_before_after", "false",
        "--max_steps", "1000", "--save_steps", "1", "--logging_steps", "1", "--disable_tqdm", "true",
        "--output_dir", str(out), "--report_to", "none",
    ]  # fmt: skip
    env = {**os.environ, "PSGRPO_DEBUG": "0", "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "psgrpo", "train", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # Ctrl-C as a terminal delivers it: a child inherits SIGINT ignored or blocked from its parent (as in
        # the full suite's pytest process, where this test timed out), and Python then never raises KeyboardInterrupt
        preexec_fn=deliverable_sigint,
    )
    wait_for(lambda: (out / "checkpoint-2").is_dir(), 300, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)  # minutes only on a machine loaded far past its cores
    assert process.returncode == INTERRUPTED_STATUS, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("psgrpo: interrupted")]
    assert len(lines) == 1, err
    newest = max(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    assert f"the newest complete checkpoint is {out / f'checkpoint-{newest}'}" in lines[0]
    assert "resume with: psgrpo train --method grpo" in lines[0]
    assert lines[0].endswith("--resume_from_checkpoint true")


def test_ctrl_c_outside_training_is_one_line_too(monkeypatch, capsys):
    import psgrpo.commands.evaluate as evaluate_module

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.setattr(evaluate_module, "run_eval", interrupted)
    assert main(["eval", "--dataset", "arith"]) == INTERRUPTED_STATUS
    err = capsys.readouterr().err
    assert err.strip() == "psgrpo: interrupted" and "Traceback" not in err


PRE_LOAD_ROWS = [
    (["--report_to", "wandb"], "--report_to wandb: the wandb package is not installed; `pip install wandb`"),
    (["--temperature", "0"], "--temperature 0: GRPO learns from the differences between a group's sampled"),
    (["--max_completion_length", "0"], "--max_completion_length 0: a completion needs at least 1 token"),
    (["--chat", "true"], "--chat true: the tokenizer of the embedded checkpoint has no chat template"),
    (["--use_vllm", "true"], "--use_vllm true: vLLM is not installed; `pip install -e '.[vllm]'` in psgrpo's folder"),
    (["--method", "foo"], "--method: 'foo' is not allowed; choose one of grpo, ps, vps, tree"),
    (["--method", "pss"], "did you mean ps?"),
    (["--step_scorer", "nonsense"], "--step_scorer: 'nonsense' is not allowed; choose one of"),
    (["--lr", "1e-5"], "--lr is ambiguous: it starts 2 options (--lr_scheduler_type, --lr_scheduler_kwargs); did you mean --learning_rate?"),
    (["--max_steps", "ten"], "--max_steps: 'ten' is not a whole number"),
]  # fmt: skip
"""``(flags, the start of the one error line)``: values transformers, TRL or argparse used to refuse only after
the model loaded, or with hundreds of lines of usage (issue 38)."""


@pytest.fixture()
def nothing_optional_installed(monkeypatch):
    """wandb and vLLM absent, whatever this machine has (the rows name them)."""
    import importlib.util

    from transformers.integrations import integration_utils

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(integration_utils, "is_wandb_available", lambda: False)
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else find_spec(name, *a)
    )


@pytest.mark.parametrize(("flags", "expected"), PRE_LOAD_ROWS, ids=[" ".join(r[0]) for r in PRE_LOAD_ROWS])
def test_value_checked_before_the_model_loads(
    flags, expected, tmp_path, capsys, no_model_loads, nothing_optional_installed
):
    out = tmp_path / "run"
    assert run_train(out, *flags) == 2
    line = error_line(capsys)
    assert expected in line, line
    assert "do_sample" not in line and "max_new_tokens" not in line  # options train does not have
    assert not out.exists()


def test_readme_promise_one_line_before_anything_loads(
    tmp_path, capsys, no_model_loads, nothing_optional_installed
):
    """README: "A bad value stops with one `psgrpo: error: …` line before anything loads", for every row."""
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    assert "A bad value stops with one `psgrpo: error: …` line" in readme
    failures = []
    for flags, expected in PRE_LOAD_ROWS:
        out = tmp_path / "-".join(flags).strip("-")
        status = run_train(out, *flags)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
        if status != 2 or len(lines) != 1 or expected not in lines[0] or "Traceback" in err or out.exists():
            failures.append((flags, status, err[-500:]))
    assert not failures, failures


def test_argparse_errors_print_no_usage_dump(tmp_path, capsys, no_model_loads):
    """An invalid choice is the one error line, pointing at --help (not at a traceback that is argparse's);
    the note that the demo recipe's step_scorer_kwargs are dropped waits for a command line that parses."""
    for flags in (("--method", "foo"), ("--step_scorer", "nonsense")):
        assert run_train(tmp_path / "run", *flags) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(
            f"psgrpo: error: {flags[0]}: '{flags[1]}' is not allowed"
        )
        assert err.rstrip().endswith("(`psgrpo train --help` lists the options)")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "--num_prompts", "0"],  # refused by inspect's own checks, after parsing
        ["compare", "--seeds", "1", "1"],
        ["compare", "--arms", "a=--method nonsense"],  # refused when compare checks its arms
    ],
    ids=["inspect", "compare", "compare-arms"],
)
def test_a_refusal_after_parsing_is_the_only_line_in_inspect_and_compare(
    tmp_path, capsys, caplog, no_model_loads, command
):
    """Swapping the demo recipe's scorer drops its step_scorer_kwargs with an INFO note; inspect and compare,
    like train, log it only once their own checks passed, so the refusal is still the one line."""
    out = tmp_path / "out"
    with caplog.at_level("INFO", logger="psgrpo"):
        assert main([*command, "--step_scorer", "arithmetic", "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("psgrpo: error:"), err
    assert "step_scorer_kwargs of" not in caplog.text
    assert not out.exists()


def test_compare_logs_the_dropped_kwargs_note_once_its_checks_passed(caplog):
    from psgrpo.commands.compare import parse_compare_args

    note = "step_scorer_kwargs of"
    with caplog.at_level("INFO", logger="psgrpo"):
        parse_compare_args(["--step_scorer", "arithmetic", "--arms", "a=--method ps", "b=--method grpo"])
    assert caplog.text.count(note) == 1 and "not used with step_scorer 'arithmetic'" in caplog.text


def test_a_loading_error_points_at_the_traceback(tmp_path, capsys, no_model_loads):
    assert run_train(tmp_path / "run", "--dataset", str(tmp_path / "none.jsonl")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert err.rstrip().endswith("(--traceback or PSGRPO_DEBUG=1 shows the traceback)")


def test_a_yaml_value_of_the_wrong_type_names_the_file_and_key(tmp_path, capsys, no_model_loads):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_steps: ten\n")
    assert run_train(tmp_path / "run", "--config", str(recipe)) == 2
    assert f"{recipe}: max_steps: 'ten' is not a whole number" in error_line(capsys)


def test_inspect_checks_the_same_values_before_loading(tmp_path, capsys, no_model_loads):
    assert main(["inspect", "--temperature", "0", "--output_dir", str(tmp_path / "page")]) == 2
    assert "--temperature 0: GRPO learns from the differences" in error_line(capsys)
    assert not (tmp_path / "page").exists()


def test_a_value_from_a_recipe_names_the_file_and_the_key(tmp_path, capsys, no_model_loads):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("temperature: 0.0\n")
    assert run_train(tmp_path / "run", "--config", str(recipe)) == 2
    assert f"psgrpo: error: {recipe}: temperature 0: GRPO learns" in error_line(capsys)
    assert run_train(tmp_path / "run", "--config", str(recipe), "--temperature", "0") == 2  # typed: the flag
    assert "psgrpo: error: --temperature 0: GRPO learns" in error_line(capsys)


@pytest.mark.parametrize("left", ["report.json", "metrics.jsonl", "model.safetensors", "checkpoint-50"])
def test_an_output_dir_that_holds_an_earlier_run_is_refused_and_kept(tmp_path, capsys, no_model_loads, left):
    """Training into a finished (or stopped) run's folder used to overwrite its model and checkpoints and append
    to its metrics.jsonl, with exit status 0. Resuming is offered only where a complete checkpoint exists."""
    out = tmp_path / "run"
    out.mkdir()
    if left.startswith("checkpoint-"):
        (out / left).mkdir()
        (out / left / "trainer_state.json").write_text(json.dumps({"global_step": 50}))
        write_marker(out / left, 50)
    else:
        (out / left).write_text("{}")
    before = sorted(p.name for p in out.iterdir())
    assert run_train(out, "--max_steps", "1") == 2
    line = error_line(capsys)
    assert f"--output_dir {out}: already holds a run ({left})" in line and "new --output_dir" in line
    if left.startswith("checkpoint-"):
        assert "continue it from checkpoint-50 with --resume_from_checkpoint true" in line
    else:
        assert "holds no complete checkpoint to resume from" in line and "resume_from_checkpoint" not in line
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_folder_with_other_files_or_a_compare_spec_is_not_an_earlier_run(tmp_path):
    from psgrpo.preflight import check_no_earlier_run, earlier_run

    out = tmp_path / "run"
    out.mkdir()
    (out / "compare_run.json").write_text("{}")  # what psgrpo compare writes before a run trains there
    (out / "notes.txt").write_text("mine")
    (out / "checkpoint-last").mkdir()  # not a checkpoint-N folder
    assert earlier_run(out) == [] and earlier_run(tmp_path / "missing") == []
    check_no_earlier_run(out, None)
    for n in (2, 10, 9):
        (out / f"checkpoint-{n}").mkdir()
    assert earlier_run(out) == ["checkpoint-9", "checkpoint-10"]  # the newest two, by step
    check_no_earlier_run(out, str(out / "checkpoint-10"))  # resuming it is what the folder is for
    other = (
        tmp_path / "other" / "checkpoint-5"
    )  # another run's checkpoint: into a new folder, not over this run
    check_no_earlier_run(tmp_path / "new", str(other))
    with pytest.raises(
        FileExistsError, match=r"already holds another run \(checkpoint-9, checkpoint-10\); resuming"
    ):
        check_no_earlier_run(out, str(other))


def test_resuming_with_another_method_or_dataset_is_refused(tmp_path, capsys, no_model_loads):
    out = tmp_path / "run"
    checkpoint = out / "checkpoint-1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 1}))
    (checkpoint / "psgrpo_task.json").write_text(json.dumps({"dataset": "arith-hard", "method": "grpo"}))
    write_marker(checkpoint, 1)
    code = run_train(out, "--max_steps", "2", "--method", "vps", "--resume_from_checkpoint", "true")
    assert code == 2
    line = error_line(capsys)
    assert f"{checkpoint} was trained with --method grpo and --dataset arith-hard" in line
    assert (
        "asks for --method vps and --dataset arith" in line and f"--model_name_or_path {checkpoint}" in line
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("temperature", "[0.7, 1.0]"),
        ("num_generations", "[4, 8]"),
        ("bf16", "{a: 1}"),
        ("use_vllm", "[true]"),  # bools with nargs='?' too
        ("eval_before_after", "{a: 1}"),
    ],
)
def test_a_yaml_list_or_mapping_for_a_single_value_names_the_file_and_key(
    tmp_path, capsys, no_model_loads, key, value
):
    """It used to reach the config as a list and stop with a TypeError traceback ('<=' between list and int)."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"{key}: {value}\nmax_steps: 1\n")
    out = tmp_path / "run"
    assert run_train(out, "--config", str(recipe)) == 2
    line = error_line(capsys)
    assert f"{recipe}: {key}: expected one value, got a" in line
    assert not out.exists()


def test_a_yaml_mapping_or_list_stays_valid_where_the_option_takes_one(tmp_path):
    """liger_kernel_config is a dict[str, bool], report_to a list: the one-value check leaves them alone."""
    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.methods import config_class

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("liger_kernel_config: {rope: true}\nreport_to: [tensorboard]\nmax_steps: 1\n")
    parser = ConfigParser((TaskConfig, config_class(), ModelConfig), prog="psgrpo train")
    _, args, _ = parser.parse_args_and_config(["--config", str(recipe), "--output_dir", str(tmp_path / "o")])
    assert args.liger_kernel_config == {"rope": True} and args.report_to == ["tensorboard"]
    assert {"temperature", "use_vllm", "vps_alpha"} <= parser.one_value_options
    assert not {"report_to", "liger_kernel_config", "step_scorer_kwargs"} & parser.one_value_options


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--top_k", "-3"), "top_k=-3 is outside its range [0, inf]"),
        (("--top_p", "1.5"), "top_p=1.5 is outside its range (0.0, 1.0]"),
        (("--repetition_penalty", "0"), "repetition_penalty=0.0 is outside its range (0.0, inf]"),
        (
            ("--per_device_train_batch_size", "0"),
            "per_device_train_batch_size=0 is outside its range [1, inf]",
        ),
        (
            ("--gradient_accumulation_steps", "0"),
            "gradient_accumulation_steps=0 is outside its range [1, inf]",
        ),
        (("--cache_implementation", "foo"), "cache_implementation='foo' is not allowed; choose one of"),
    ],
)
def test_sampling_and_batch_values_are_checked_before_the_model_loads(
    tmp_path, capsys, no_model_loads, flags, message
):
    """Each used to load the model (and run the held-out evaluation) before transformers or torch refused it, in
    words that named no option; top_p 1.5 trained silently."""
    out = tmp_path / "run"
    assert run_train(out, *flags) == 2
    assert message in error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("command", ["eval", "diagnose"])
@pytest.mark.parametrize("what", ["empty folder", "unrelated folder", "a file in a checkpoint"])
def test_a_model_path_that_is_no_checkpoint_says_so(tmp_path, capsys, no_model_loads, command, what):
    """An empty or unrelated folder used to get "has no tokenizer … save it with tokenizer.save_pretrained", and a
    file inside a checkpoint a transformers message about invalid JSON."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    target = folder
    if what == "unrelated folder":
        (folder / "readme.txt").write_text("notes")
    elif what == "a file in a checkpoint":
        (folder / "config.json").write_text("{}")
        target = folder / "optimizer.pt"
        target.write_bytes(b"\0")
    extra = ["--output_dir", str(tmp_path / "eval")] if command == "eval" else ["--problems", "1"]
    assert main([command, "--model_name_or_path", str(target), *extra]) == 2
    line = error_line(capsys)
    if what == "a file in a checkpoint":
        assert f"--model_name_or_path {target}: is a file; give the checkpoint directory" in line
        assert str(folder) in line
    else:
        expected = f"--model_name_or_path {folder}: not a checkpoint directory (no config.json / adapter_config.json)"
        assert expected in line


def test_inspect_checks_its_split_and_rows_before_the_model_loads(
    tmp_path, capsys, no_model_loads, monkeypatch
):
    import psgrpo.loading

    monkeypatch.setattr(
        psgrpo.loading, "load_policy", lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded"))
    )
    assert main(["inspect", "--inspect_split", "bogus", "--output_dir", str(tmp_path / "i")]) == 2
    assert error_line(capsys).startswith("psgrpo: error: --inspect_split bogus: arith has splits")
    gsm8k = tmp_path / "gsm8k"
    gsm8k.mkdir()
    for split in ("train", "test"):
        (gsm8k / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in GSM8K_ROWS))
    assert (
        main(["inspect", "--dataset", str(gsm8k), "--first_prompt", "5", "--output_dir", str(tmp_path / "j")])
        == 2
    )
    assert f"--first_prompt 5 is past the end of {gsm8k}/test (2 rows)" in error_line(capsys)
    # arith's rows are generated: an index far past any real use is refused before a million are made
    assert main(["inspect", "--first_prompt", "999999", "--output_dir", str(tmp_path / "k")]) == 2
    assert error_line(capsys).startswith(
        "psgrpo: error: --first_prompt 999999 --num_prompts 4: arith's rows are generated in order, and psgrpo "
        "inspect reads at most the first 100,000 (pick a --first_prompt below 99,997)"
    )
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--temperature", "0"), "temperature=0.0 is outside its range (0.0, inf]"),
        (("--top_p", "2"), "top_p=2.0 is outside its range (0.0, 1.0]"),
        (("--top_k", "-1"), "top_k=-1 is outside its range [0, inf]"),
    ],
)
def test_eval_sampling_values_are_checked_before_the_model_loads(
    tmp_path, capsys, no_model_loads, flags, message
):
    assert main(["eval", "--do_sample", "true", *flags, "--output_dir", str(tmp_path / "eval")]) == 2
    assert message in error_line(capsys)


def test_another_methods_options_get_one_warning_before_the_model_loads(tmp_path, caplog, no_model_loads):
    """--ps_lambda under --method grpo (or a tree_ option in the user's YAML) used to be ignored without a word."""
    from psgrpo.commands.train import train

    mine = tmp_path / "mine.yaml"
    mine.write_text("tree_lambda: 0.5\n")
    flags = ["--method", "grpo", "--ps_lambda", "2", "--output_dir", str(tmp_path / "o")]
    with (
        caplog.at_level("WARNING", logger="psgrpo"),
        pytest.raises(AssertionError, match="a model was loaded"),
    ):
        train(["--config", str(mine), *flags])
    said = [r.getMessage() for r in caplog.records if "--method grpo does not use" in r.getMessage()]
    expected = (
        "--ps_lambda (ps), --tree_lambda (tree) belong to other methods; --method grpo does not use them"
    )
    assert said == [f"psgrpo train: {expected}"]
    caplog.clear()
    own = [
        "--method",
        "vps",
        "--vps_alpha",
        "1",
        "--vps_answer_column",
        "answer",
        "--output_dir",
        str(tmp_path / "p"),
    ]
    with (
        caplog.at_level("WARNING", logger="psgrpo"),
        pytest.raises(AssertionError, match="a model was loaded"),
    ):
        train(own)  # its own options, and the answer column that inspect reads for every method
    assert not [r for r in caplog.records if "does not use" in r.getMessage()]


def test_an_option_belongs_to_the_method_with_the_longest_prefix():
    """A registered method ps_v2 with prefix ps_v2_ owns ps_v2_alpha; ps_lambda stays ps's."""
    from psgrpo.methods import MethodSpec, register_method, unregister_method
    from psgrpo.preflight import other_methods_options

    register_method(MethodSpec(name="ps_v2", summary="test", estimator="grpo", section_fields=("ps_v2_",)))
    try:
        assert other_methods_options("ps_v2", ["ps_v2_alpha", "ps_lambda"]) == {"ps_lambda": "ps"}
        assert other_methods_options("ps", ["ps_v2_alpha", "ps_lambda"]) == {"ps_v2_alpha": "ps_v2"}
        # a section's unprefixed options: typed on the command line only (recipes set them for every method)
        typed = ["step_scorer", "segmenter"]
        assert other_methods_options("vps", typed, typed) == {
            "step_scorer": "ps"
        }  # vps cuts at segmenter steps
        assert other_methods_options("grpo", typed, typed) == {"segmenter": "ps", "step_scorer": "ps"}
        assert other_methods_options("vps", ["step_scorer"]) == {}  # set by a recipe file
    finally:
        unregister_method("ps_v2")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("offline", "--push_to_hub true: HF_HUB_OFFLINE is set, so nothing can be uploaded"),
        ("no token", "--push_to_hub true: no Hugging Face token"),
        (
            "unreachable",
            "--push_to_hub true: the Hugging Face Hub (https://huggingface.co) cannot be reached",
        ),
    ],
)
def test_push_to_hub_without_a_hub_is_one_line_before_the_model_loads(
    tmp_path, capsys, monkeypatch, no_model_loads, setup, message
):
    """It used to load the model, then fail in Trainer.__init__ with 89 lines and two tracebacks."""
    import huggingface_hub

    probed = fake_hub(monkeypatch, why=None if setup != "unreachable" else "ConnectError: no network")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None if setup == "no token" else "hf_fake")
    if setup == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    assert run_train(out, "--push_to_hub", "true") == 2
    assert message in error_line(capsys)
    assert not out.exists()
    assert probed == ([] if setup != "unreachable" else ["https://huggingface.co"])


def test_push_to_hub_with_a_cached_model_and_no_hub_names_the_hub_not_an_offline_flag(
    tmp_path, capsys, monkeypatch, no_model_loads
):
    """A cached Hub model with the Hub unreachable turns offline mode on for the run; the push check came after
    that and blamed HF_HUB_OFFLINE, which the user never set (a review, 2026-12-07)."""
    import huggingface_hub

    fake_hub(monkeypatch, why="ConnectError: no network")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_fake")
    monkeypatch.setattr(
        huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: "/cache/config.json"
    )
    out = tmp_path / "run"
    flags = ("--push_to_hub", "true", "--model_name_or_path", "Qwen/Qwen2.5-0.5B-Instruct")
    assert run_train(out, *flags) == 2
    line = error_line(capsys)
    assert "the Hugging Face Hub (https://huggingface.co) cannot be reached" in line
    assert "HF_HUB_OFFLINE" not in line and not out.exists()


def test_push_to_hub_takes_a_hub_token_for_a_login(tmp_path, monkeypatch, no_model_loads):
    import huggingface_hub

    from psgrpo.commands.train import train

    fake_hub(monkeypatch, why=None)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)  # not logged in
    with pytest.raises(AssertionError, match="a model was loaded"):  # the check passed
        train(["--push_to_hub", "true", "--hub_token", "hf_given", "--output_dir", str(tmp_path / "run")])


def test_inspect_does_not_push_for_a_recipe_that_pushes(tmp_path, monkeypatch, tiny_model, char_tokenizer):
    """inspect trains and saves nothing: a training YAML with push_to_hub: true used to load the model, then fail in
    the Trainer's Hub setup with an 86-line traceback (online, it would have created a Hub repo)."""
    import psgrpo.loading
    import psgrpo.trainer

    seen = {}

    class Stop(Exception):
        pass

    def trainer(*args, **kwargs):
        seen["push_to_hub"] = kwargs["args"].push_to_hub
        raise Stop

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(psgrpo.loading, "load_policy", lambda *a, **k: (tiny_model, char_tokenizer))
    monkeypatch.setattr(psgrpo.trainer, "ProcessGRPOTrainer", trainer)
    recipe = tmp_path / "mine.yaml"
    recipe.write_text("push_to_hub: true\n")
    from psgrpo.commands.inspect_credit import inspect

    with pytest.raises(Stop):
        inspect(["--config", str(recipe), "--output_dir", str(tmp_path / "i")])
    assert seen == {"push_to_hub": False}


def test_compare_checks_the_hub_before_it_writes_its_folder(tmp_path, capsys, monkeypatch, no_model_loads):
    fake_hub(monkeypatch, why=None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "cmp"
    assert main(["compare", "--output_dir", str(out), "--push_to_hub", "true", "--seeds", "0"]) == 2
    assert "--push_to_hub true: HF_HUB_OFFLINE is set" in error_line(capsys)
    assert not out.exists()


def test_train_on_a_run_folder_without_a_final_model_names_its_checkpoints(tmp_path, capsys, no_model_loads):
    """eval takes such a folder (its newest checkpoint); train and inspect need one checkpoint, and say which."""
    run = tmp_path / "stopped"
    for n in (50, 100):
        (run / f"checkpoint-{n}").mkdir(parents=True)
    assert run_train(tmp_path / "new", "--model_name_or_path", str(run)) == 2
    line = error_line(capsys)
    assert f"--model_name_or_path {run}: a run folder without a final model" in line
    assert "checkpoint-100, checkpoint-50" in line


def test_top_k_minus_one_is_vllms_off_switch_and_is_accepted_there(tmp_path):
    from psgrpo.commands.evaluate import EvalConfig
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig

    kept = ProcessGRPOConfig(output_dir=str(tmp_path), use_vllm=True, top_k=-1, use_cpu=True)
    assert kept.top_k == -1
    with pytest.raises(ValueError, match=r"top_k=-1 is outside its range \[0, inf\]"):
        ProcessGRPOConfig(output_dir=str(tmp_path), top_k=-1, use_cpu=True)
    assert EvalConfig(backend="vllm", do_sample=True, top_k=-1).top_k == -1
    with pytest.raises(ValueError, match="top_k=-1 is outside"):
        EvalConfig(do_sample=True, top_k=-1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ("--segmenter_kwargs", '{"bogus":1}'),
            '--segmenter_kwargs {"bogus": 1} do not fit --segmenter markers: make_marker_segmenter() got an '
            "unexpected keyword argument 'bogus'; it takes pattern",
        ),
        (
            ("--segmenter", "newline", "--segmenter_kwargs", '{"pattern":"x"}'),
            "do not fit --segmenter newline: make_newline_segmenter() got an unexpected keyword argument 'pattern'; "
            "it takes no arguments: drop --segmenter_kwargs",
        ),
        (
            ("--dtype", "float17"),
            "--dtype float17: not a torch floating-point dtype; give 'auto', 'bfloat16'",
        ),
        (("--pass_k", "1", "1"), "--pass_k 1 1: repeats k=1; give each k once, e.g. --pass_k 1"),
    ],
)
def test_eval_segmenter_dtype_and_pass_k_are_checked_before_the_model_loads(
    tmp_path, capsys, no_model_loads, flags, message
):
    """segmenter_kwargs a segmenter does not take raised a TypeError traceback, --dtype float17 an AttributeError
    once the checkpoint was found, and a repeated k of --pass_k was accepted."""
    out = tmp_path / "eval"
    assert main(["eval", *flags, "--output_dir", str(out)]) == 2
    assert message in error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("given", ["/", "~"])
def test_eval_refuses_an_output_dir_of_root_or_home(tmp_path, capsys, no_model_loads, monkeypatch, given):
    """`psgrpo eval --output_dir /` wrote summary.json, summary.md and samples.jsonl into the filesystem root."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["eval", "--output_dir", given]) == 2
    where = "the filesystem root" if given == "/" else "your home directory"
    assert f"--output_dir {given}: is {where}; eval writes summary.json" in error_line(capsys)
    assert list(tmp_path.iterdir()) == []
