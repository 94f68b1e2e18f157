"""psgrpo.methods: a method is one spec registered by name; a fifth method from a file outside the package.

tests/methods/position_credit.py is "credit by position" (A_t = A_i · γ^(tokens after t)): not in the
package, registered from its file. Through ProcessGRPOTrainer and through ``psgrpo train --method
FILE:NAME`` it trains, shows in --help and the options page, is refused where its spec says, and renders
in ``psgrpo inspect``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from trainer_helpers import length_reward, tiny_run_args

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.data.arith import make_arith_dataset
from psgrpo.methods import (
    BUILTIN_METHODS,
    MethodSpec,
    config_class,
    estimator_options,
    get_method,
    load_method,
    method_names,
    unregister_method,
)
from psgrpo.tiny.model import build_tiny_model

ROOT = Path(__file__).resolve().parents[1]
POSITION = ROOT / "tests" / "methods" / "position_credit.py"
METHOD_FLAG = f"{POSITION}:position"


@pytest.fixture()
def position():
    """The fifth method, registered for one test and removed after it (other tests see the four built-ins)."""
    assert load_method(METHOD_FLAG) == "position"
    yield get_method("position")
    unregister_method("position")
    ADVANTAGE_ESTIMATORS.unregister("position")
    sys.modules.pop(f"psgrpo_method_{POSITION.stem}", None)


def test_the_builtins_are_four_specs_each_in_its_own_package():
    """(No other test module leaves a method registered: the fixture below removes the fifth one.)"""
    assert method_names() == list(BUILTIN_METHODS) == ["grpo", "ps", "vps", "tree"]
    for name in BUILTIN_METHODS:
        spec = get_method(name)
        assert isinstance(spec, MethodSpec) and spec.name == name and spec.estimator == name
        assert (ROOT / "psgrpo" / name / "spec.py").is_file()
        assert spec.inspect.legend and spec.summary
    assert get_method("grpo").signal is None and all(get_method(m).signal for m in ("ps", "vps", "tree"))


def test_an_unknown_method_names_the_registered_ones(position):
    with pytest.raises(
        ValueError, match="unknown method 'ppo'; registered: 'grpo', 'position', 'ps', 'tree', 'vps'"
    ):
        get_method("ppo")
    with pytest.raises(ValueError, match="no file nowhere.py"):
        load_method("nowhere.py:position")
    with pytest.raises(ValueError, match="registers no method 'nope'"):
        load_method(
            f"{POSITION}:nope"
        )  # the file is imported once (the fixture's), registering 'position' only


def test_the_options_bound_to_an_estimator_drop_the_method_prefix(tmp_path):
    config = config_class()(**tiny_run_args(tmp_path, method="ps", ps_lambda=0.5, ps_outcome_weight=0.0))
    spec = get_method("ps")
    bound = estimator_options(spec, config, ADVANTAGE_ESTIMATORS.get("ps"))
    assert bound == {"advantage_mode": "auto", "outcome_weight": 0.0, "lambda_": 0.5, "min_temperature": 0.1}
    vps = estimator_options(get_method("vps"), config, ADVANTAGE_ESTIMATORS.get("vps"))
    assert vps == {"alpha": 1.2, "log_form": False, "zero_variance": "keep", "truncated": "outcome"}


def test_a_fifth_method_trains_two_steps_through_the_trainer(tmp_path, char_tokenizer, position):
    from psgrpo.trainer import ProcessGRPOTrainer

    Config = config_class()
    assert {f.name for f in dataclasses.fields(Config)} >= {"position_decay", "ps_lambda", "tree_lambda"}
    args = Config(**tiny_run_args(tmp_path, method="position", position_decay=0.5, max_steps=2))
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    trainer = ProcessGRPOTrainer(
        model=model, reward_funcs=[length_reward], args=args,
        train_dataset=make_arith_dataset("train", n=16), processing_class=char_tokenizer,
    )  # fmt: skip
    assert trainer.method_spec is position and trainer.token_credit and trainer.signal is None
    trainer.train()
    assert trainer.state.global_step == 2
    credit = trainer.last_credit
    a_i, a_t = credit.outcome_advantages, credit.token_advantages  # (B,), (B, T)
    lengths = (a_t != 0).sum(1)
    for i in torch.nonzero(a_i).flatten().tolist():  # A_t = A_i · 0.5^(tokens after t) on each row
        n = int(lengths[i])
        want = a_i[i] * 0.5 ** torch.arange(n - 1, -1, -1, dtype=a_t.dtype)
        torch.testing.assert_close(a_t[i, :n], want)
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert "position/process_share" in logged


def test_a_fifth_method_is_refused_where_its_spec_says(tmp_path, position):
    Config = config_class()
    with pytest.raises(
        ValueError, match="importance_sampling_level='sequence' cannot be combined with method='position'"
    ):
        Config(**tiny_run_args(tmp_path, method="position", importance_sampling_level="sequence"))
    with pytest.raises(ValueError, match=r"position_decay=1.5 must be in \(0, 1\]"):
        Config(**tiny_run_args(tmp_path, method="position", position_decay=1.5))
    from psgrpo.compatibility.matrix import TRL_OPTIONS, cell

    gspo = next(o for o in TRL_OPTIONS if o.config.get("importance_sampling_level") == "sequence")
    assert cell(gspo, "position").status == "refused"


def test_a_fifth_method_is_in_the_options_page(position):
    spec = __import__("importlib").util.spec_from_file_location(
        "options_page", ROOT / "tools" / "options_page.py"
    )
    page = __import__("importlib").util.module_from_spec(spec)
    spec.loader.exec_module(page)
    text = page.render()
    assert "### Credit by position (method='position'" in text and "`--position_decay`" in text
    assert "'position': credit by position" in text  # --method's help lists it


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "PSGRPO_DEBUG": "0"}  # the one-line errors
    return subprocess.run(
        [sys.executable, "-m", "psgrpo", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_a_fifth_method_from_the_command_line(tmp_path):
    """psgrpo train --method FILE:NAME: in --help, trains 2 steps, refused as its spec says, renders in inspect."""
    shown = _cli(["train", "--method", METHOD_FLAG, "--help-all"], tmp_path)
    if shown.returncode != 0:  # before --help-all existed, --help printed everything
        shown = _cli(["train", "--method", METHOD_FLAG, "--help"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "--position_decay" in shown.stdout and "credit by position" in shown.stdout
    quick = ["--max_steps", "2", "--per_device_train_batch_size", "8", "--max_completion_length", "24",
             "--eval_before_after", "false", "--save_strategy", "no", "--report_to", "none"]  # fmt: skip
    run = _cli(
        ["train", "--method", METHOD_FLAG, "--position_decay", "0.8", *quick, "--output_dir", "run"], tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = (tmp_path / "run" / "metrics.jsonl").read_text()
    assert "position/process_share" in metrics
    refused = _cli(["train", "--method", METHOD_FLAG, "--importance_sampling_level", "sequence", *quick,
                    "--output_dir", "refused"], tmp_path)  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "cannot be combined with method='position'" in refused.stderr
    assert not (tmp_path / "refused").exists()
    page = _cli(["inspect", "--method", METHOD_FLAG, "--num_prompts", "1", "--max_completion_length", "24",
                 "--output_file", "position.html"], tmp_path)  # fmt: skip
    assert page.returncode == 0, page.stderr[-3000:]
    html = (tmp_path / "position.html").read_text()
    assert "Credit by position" in html and "A_t per token" in html


def test_the_former_names_keep_working_or_are_refused_with_the_new_one():
    from psgrpo.commands.inspect_credit import METHOD_OPTIONS
    from psgrpo.commands.inspect_html import METHOD_LEGENDS
    from psgrpo.compare.plot import METHOD_COLOURS
    from psgrpo.compatibility import Refusal
    from psgrpo.credit import SignalOutput
    from psgrpo.methods import Refusal as Home

    assert set(METHOD_LEGENDS) == set(METHOD_OPTIONS) == set(BUILTIN_METHODS) and Refusal is Home
    assert METHOD_COLOURS["grpo"] == "C0" and "ps_lambda" in METHOD_OPTIONS["ps"]
    with pytest.raises(TypeError, match="estimator_options"):
        SignalOutput(estimator_kwargs={}, outcome_weight=1.0)


def test_a_config_without_a_registered_methods_options_is_still_built(tmp_path, position):
    """ProcessGRPOConfig itself (not config_class()) lacks position_decay: position's check is not its business."""
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig

    assert ProcessGRPOConfig(**tiny_run_args(tmp_path, method="ps")).method == "ps"
    with pytest.raises(
        ValueError, match=r"has options \(PositionOptions\) this config class lacks: .*config_class\(\)"
    ):
        ProcessGRPOConfig(**tiny_run_args(tmp_path, method="position"))
