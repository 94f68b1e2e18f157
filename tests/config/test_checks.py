"""Checks of ProcessGRPOConfig that name the options the user set (psgrpo/config/checks.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.config.process_grpo_config import ProcessGRPOConfig


def config(tmp_path, **fields):
    return ProcessGRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", **fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_steps": 0}, "max_steps=0 trains no step"),
        ({"max_steps": -3}, "max_steps=-3 trains no step"),
        ({"num_train_epochs": 0.0}, r"num_train_epochs=0.0 is outside its range \(0.0, inf\]"),
        ({"learning_rate": -1.0}, r"learning_rate=-1.0 is outside its range \[0.0, inf\]"),
        (
            {"beta": -0.04},
            r"beta=-0.04 is outside its range \[0.0, inf\]",
        ),  # rewarded drifting off the reference
        ({"epsilon": -0.2}, r"epsilon=-0.2 is outside its range \[0.0, inf\]"),  # inverted the clip
        ({"epsilon_high": -0.28}, r"epsilon_high=-0.28 is outside its range"),
        ({"method": "ps", "step_scorer": "prm"}, "step_scorer='prm' needs the process reward model"),
        (
            {"method": "ps", "step_scorer": "prm", "step_scorer_kwargs": {"model": "./prm-checkpoint"}},
            r"step_scorer_kwargs\['model'\] ./prm-checkpoint: no such checkpoint directory",
        ),
        (
            {"num_generations": 3, "generation_batch_size": 16},
            "num_generations=3 must divide generation_batch_size=16",
        ),
        # from a bad-input sweep, 2026-12-07: a traceback, a silent loss, or an error after the model loaded
        ({"num_generations": 0}, r"num_generations=0 is outside its range \[2, inf\]"),  # ZeroDivisionError
        ({"steps_per_generation": 0}, r"steps_per_generation=0 is outside its range \[1, inf\]"),
        ({"reward_weights": [float("nan"), 1.0]}, r"reward_weights=\[nan, 1.0\] is not a finite number"),
        ({"delta": -1.0}, "delta=-1.0 clips the probability ratio at or below 1"),
        ({"max_grad_norm": -1.0}, r"max_grad_norm=-1.0 is outside its range"),
        ({"weight_decay": -1.0}, r"weight_decay=-1.0 is outside its range"),
        ({"correctness_exact": -2.0}, r"correctness_exact=-2.0 is outside its range"),
        ({"correctness_close": 5.0}, r"correctness_close=5.0 is outside its range \[0.0, 2.0\]"),
        ({"generation_kwargs": "[1]"}, r"generation_kwargs must be a JSON object, got \[1\]"),
        ({"model_init_kwargs": '{"a": 1,}'}, r"model_init_kwargs must be a JSON object, got '\{\"a\": 1,\}'"),
        # generation_kwargs win over the options they repeat, so they keep the options' ranges
        (
            {"generation_kwargs": {"temperature": -1}},
            r"generation_kwargs\['temperature'\]=-1: GRPO learns from the differences",
        ),
        ({"generation_kwargs": {"top_p": 1.5}}, r"generation_kwargs\['top_p'\]=1.5 is outside its range"),
        (
            {"generation_kwargs": {"max_new_tokens": "x"}},
            r"generation_kwargs\['max_new_tokens'\] must be a number",
        ),
        ({"generation_kwargs": {"top_k": 2.5}}, r"generation_kwargs\['top_k'\]=2.5 must be a whole number"),
    ],
)
def test_refused_before_anything_loads(tmp_path, monkeypatch, fields, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises((ValueError, OSError), match=message):
        config(tmp_path, **fields)


@settings(max_examples=15, deadline=None)
@given(batch=st.integers(2, 24), generations=st.integers(2, 24), accumulation=st.integers(1, 3))
def test_num_generations_error_names_the_flags_typed(tmp_path_factory, batch, generations, accumulation):
    tmp_path = tmp_path_factory.mktemp("cfg")
    total = batch * accumulation
    if total % generations == 0:
        assert config(tmp_path, per_device_train_batch_size=batch, num_generations=generations,
                      gradient_accumulation_steps=accumulation).generation_batch_size == total  # fmt: skip
        return
    with pytest.raises(ValueError) as info:
        config(tmp_path, per_device_train_batch_size=batch, num_generations=generations,
               gradient_accumulation_steps=accumulation)  # fmt: skip
    message = str(info.value)
    assert f"num_generations={generations}" in message and f"per_device_train_batch_size={batch}" in message
    assert ("gradient_accumulation_steps" in message) == (accumulation > 1)
    assert "generation_batch_size" not in message.replace("per_device_train_batch_size", "")
    suggested = int(message.split("(e.g. ")[1].split(")")[0])
    assert suggested % generations == 0 and suggested % batch == 0  # the suggestion works


def test_reward_funcs_accept_import_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gsm8k_rewards_a2.py").write_text(
        "def mentions_the_answer(completions, answer, **kwargs):\n"
        "    return [1.0 if a in c else 0.0 for c, a in zip(completions, answer)]\n"
    )
    assert config(tmp_path, reward_funcs=["gsm8k_rewards_a2.mentions_the_answer", "format"]).reward_funcs == [
        "gsm8k_rewards_a2.mentions_the_answer",
        "format",
    ]
    with pytest.raises(ValueError, match="has no function 'nope'"):
        config(tmp_path, reward_funcs=["gsm8k_rewards_a2.nope"])
    with pytest.raises(ValueError, match="or an import path such as my_rewards.accuracy"):
        config(tmp_path, reward_funcs=["formatt"])


def test_generation_kwargs_in_range_pass_and_vllm_reads_top_k_minus_one(tmp_path, monkeypatch, caplog):
    import importlib.util

    monkeypatch.chdir(tmp_path)
    kwargs = {
        "top_k": 5,
        "repetition_penalty": 1.1,
        "max_new_tokens": 64,
        "suppress_tokens": [0],
        "min_p": None,
    }
    assert (
        config(tmp_path, generation_kwargs=kwargs).generation_kwargs == kwargs
    )  # None: unset, as TRL's min_p
    with pytest.raises(ValueError, match=r"generation_kwargs\['top_k'\]=-1 is outside its range \[0, inf\]"):
        config(tmp_path, generation_kwargs={"top_k": -1})
    with pytest.raises(
        ValueError, match=r"generation_kwargs\['temperature'\]=0: GRPO learns from the differences"
    ):
        config(tmp_path, generation_kwargs={"temperature": 0})
    find_spec = importlib.util.find_spec  # vLLM present, whatever this machine has: the config only checks it
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "vllm" else find_spec(name, *a)
    )
    assert config(tmp_path, use_vllm=True, generation_kwargs={"top_k": -1}).generation_kwargs == {"top_k": -1}


def test_greedy_generation_kwargs_warn_but_pass(tmp_path, monkeypatch, caplog):
    """``do_sample: false`` gives a group identical completions (no advantage to learn from), yet a determinism test
    may want exactly that: a warning, not a refusal."""
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="psgrpo.config.checks"):
        assert config(tmp_path, generation_kwargs={"do_sample": False}).generation_kwargs == {
            "do_sample": False
        }
    assert "generation_kwargs['do_sample']=false: GRPO learns from the differences" in caplog.text
