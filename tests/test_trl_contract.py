"""Every private TRL / transformers member psgrpo overrides or reads, checked in one place.

psgrpo extends ``trl.GRPOTrainer`` (pinned to trl 1.16) through members TRL does not promise to
keep. When a TRL bump changes one of them, this file fails first and says which; the fix is then
in the module named next to each entry.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict

import pytest
import torch
import transformers
import trl
from trainer_helpers import length_reward, tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

OVERRIDDEN = {
    # member: (class that defines it, its parameters after self, the psgrpo module that overrides it)
    "_generate_and_score_completions": (
        trl.GRPOTrainer,
        ["inputs"],
        "trainer.py, techniques/trainer_mixin.py",
    ),
    "_generate": (trl.GRPOTrainer, ["prompts"], "techniques/trainer_mixin.py (memory bank)"),
    "_calculate_rewards": (
        trl.GRPOTrainer,
        ["inputs", "prompts", "completions", "completion_ids_list"],
        "techniques/trainer_mixin.py (reward normalisation)",
    ),
    "_get_train_sampler": (trl.GRPOTrainer, ["dataset"], "techniques/trainer_mixin.py (curriculum)"),
    "_load_optimizer_and_scheduler": (transformers.Trainer, ["checkpoint"], "techniques/trainer_mixin.py"),
    "create_scheduler": (
        transformers.Trainer,
        ["num_training_steps", "optimizer"],
        "techniques (flat warm-up)",
    ),
    "_compute_loss": (trl.GRPOTrainer, ["model", "inputs"], "loss_hooks.py (GSPO-token)"),
    "get_off_policy_mask": (
        trl.GRPOTrainer,
        ["advantages", "per_token_logps", "sampling_per_token_logps", "mask", "off_policy_threshold"],
        "loss_hooks.py (sequence-level decision)",
    ),
    "get_gamma_weights": (
        trl.GRPOTrainer,
        ["advantages", "log_ratio_per_token", "mask", "importance_sampling_ratio"],
        "loss_hooks.py (one VESPO weight per sequence)",
    ),
}

CALLED = {
    # member: (its leading parameters after self that psgrpo passes, who calls it)
    "_get_per_token_logps_and_entropies": (
        ["model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"],
        "techniques/trainer_mixin.py (behaviour log-probs of the memory bank); loss_hooks.py wraps it on the "
        "instance for one GSPO-token loss call",
    ),
    "_generate_single_turn": (
        ["prompt_ids", "images", "multimodal_fields", "num_generations"],
        "tests/trainer_helpers.py (FixedRollouts: the distributed and compatibility tests)",
    ),
}

ATTRIBUTES = {
    # attribute read on a built trainer: who reads it
    "_metrics": "trainer.py, techniques (logging: mode -> name -> list of values)",
    "_tokenizer": "trainer.py (the processing class's tokenizer)",
    "_logs": "commands/inspect_credit.py (per-function rewards of the last batch)",
    "num_generations": "trainer.py, techniques",
    "num_generations_eval": "trainer.py",
    "eos_token_ids": "vps/signal.py (truncated completions)",
    "temperature": "vps/signal.py (entropies and probes at the sampling temperature)",
    "reward_func_names": "commands/inspect_credit.py",
    "reward_weights": "techniques/reward_norm.py, commands/inspect_credit.py",
    "scale_rewards": "techniques/trainer_mixin.py",
    "num_iterations": "techniques/trainer_mixin.py (curriculum sampler)",
    "tools": "techniques/trainer_mixin.py (memory bank support check)",
    "rollout_func": "techniques/trainer_mixin.py",
    "environment_factories": "techniques/trainer_mixin.py",
    "_step": "checkpoints/trainer_mixin.py (TRL's micro-step counter, saved and restored)",
    "_buffered_inputs": "checkpoints/trainer_mixin.py (generation batches reused within a cycle)",
    "importance_sampling_level": "loss_hooks.py (switched to 'token' for one GSPO-token loss call)",
}

GENERATE_RETURNS = 8
"""``GRPOTrainer._generate`` returns (prompt_ids, completion_ids, tool_mask, completions, logprobs,
extra_fields, images, tool_images); the memory bank unpacks and rebuilds it."""

OUTPUT_KEYS = {"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages"}
"""Keys of ``_generate_and_score_completions``'s output every psgrpo stage reads."""


def test_trl_is_the_pinned_minor():
    assert trl.__version__.startswith("1.16."), f"psgrpo is pinned to trl 1.16.x, found {trl.__version__}"


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_overridden_members_keep_their_signature(name):
    owner, parameters, where = OVERRIDDEN[name]
    assert hasattr(owner, name), f"{owner.__name__}.{name} is gone; psgrpo overrides it in {where}"
    found = [p for p in inspect.signature(getattr(owner, name)).parameters if p != "self"]
    assert found[: len(parameters)] == parameters, f"{owner.__name__}.{name}{found} changed; see {where}"


@pytest.mark.parametrize("name", sorted(CALLED))
def test_called_members_keep_their_signature(name):
    parameters, where = CALLED[name]
    assert hasattr(trl.GRPOTrainer, name), f"GRPOTrainer.{name} is gone; used by {where}"
    found = [p for p in inspect.signature(getattr(trl.GRPOTrainer, name)).parameters if p != "self"]
    assert found[: len(parameters)] == parameters, f"GRPOTrainer.{name}{found} changed; see {where}"


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, char_tokenizer):
    tmp = tmp_path_factory.mktemp("contract")
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**tiny_run_args(tmp, max_completion_length=8)),
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=char_tokenizer,
    )


@pytest.mark.parametrize("name", sorted(ATTRIBUTES))
def test_attributes_psgrpo_reads_exist(trainer, name):
    assert hasattr(trainer, name), f"GRPOTrainer no longer sets {name!r}; read by {ATTRIBUTES[name]}"


def test_compute_loss_reads_old_logps_after_its_forward():
    """GSPO-token (loss_hooks.py) sets the old log-probs from inside the loss forward, so TRL must read them after."""
    source = inspect.getsource(trl.GRPOTrainer._compute_loss)
    forward = source.index("self._get_per_token_logps_and_entropies(")
    assert forward < source.index('inputs.get("old_per_token_logps")'), "see psgrpo/loss_hooks.py"
    assert 'if self.importance_sampling_level == "token":' in source, "see psgrpo/loss_hooks.py"
    for hook in ("get_off_policy_mask", "get_gamma_weights"):  # the wrappers take keyword arguments only
        assert re.search(rf"self\.{hook}\(\s*advantages=advantages,", source), (
            f"_compute_loss no longer calls self.{hook}(advantages=..., ...); see psgrpo/loss_hooks.py"
        )


def test_metrics_and_logs_have_the_layout_psgrpo_writes_into(trainer):
    assert set(trainer._metrics) >= {"train", "eval"}
    assert (
        isinstance(trainer._metrics["train"], defaultdict)
        and trainer._metrics["train"].default_factory is list
    )
    assert "rewards" in trainer._logs


def test_generate_returns_the_tuple_the_memory_bank_rebuilds(trainer):
    rows = [dict(make_arith_dataset("train", n=1)[0]) for _ in range(trainer.num_generations)]
    trainer.model.train()
    result = trainer._generate([row["prompt"] for row in rows])
    assert isinstance(result, tuple) and len(result) == GENERATE_RETURNS
    prompt_ids, completion_ids, _, completions, *_ = result
    assert len(prompt_ids) == len(completion_ids) == len(completions) == len(rows)
    assert all(isinstance(ids, list) and all(isinstance(t, int) for t in ids) for ids in completion_ids)


def test_generate_and_score_output_and_rewards_shape(trainer):
    rows = [dict(make_arith_dataset("train", n=1)[0]) for _ in range(trainer.num_generations)]
    trainer.model.train()
    output = trainer._generate_and_score_completions(rows)
    assert OUTPUT_KEYS <= set(output)
    assert output["advantages"].shape == (len(rows),)  # grpo: TRL's own 1-D A_i (ps/vps: (B, T))
    assert trainer._last_rewards_per_func.shape == (len(rows), 1)  # (N, F) from _calculate_rewards
    logps, entropies = trainer._get_per_token_logps_and_entropies(
        trainer.model,
        torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1),
        torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1),
        output["completion_ids"].size(1),
        batch_size=4,
    )[:2]
    assert logps.shape == output["completion_ids"].shape
