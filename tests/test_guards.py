"""Nothing non-finite reaches the weights: a bad reward, advantage, confidence, loss or gradient stops the step."""

from __future__ import annotations

import math
import re

import pytest
import torch
from trainer_helpers import length_reward, tiny_run_args
from transformers import AutoModelForCausalLM, TrainerCallback

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.guards import (
    NonFiniteError,
    bad_rows,
    check_finite,
    check_rewards,
    nan_as_infinite,
    reward_values,
)
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer


def test_bad_rows_and_padding():
    values = torch.tensor([[0.0, 1.0], [math.nan, 1.0], [1.0, math.inf], [math.nan, math.nan]])
    assert bad_rows(values) == [1, 2, 3]
    assert bad_rows(values, allow_nan=True) == [2]
    valid = torch.tensor([[True, True], [False, True], [True, False], [False, False]])
    assert bad_rows(values, valid=valid) == []


def test_messages_name_the_quantity_step_and_rows():
    with pytest.raises(NonFiniteError, match=r"step 7: the loss holds a NaN or infinite value in rows 1"):
        check_finite("the loss", torch.tensor([0.0, math.nan]), step=7)
    rewards = torch.tensor([[1.0, math.nan], [math.inf, 0.0]])  # NaN: TRL's "unscorable", allowed
    with pytest.raises(
        NonFiniteError, match=r"reward function 'correctness' returned NaN or an infinite value in rows 1"
    ):
        check_rewards(rewards, ["correctness", "format"], step=3)
    check_rewards(torch.tensor([[1.0, math.nan]]), ["correctness", "format"], step=3)


def test_a_nan_the_function_returns_is_not_taken_for_trls_unscorable_none():
    import asyncio

    def reward(completions, **_):
        return [1.0, math.nan, None]

    async def async_reward(completions, **_):
        return [math.nan, 2.0]

    checked = nan_as_infinite(reward)
    assert checked.__name__ == "reward" and checked([]) == [1.0, math.inf, None]
    checked_async = nan_as_infinite(async_reward)
    assert asyncio.iscoroutinefunction(checked_async) and checked_async.__name__ == "async_reward"
    assert asyncio.run(checked_async([])) == [math.inf, 2.0]


def test_reward_values_keep_none_and_read_numpy_and_torch_numbers():
    """What TRL accepts still passes, as floats: None (unscorable), bools, numpy and torch numbers, 1-D arrays."""
    import numpy as np

    mixed = [1, None, True, np.float32(0.5), np.int64(2), torch.tensor(0.25), np.array(3.0), math.nan]
    assert reward_values("r", mixed, completions=8) == [1.0, None, 1.0, 0.5, 2.0, 0.25, 3.0, math.inf]
    assert reward_values("r", (0.5, None)) == [0.5, None]
    assert reward_values("r", np.array([1.0, math.nan]), completions=2) == [1.0, math.inf]
    assert reward_values("r", torch.tensor([0.0, 2.0]), completions=2) == [0.0, 2.0]


EXPECTED = re.escape("expected a list (or tuple, 1-D array or tensor) of one number or None per completion")


@pytest.mark.parametrize(
    ("returned", "described"),
    [
        (0.5, "returned 0.5 of type float;"),
        (None, "returned None of type NoneType;"),
        ("1.0", "returned '1.0' of type str;"),
        ({"a": 1.0, "b": 0.0}, "returned {'a': 1.0, 'b': 0.0} of type dict;"),
        (torch.ones(2, 1), "returned tensor([[1.], [1.]]) of type Tensor of shape (2, 1);"),
        (["1.0", "0.0"], "returned '1.0' of type str for completion 0;"),
        ([0.0, [1.0]], "returned [1.0] of type list for completion 1;"),
        ([1.0], "returned 1 rewards for 2 completions;"),
    ],
)
def test_a_reward_function_returning_no_list_of_numbers_is_named(returned, described):
    """TRL failed on these with `TypeError: 'float' object is not iterable` or `ValueError: too many dimensions
    'str'`, naming no function (a bad-input sweep, F13)."""
    import asyncio

    def my_reward(completions, **_):
        return returned

    async def my_async_reward(completions, **_):
        return returned

    message = rf"reward function 'my_reward' {re.escape(described)} {EXPECTED}"
    with pytest.raises(ValueError, match=message):
        nan_as_infinite(my_reward)(prompts=["p", "p"], completions=["a", "b"])  # as TRL calls it
    with pytest.raises(ValueError, match=message.replace("my_reward", "my_async_reward")):
        asyncio.run(nan_as_infinite(my_async_reward)(prompts=["p", "p"], completions=["a", "b"]))


def returns_nan_for_row_two(completions, **_):
    return [math.nan if i == 2 else 1.0 for i in range(len(completions))]


def skips_row_two(completions, **_):
    return [None if i == 2 else float(i % 2) for i in range(len(completions))]


@pytest.mark.slow
def test_a_reward_function_returning_nan_stops_the_step_and_none_does_not(tmp_path, char_tokenizer):
    """TRL reads None as NaN, "unscorable"; a NaN the function returned used to pass as that, silently."""
    trainer = _trainer(
        tmp_path / "nan", char_tokenizer, returns_nan_for_row_two, max_steps=1, save_strategy="no"
    )
    with pytest.raises(
        NonFiniteError, match=r"reward function 'returns_nan_for_row_two' returned NaN .* rows 2"
    ):
        trainer.train()
    _trainer(tmp_path / "none", char_tokenizer, skips_row_two, max_steps=1, save_strategy="no").train()


def _trainer(tmp_path, char_tokenizer, reward, **overrides):
    args = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, **{"max_steps": 2, "save_strategy": "steps", "save_steps": 1, **overrides})
    )
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=char_tokenizer,
    )


class SaveRecorder(TrainerCallback):
    def __init__(self, record) -> None:
        self.record = record

    def on_save(self, args, state, control, **kwargs) -> None:
        self.record()


def _parameters(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("method", ["grpo", "ps", "vps"])
def test_an_infinite_reward_stops_the_step_before_the_optimizer(tmp_path, char_tokenizer, method):
    calls = []

    def explodes_at_step_two(completions, **kwargs):
        calls.append(1)
        rewards = length_reward(completions)
        if len(calls) == 2:
            rewards[3] = math.inf
        return rewards

    trainer = _trainer(tmp_path, char_tokenizer, explodes_at_step_two, method=method, segmenter="newline")
    checkpoints = []
    trainer.add_callback(
        type(
            "Saved",
            (__import__("transformers").TrainerCallback,),
            {
                "on_save": lambda self, args, state, control, **kw: checkpoints.append(
                    _parameters(trainer.model)
                )
            },
        )()
    )
    with pytest.raises(
        NonFiniteError,
        match=r"step 1: reward function 'explodes_at_step_two' returned NaN or an infinite value in rows 3",
    ):
        trainer.train()
    assert trainer.state.global_step == 1
    after = _parameters(trainer.model)
    assert all(torch.equal(after[n], checkpoints[0][n]) for n in after)  # nothing moved after step 1's save
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "checkpoint-1")
    assert all(torch.equal(p, after[n]) for n, p in saved.named_parameters())  # the last checkpoint is intact


def test_a_nan_gradient_stops_the_step_before_the_optimizer(tmp_path, char_tokenizer):
    trainer = _trainer(tmp_path, char_tokenizer, length_reward, max_steps=1, save_strategy="no")
    before = _parameters(trainer.model)
    weight = trainer.model.model.layers[0].mlp.up_proj.weight
    weight.register_hook(lambda grad: grad * math.nan)
    with pytest.raises(
        NonFiniteError, match=r"step 0: NaN or infinite values in the loss|the gradient of model.layers.0"
    ):
        trainer.train()
    after = _parameters(trainer.model)
    assert all(torch.equal(before[n], after[n]) for n in before)


def test_a_diverged_model_stops_at_generation_with_one_line(tmp_path, char_tokenizer):
    """Weights an update blew up (finite gradients, too large a step) give NaN logits; generation comes first in
    a step, so torch.multinomial failed with ninety lines of traceback before any check ran (a review found it
    at --learning_rate 1e12)."""
    trainer = _trainer(tmp_path, char_tokenizer, length_reward, max_steps=1, save_strategy="no")
    with torch.no_grad():
        trainer.model.lm_head.weight.fill_(math.inf)
    with pytest.raises(
        NonFiniteError, match=r"step 0: the policy's sampling probabilities hold NaN or infinite"
    ):
        trainer.train()


def test_an_error_a_reward_function_raises_keeps_its_type_and_names_the_function():
    from psgrpo.guards import nan_as_infinite

    def needs_gold(completions, **kwargs):
        return [float(kwargs["gold"] == c) for c in completions]

    with pytest.raises(KeyError, match="gold") as raised:
        nan_as_infinite(needs_gold)(completions=["4"], answer=["4"])
    assert raised.value.__notes__ == ["(raised in reward function 'needs_gold')"]


def test_reward_results_trl_iterates_are_taken_as_it_takes_them():
    """TRL only iterates a reward function's result and builds a float32 tensor: a generator, ``[x]`` tensors and
    Decimals trained before the check and still do."""
    from decimal import Decimal

    from psgrpo.guards import reward_values

    assert reward_values("f", (r for r in [1, 0]), 2) == [1.0, 0.0]
    assert reward_values("f", [torch.tensor([0.5]), Decimal("0.25"), None], 3) == [0.5, 0.25, None]
    with pytest.raises(ValueError, match=r"reward function 'f' returned 1j of type complex for completion 0"):
        reward_values("f", [1j], 1)
