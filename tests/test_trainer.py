"""ProcessGRPOTrainer: with method='grpo' it trains and logs exactly like trl.GRPOTrainer.

Every other TRL option with every method: tests/test_compatibility.py.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from trainer_helpers import assert_same_logs, length_reward, record_batches, save_tiny_model, tiny_run_args
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

from psgrpo.config.precision import resolve_bf16
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.trainer import ProcessGRPOTrainer

REWARDS = [correctness_reward, format_reward, length_reward]


def _common_args(tmp_path, name, beta=0.0):
    return tiny_run_args(
        tmp_path,
        output_dir=str(tmp_path / name),
        max_steps=2,
        max_completion_length=16,
        learning_rate=1e-2,
        beta=beta,
    )


def _run(trainer_cls, args, tokenizer, dataset, model_dir):
    torch.manual_seed(0)
    # Loaded from disk: with beta > 0 TRL builds the reference model from the policy's path.
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = trainer_cls(
        model=model, reward_funcs=REWARDS, args=args, train_dataset=dataset, processing_class=tokenizer
    )
    batches = record_batches(trainer)
    trainer.train()
    params = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    return batches, trainer.state.log_history, params, trainer


def test_grpo_method_matches_trl(tmp_path, char_tokenizer):
    dataset = make_arith_dataset("train", n=16)
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    ref_batches, ref_logs, ref_params, _ = _run(
        GRPOTrainer,
        # stock TRL turns an unset bf16 into True even on a CPU without native bf16, where psgrpo
        # trains in fp32: the comparison is at equal precision, psgrpo's rule (psgrpo.config.precision)
        GRPOConfig(**_common_args(tmp_path, "trl", beta=0.04), bf16=resolve_bf16(None, False, True)),
        char_tokenizer,
        dataset,
        model_dir,
    )
    our_batches, our_logs, our_params, ours = _run(
        ProcessGRPOTrainer,
        ProcessGRPOConfig(method="grpo", **_common_args(tmp_path, "psgrpo", beta=0.04)),
        char_tokenizer,
        dataset,
        model_dir,
    )
    assert len(ref_batches) == len(our_batches) == 2
    for ref, our in zip(ref_batches, our_batches, strict=True):
        torch.testing.assert_close(our["completion_ids"], ref["completion_ids"], rtol=0, atol=0)
        assert ref["advantages"].abs().sum() > 0, "test needs non-zero advantages to mean anything"
        torch.testing.assert_close(our["advantages"], ref["advantages"], rtol=0, atol=0)  # TRL's own 1-D A_i
    assert_same_logs(our_logs, ref_logs)  # the loss and every metric TRL logs
    # psgrpo inspect still sees A_i on every completion token
    expected = ref_batches[-1]["advantages"].unsqueeze(1) * ref_batches[-1]["completion_mask"]
    torch.testing.assert_close(ours.last_credit.token_advantages, expected, rtol=0, atol=0)
    for name, value in ref_params.items():
        torch.testing.assert_close(our_params[name], value, rtol=0, atol=0, msg=name)
    records = [json.loads(line) for line in (tmp_path / "psgrpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "loss" in r] == [1, 2]
    assert "psgrpo/advantage_seconds" in records[0]


def test_rejects_plain_grpo_config(tmp_path, char_tokenizer, tiny_model):
    with pytest.raises(TypeError, match="ProcessGRPOConfig"):
        ProcessGRPOTrainer(
            model=tiny_model, args=GRPOConfig(**_common_args(tmp_path, "x")), processing_class=char_tokenizer
        )


def test_unknown_method_and_estimator(tmp_path):
    with pytest.raises(ValueError, match="method='ppo' is not allowed; choose one of 'grpo', 'ps', 'vps'"):
        ProcessGRPOConfig(method="ppo", **_common_args(tmp_path, "bad"))
    with pytest.raises(ValueError, match="advantage_estimator='nope' is not registered"):  # at config time
        ProcessGRPOConfig(advantage_estimator="nope", **_common_args(tmp_path, "bad2"))


def _built(model, tokenizer, args) -> ProcessGRPOTrainer:
    """A trainer on 8 arith rows with the config's own reward functions."""
    return ProcessGRPOTrainer(
        model=model, args=args, train_dataset=make_arith_dataset("train", n=8), processing_class=tokenizer
    )


def test_default_reward_funcs_from_config(tmp_path, char_tokenizer, tiny_model):
    args = ProcessGRPOConfig(reward_funcs="correctness,strict_format", **_common_args(tmp_path, "r"))
    trainer = _built(tiny_model, char_tokenizer, args)
    assert trainer.reward_func_names == ["correctness_reward", "strict_format_reward"]


def test_the_model_card_names_the_method_and_no_none_model(tmp_path, char_tokenizer, tiny_model):
    """TRL's card for a model started from a local checkpoint linked `[None](https://huggingface.co/None)` and
    showed `pipeline(model="None")`; a `ps` run said only "trained with GRPO" (a newcomer's trial, 2026-12-07)."""
    from psgrpo.tiny import CHECKPOINT_DIR

    tiny_model.config._name_or_path = str(CHECKPOINT_DIR)  # as the embedded checkpoint loads
    args = ProcessGRPOConfig(method="ps", **_common_args(tmp_path, "card"))
    trainer = _built(tiny_model, char_tokenizer, args)
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    trainer.create_model_card(model_name="card")
    card = (Path(args.output_dir) / "README.md").read_text()
    assert "None" not in card and "fine-tuned from a local checkpoint" in card
    assert f'model="{args.output_dir}"' in card and "psgrpo's `ps` credit (PS-GRPO:" in card
    assert "- psgrpo-ps" in card


@pytest.mark.parametrize("method", ["grpo", "vps"])
def test_gradient_checkpointing_changes_no_weight(tmp_path, char_tokenizer, method):
    """Recomputing activations gives the same numbers on CPU: compare reuses a finished run that differs
    only in ``gradient_checkpointing`` (psgrpo.commands.compare.RESULT_NEUTRAL)."""
    dataset = make_arith_dataset("train", n=16)
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    runs = [
        _run(
            ProcessGRPOTrainer,
            ProcessGRPOConfig(method=method, gradient_checkpointing=gc, **_common_args(tmp_path, f"gc-{gc}")),
            char_tokenizer,
            dataset,
            model_dir,
        )
        for gc in (True, False)
    ]
    (_, logs_on, params_on, on), (_, logs_off, params_off, off) = runs
    assert on.model.is_gradient_checkpointing and not off.model.is_gradient_checkpointing
    for name, value in params_on.items():
        torch.testing.assert_close(params_off[name], value, rtol=0, atol=0, msg=name)
    initial = AutoModelForCausalLM.from_pretrained(model_dir).state_dict()
    assert any(not torch.equal(params_on[n], initial[n]) for n in params_on), "the run must change weights"
    assert [r.get("loss") for r in logs_on] == [r.get("loss") for r in logs_off]


@pytest.mark.parametrize("method", ["grpo", "ps", "vps", "tree"])
def test_the_python_api_shows_no_warning_from_trls_checkpointing_calls(tmp_path, char_tokenizer, method):
    """transformers deprecates gradient checkpointing's old names and TRL uses them itself (its config default,
    every rollout's toggle, vps's probe forwards, the held-out evaluation): a Python API user sees none of it,
    and a warning of their own that repeats every step is still shown once, as Python's default filter does."""
    import warnings

    from psgrpo.eval.heldout import HeldOutEvalCallback

    def noisy_reward(completions, **_):
        warnings.warn("the user's reward warns at every call", UserWarning, stacklevel=1)
        return [0.0] * len(completions)

    dataset = make_arith_dataset("train", n=16)
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's default: each warning once per place
        args = ProcessGRPOConfig(method=method, gradient_checkpointing=True, **_common_args(tmp_path, "gc"))
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        trainer = ProcessGRPOTrainer(
            model=model, reward_funcs=[*REWARDS, noisy_reward], args=args, train_dataset=dataset,
            processing_class=char_tokenizer,
        )  # fmt: skip
        trainer.add_callback(
            HeldOutEvalCallback(trainer, make_arith_dataset("test", n=4), every_steps=1, max_new_tokens=16)
        )
        trainer.train()
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "checkpointing" in m and "deprecated" in m], messages
    assert messages.count("the user's reward warns at every call") == 1, messages


def test_an_embedded_name_is_a_model_the_trainer_loads_offline(tmp_path, monkeypatch):
    """``ProcessGRPOTrainer(model="embedded:arith")``: the committed checkpoint, its tokenizer, no hub call."""
    from psgrpo.tiny import EMBEDDED_CHECKPOINTS

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="vps"))
    rows = make_arith_dataset("train", n=8)
    for name, directory in EMBEDDED_CHECKPOINTS.items():
        trainer = ProcessGRPOTrainer(model=f"embedded:{name}", args=args, train_dataset=rows)
        reference = AutoModelForCausalLM.from_pretrained(directory)
        ours, theirs = trainer.model.state_dict(), reference.state_dict()
        assert ours.keys() == theirs.keys()
        for key in theirs:
            assert torch.equal(ours[key].float(), theirs[key].float()), key
        assert trainer.processing_class("Step 1: 4 + 1 = 5")["input_ids"]  # the character tokenizer
    with pytest.raises(ValueError, match=r"unknown embedded checkpoint 'embedded:qwen'; expected one of"):
        ProcessGRPOTrainer(model="embedded:qwen", args=args, train_dataset=rows)


def _refuses_before_loading(monkeypatch):
    """Make TRL's model loading fail the test: the refusal must come before it."""

    def loaded(*args, **kwargs):
        raise AssertionError("the model loaded before the bad input was refused")

    monkeypatch.setattr(GRPOTrainer, "__init__", loaded)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"row": 5, "prompt": None},
            r"dataset 'train_dataset': row 5, field 'prompt': prompt None is missing",
        ),
        ({"row": 2, "role": "human"}, r"row 2, field 'prompt': .* role 'human', not one of system"),
        ({"row": 3, "answer": ""}, r"row 3, field 'answer': gold answer '' is empty"),  # correctness reads it
    ],
)
def test_a_bad_row_is_named_before_the_model_loads(tmp_path, monkeypatch, change, message):
    """Tokenizers refused a None prompt only when training reached its row (seven steps in, a sweep found); an empty
    gold answer trained on format and process credit alone, silently."""
    _refuses_before_loading(monkeypatch)
    row, role = change.pop("row"), change.pop("role", None)
    rows = make_arith_dataset("train", n=8, chat=role is not None).to_list()  # one Arrow type per column
    rows[row] |= change
    if role is not None:
        rows[row]["prompt"][-1]["role"] = role
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="ps"))
    with pytest.raises(ValueError, match=message):
        ProcessGRPOTrainer(model="embedded:arith", args=args, train_dataset=Dataset.from_list(rows))


def test_an_empty_gold_passes_where_no_reward_reads_it(tmp_path, monkeypatch, char_tokenizer, tiny_model):
    rows = make_arith_dataset("train", n=8).to_list()
    rows[0]["answer"] = ""
    args = ProcessGRPOConfig(reward_funcs="format", **tiny_run_args(tmp_path))
    trainer = ProcessGRPOTrainer(
        model=tiny_model, args=args, train_dataset=Dataset.from_list(rows), processing_class=char_tokenizer
    )
    assert trainer.reward_func_names == ["format_reward"]


def _one_row_trainer(tmp_path, model, tokenizer) -> ProcessGRPOTrainer:
    """A trainer on one arith row, while a generation draws two prompts (8 completions / 4 per prompt)."""
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, per_device_train_batch_size=8, num_generations=4))
    return ProcessGRPOTrainer(
        model=model, args=args, train_dataset=make_arith_dataset("train", n=1), processing_class=tokenizer
    )


def test_too_few_rows_for_one_generation_are_refused_when_training(tmp_path, char_tokenizer, tiny_model):
    """TRL's sampler yields no batch: train() returned after 0 steps with train_loss 0.0. Building the trainer
    still works (benchmarks drive single steps on a few rows)."""
    trainer = _one_row_trainer(tmp_path, tiny_model, char_tokenizer)
    with pytest.raises(
        ValueError, match=r"train_dataset has 1 row, fewer than the 2 prompts each generation"
    ):
        trainer.train()
    assert trainer.state.global_step == 0
    assert not (
        tmp_path / "out"
    ).exists()  # transformers created it when the trainer was built; nothing in it


def test_a_failed_api_run_leaves_no_empty_output_dir_and_keeps_one_that_existed(
    tmp_path, char_tokenizer, tiny_model
):
    """``psgrpo train`` removed the folder a failed run created; from Python, transformers' empty folder stayed."""
    rows = make_arith_dataset("train", n=8, chat=True)
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))
    with pytest.raises(ValueError, match="no chat template"):  # refused after transformers made the folder
        ProcessGRPOTrainer(model=tiny_model, args=args, train_dataset=rows, processing_class=char_tokenizer)
    assert not (tmp_path / "out").exists()
    # the last refusal of the build (the step scorer's columns): after everything else was set up
    no_solution = Dataset.from_list([{"prompt": "2 + 2 =", "answer": "4"}] * 8)
    scored = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="ps", step_scorer="reference"))
    with pytest.raises(ValueError, match="solution"):
        ProcessGRPOTrainer(
            model=tiny_model, args=scored, train_dataset=no_solution, processing_class=char_tokenizer
        )
    assert not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()  # the user's own folder, empty: never removed
    with pytest.raises(ValueError, match="no chat template"):
        ProcessGRPOTrainer(model=tiny_model, args=args, train_dataset=rows, processing_class=char_tokenizer)
    assert (tmp_path / "out").is_dir()


def test_train_keeps_a_folder_it_did_not_create_or_that_holds_files(tmp_path, char_tokenizer, tiny_model):
    """A review's cases: output_dir changed after the trainer was built (to the user's empty folder), and a
    failure after the run wrote its first metrics."""
    trainer = _one_row_trainer(tmp_path, tiny_model, char_tokenizer)
    mine = tmp_path / "mine"
    mine.mkdir()
    trainer.args.output_dir = str(mine)
    with pytest.raises(ValueError, match="fewer than the 2 prompts"):
        trainer.train()
    assert mine.is_dir()  # existed before this run: kept, though the trainer's own folder was new

    calls = []

    def fails_at_the_second_step(completions, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("reward service down")
        return [0.0] * len(completions)

    failing = ProcessGRPOConfig(**tiny_run_args(tmp_path / "b", max_steps=2, logging_steps=1))
    trainer = ProcessGRPOTrainer(
        model=tiny_model,
        args=failing,
        reward_funcs=[fails_at_the_second_step],
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=char_tokenizer,
    )
    with pytest.raises(RuntimeError, match="reward service down"):
        trainer.train()
    assert (tmp_path / "b" / "out" / "metrics.jsonl").is_file()  # step 1's row: the folder stays


def test_model_argument_mistakes_are_named(tmp_path, monkeypatch):
    _refuses_before_loading(monkeypatch)
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))
    rows = make_arith_dataset("train", n=8)
    with pytest.raises(TypeError, match="model is required: a checkpoint folder, a Hub id, 'embedded:arith'"):
        ProcessGRPOTrainer(model=None, args=args, train_dataset=rows)
    with pytest.raises(FileNotFoundError, match=r"model .*/missing: no such checkpoint directory"):
        ProcessGRPOTrainer(
            model=tmp_path / "missing", args=args, train_dataset=rows
        )  # a Path, as TRL does not take


def test_a_path_and_reward_names_are_taken_as_the_cli_takes_them(tmp_path, char_tokenizer, tiny_model):
    """TRL read ``reward_funcs="correctness"`` as a reward model's Hub id, and a ``Path`` model as no model."""
    model = save_tiny_model(tmp_path / "model", char_tokenizer)
    args = ProcessGRPOConfig(correctness_exact=2.0, **tiny_run_args(tmp_path))
    rows = make_arith_dataset("train", n=8)
    given = {"args": args, "train_dataset": rows, "processing_class": char_tokenizer}
    trainer = ProcessGRPOTrainer(model=model, reward_funcs=["correctness", length_reward], **given)
    assert trainer.reward_func_names == ["correctness_reward", "length_reward"]
    completion = "<reasoning>Step 1: 1 + 1 = 2</reasoning><answer>2</answer>"
    assert trainer.reward_funcs[0]([completion], answer=["2"]) == [2.0]  # configured by args
    with pytest.raises(ValueError, match=r"reward function\(s\) \['format'\] listed more than once"):
        ProcessGRPOTrainer(model=model, reward_funcs=["format", "format"], **given)


@pytest.mark.parametrize("method", ["grpo", "vps", "tree"])
def test_a_step_scorer_for_a_method_that_never_calls_it_is_refused(tmp_path, monkeypatch, method):
    _refuses_before_loading(monkeypatch)
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, method=method))
    with pytest.raises(ValueError, match=f"method='{method}' never calls a step scorer .*'ps'"):
        ProcessGRPOTrainer(
            model="embedded:arith",
            args=args,
            train_dataset=make_arith_dataset("train", n=8),
            step_scorer=lambda prompts, steps, **columns: [[1.0] * len(s) for s in steps],
        )


def test_chat_prompts_need_a_chat_template(tmp_path, char_tokenizer, tiny_model):
    rows = make_arith_dataset("train", n=8, chat=True)
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))
    with pytest.raises(ValueError, match="prompts are chat messages, but the tokenizer has no chat template"):
        ProcessGRPOTrainer(model=tiny_model, args=args, train_dataset=rows, processing_class=char_tokenizer)


def test_a_python_api_checkpoint_records_its_method(tmp_path, char_tokenizer, tiny_model):
    """Resuming it with another method is refused as for ``psgrpo train`` (the API wrote no record)."""
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="ps", save_strategy="steps", save_steps=1))
    trainer = _built(tiny_model, char_tokenizer, args)
    trainer.train()
    checkpoint = Path(args.output_dir) / "checkpoint-1"
    assert json.loads((checkpoint / "psgrpo_task.json").read_text()) == {"method": "ps"}
    other = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="vps", max_steps=2))
    with pytest.raises(
        ValueError, match="was trained with method='ps', and this run asks for method='vps'"
    ) as err:
        _built(tiny_model, char_tokenizer, other).train(resume_from_checkpoint=str(checkpoint))
    assert "--" not in str(err.value)  # named as the Python API's arguments, not as flags nobody typed


def test_a_reward_function_without_kwargs_is_refused_before_loading(tmp_path, monkeypatch):
    """TRL calls every reward function with completion_ids= and the dataset's columns: one taking only
    ``(prompts, completions)`` failed at the first step with an "unexpected keyword argument"."""
    _refuses_before_loading(monkeypatch)

    def exact(prompts, completions):
        return [1.0 for _ in completions]

    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))
    rows = make_arith_dataset("train", n=8)
    with pytest.raises(
        TypeError, match=r"reward function 'exact' cannot take what TRL passes it .*completion_ids"
    ):
        ProcessGRPOTrainer(model="embedded:arith", reward_funcs=exact, args=args, train_dataset=rows)

    def named(prompts, completions, completion_ids, trainer_state, log_extra, log_metric, **unused):
        return [1.0 for _ in completions]

    with pytest.raises(AssertionError, match="the model loaded"):  # accepted: the check passed, loading began
        ProcessGRPOTrainer(
            model="embedded:arith", reward_funcs=functools.partial(named), args=args, train_dataset=rows
        )


def test_a_reward_function_naming_every_keyword_and_column_is_accepted():
    from psgrpo.trainer import check_reward_signature

    def every(
        prompts, completions, completion_ids, trainer_state, log_extra, log_metric, answer=None, solution=None
    ):
        return [1.0 for _ in completions]

    check_reward_signature(every, ["prompt", "answer", "solution"])
    check_reward_signature(every, None)  # columns unknown (a stream): not checked
    with pytest.raises(TypeError, match=r"reward function 'every' cannot take .*difficulty"):
        check_reward_signature(functools.partial(every), ["prompt", "answer", "difficulty"])


def test_datasets_without_prompts_pass_where_an_environment_writes_them():
    from psgrpo.trainer import check_datasets

    rows = Dataset.from_list([{"task": "count to 3", "answer": "3"}] * 4)
    check_datasets(rows, None, "answer", prompts_from_environment=True)
    with pytest.raises(ValueError, match="missing required column 'prompt'"):
        check_datasets(rows, None, "answer")


def test_a_tokenizer_that_cannot_pad_or_overruns_the_embeddings_is_refused(
    tmp_path, char_tokenizer, tiny_model
):
    """TRL failed at the first rollout with ``full(): fill_value ... NoneType``, torch with ``index out of range``."""
    import copy

    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))
    rows = make_arith_dataset("train", n=8)
    no_pad = copy.deepcopy(char_tokenizer)
    no_pad.pad_token, no_pad.eos_token = None, None
    with pytest.raises(ValueError, match="has neither a pad nor an EOS token"):
        ProcessGRPOTrainer(model=tiny_model, args=args, train_dataset=rows, processing_class=no_pad)
    small = copy.deepcopy(tiny_model)
    small.config.vocab_size = len(char_tokenizer) - 5
    with pytest.raises(
        ValueError, match=rf"has {len(char_tokenizer)} tokens but the model's embedding table only"
    ):
        ProcessGRPOTrainer(model=small, args=args, train_dataset=rows, processing_class=char_tokenizer)


def test_greedy_sampling_from_python_is_refused_as_from_the_command_line(tmp_path, monkeypatch):
    """``ProcessGRPOConfig(temperature=0)`` passed the config and failed at the first rollout."""
    _refuses_before_loading(monkeypatch)
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, temperature=0.0))
    with pytest.raises(ValueError, match="--temperature 0: GRPO learns from the differences"):
        ProcessGRPOTrainer(model="embedded:arith", args=args, train_dataset=make_arith_dataset("train", n=8))


def test_a_prompt_the_context_cannot_hold_is_refused_and_one_that_leaves_too_little_is_warned(
    tmp_path, char_tokenizer, tiny_model, caplog
):
    """transformers only warns while decoding past ``max_position_embeddings`` (or at tokenization), naming no row."""
    context = tiny_model.config.max_position_embeddings
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path))  # max_completion_length 24
    rows = make_arith_dataset("train", n=8).to_list()

    def with_row_3(prompt: str) -> Dataset:
        return Dataset.from_list([*rows[:3], {**rows[3], "prompt": prompt}, *rows[4:]])

    build = functools.partial(ProcessGRPOTrainer, model=tiny_model, processing_class=char_tokenizer)
    with pytest.raises(
        ValueError, match=rf"row 3, field 'prompt': the prompt is {context + 1} tokens, .* context is"
    ):
        build(args=args, train_dataset=with_row_3("7" * (context + 1)))
    with pytest.raises(
        ValueError, match=rf"dataset 'eval_dataset': row 3, field 'prompt': the prompt is {context}"
    ):
        build(args=args, train_dataset=with_row_3("7"), eval_dataset=with_row_3("7" * context))
    tight = with_row_3("7" * (context - 10))  # 10 positions left for a completion of up to 24 tokens
    with caplog.at_level("WARNING", logger="psgrpo.trainer"):
        build(args=args, train_dataset=tight)
    assert "1 of 8 prompts leave fewer than max_completion_length (24) positions" in caplog.text
    assert f"row 3, is {context - 10} tokens" in caplog.text
    vps = ProcessGRPOConfig(**tiny_run_args(tmp_path / "vps", method="vps"))
    with pytest.raises(ValueError, match="method 'vps' probes after the completion"):
        build(args=vps, train_dataset=tight)
    assert not (tmp_path / "vps" / "out").exists()  # the refused build leaves no folder behind
