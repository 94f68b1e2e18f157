"""The shipped accelerate configs (psgrpo/recipes/accelerate, also configs/accelerate) go through
``accelerate launch``'s own parsing: config file → validated launch arguments → the environment
the launcher exports → the DeepSpeed / FSDP plugin the Accelerator builds from it. No GPU and no
DeepSpeed are needed for that; nothing is launched.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from pathlib import Path
from unittest import mock

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils import DeepSpeedPlugin, DistributedType, FullyShardedDataParallelPlugin
from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env
from transformers.integrations import unset_hf_deepspeed_config

from psgrpo.loading import RECIPES_DIR

ACCELERATE_DIR = RECIPES_DIR / "accelerate"
EXPECTED = {
    "ddp.yaml": DistributedType.MULTI_GPU,
    "deepspeed_zero2.yaml": DistributedType.DEEPSPEED,
    "deepspeed_zero3.yaml": DistributedType.DEEPSPEED,
    "fsdp.yaml": DistributedType.FSDP,
}


def _launch_env(path: Path) -> tuple[object, dict[str, str]]:
    """What `accelerate launch --config_file path train.py` would export, without launching."""
    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, defaults, _ = _validate_launch_command(args)
    if args.use_deepspeed:  # as accelerate's launch_command does before calling the DeepSpeed launcher
        args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config)
        return args, prepare_deepspeed_cmd_env(args)[1]
    return args, prepare_multi_gpu_env(args)


def test_every_config_is_listed():
    assert sorted(p.name for p in ACCELERATE_DIR.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_parses_with_sane_keys(name):
    config = load_config_from_file(str(ACCELERATE_DIR / name))  # unknown keys raise here
    assert config.distributed_type == EXPECTED[name]
    assert (config.num_machines, config.machine_rank, config.use_cpu) == (1, 0, False)
    assert config.num_processes >= 2 and config.mixed_precision == "bf16"  # the GSM8K recipe trains in bf16
    args, env = _launch_env(ACCELERATE_DIR / name)
    assert args.num_processes == config.num_processes and env["ACCELERATE_MIXED_PRECISION"] == "bf16"


@pytest.mark.parametrize(("name", "stage"), [("deepspeed_zero2.yaml", 2), ("deepspeed_zero3.yaml", 3)])
def test_deepspeed_plugin_from_config(name, stage):
    _, env = _launch_env(ACCELERATE_DIR / name)
    assert env["ACCELERATE_USE_DEEPSPEED"] == "true"
    try:
        with mock.patch.dict(os.environ, env):
            plugin = DeepSpeedPlugin()
        zero = plugin.deepspeed_config["zero_optimization"]
        assert plugin.zero_stage == zero["stage"] == stage
        assert zero["offload_optimizer"]["device"] == zero["offload_param"]["device"] == "none"
        # ZeRO-3 only: partitioned init of the policy, and full 16-bit weights gathered when saving
        assert plugin.zero3_init_flag == zero["stage3_gather_16bit_weights_on_model_save"] == (stage == 3)
    finally:
        unset_hf_deepspeed_config()  # the plugin registers itself with transformers; keep other tests clean


def test_fsdp_plugin_from_config():
    _, env = _launch_env(ACCELERATE_DIR / "fsdp.yaml")
    assert env["ACCELERATE_USE_FSDP"] == "true"
    with mock.patch.dict(os.environ, env):
        plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is True
    assert plugin.state_dict_type.name == "FULL_STATE_DICT"  # save_model writes a normal checkpoint
    assert plugin.cpu_ram_efficient_loading  # the policy's weights are read on rank 0 and broadcast


def test_configs_are_package_data():
    """Every recipe file matches a package-data glob, so non-editable installs ship it."""
    pyproject = tomllib.loads((RECIPES_DIR.parents[1] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["psgrpo"]
    package = RECIPES_DIR.parent
    for path in RECIPES_DIR.rglob("*.yaml"):
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, g) and g.count("/") == relative.count("/") for g in globs), (
            relative
        )
