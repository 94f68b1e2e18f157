"""``method='tree'``'s options: checked when the config is built (or by the method's check, or on the command
line), before anything loads. Config-only and fast: unlike test_trainer_tree.py these are not marked slow, so
`make test-fast` and the minimum-versions run check them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from trainer_helpers import tiny_run_args

from psgrpo.commands.cli import main
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.methods import get_method


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"tree_branching": [2, 2, 2], "num_generations": 4},
            r"--tree_branching 2 2 2 has 8 leaves but --num_generations is 4",
        ),
        (
            {"tree_branching": [2, 2], "tree_segment_tokens": 24},
            r"--tree_segment_tokens 24 × 1 inner levels = 24 tokens .* --max_completion_length 24",
        ),
        ({"tree_branching": [2, 0]}, r"tree_branching=\[2, 0\] must be one or more integers ≥ 1"),
        ({"memory_bank": True}, "method='tree' cannot be combined with memory_bank"),
        ({"reward_norm_momentum": 0.99}, "method='tree' cannot be combined with reward_norm_momentum"),
        ({"tree_lambda": -1.0}, r"tree_lambda=-1.0 is outside its range"),
        (
            {"tree_lambda": 0.0},
            r"--tree_lambda 0 with --tree_outcome_weight 0 .* add --tree_outcome_weight 1",
        ),
        ({"tree_boundaries": "steps"}, r"tree_boundaries.*'steps'.*tokens.*lines.*entropy"),
    ],
)
def test_bad_tree_options_are_refused_when_the_config_is_built(tmp_path, fields, message):
    base = tiny_run_args(tmp_path, per_device_train_batch_size=8)
    with pytest.raises(ValueError, match=message):
        ProcessGRPOConfig(**{**base, "method": "tree", **fields})


def test_each_process_must_hold_whole_groups():
    """2 processes × 6 rows hold 3 groups of 4, but a group would straddle them: refused (TRL accepts it)."""
    config = SimpleNamespace(
        method="tree",
        tree_branching=[2, 2],
        tree_segment_tokens=4,
        tree_boundaries="tokens",
        tree_outcome_weight=0.0,
        tree_lambda=1.0,
        num_generations=4,
        max_completion_length=24,
        per_device_train_batch_size=6,
        steps_per_generation=1,
        memory_bank=False,
        reward_norm_momentum=None,
    )
    with pytest.raises(
        ValueError, match=r"\(--per_device_train_batch_size 6 × steps_per_generation 1 = 6\) must be"
    ):
        get_method("tree").check(config)
    config.steps_per_generation = 2  # 12 rows per process: whole groups
    get_method("tree").check(config)


def test_defaults_and_what_tree_accepts(tmp_path):
    config = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, num_generations=8, max_completion_length=128), method="tree"
    )
    assert config.tree_branching == [2, 2, 2] and config.tree_segment_tokens == 32
    assert (config.tree_outcome_weight, config.tree_lambda) == (0.0, 1.0)
    # ΔV is in reward units like A_i without a std: scale_rewards='none' is fine for tree (not for ps / vps)
    ProcessGRPOConfig(**tiny_run_args(tmp_path), method="tree", scale_rewards="none")
    # another method ignores a tree that does not fit its group size
    ProcessGRPOConfig(**tiny_run_args(tmp_path), method="grpo", tree_branching=[3, 3])


def test_vllm_is_accepted_for_tree(tmp_path):
    """Tree sampling has a vLLM path, checked against a scripted stand-in in tests/tree/test_sampling.py."""
    config = ProcessGRPOConfig(**tiny_run_args(tmp_path), method="tree", use_vllm=True)
    assert config.use_vllm and config.method == "tree"


def test_a_bad_branching_is_one_line_from_the_command(monkeypatch, capsys):
    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    assert main(["train", "--method", "tree", "--tree_branching", "2", "3"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "--tree_branching 2 3 has 6 leaves but --num_generations is 8" in lines[0]
