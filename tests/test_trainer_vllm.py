"""vLLM generation is TRL's: its options pass through ProcessGRPOConfig unchanged (YAML and flags),
and a missing vLLM is a clear error before anything is loaded. vLLM itself is not installed here.
"""

from __future__ import annotations

import re

import pytest
from trl import ModelConfig, TrlParser
from trl.import_utils import is_vllm_available

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig
from psgrpo.trainer import ProcessGRPOTrainer


def _parse(argv):
    return TrlParser((TaskConfig, ProcessGRPOConfig, ModelConfig)).parse_args_and_config(argv)


def test_server_mode_from_yaml_with_flag_override(tmp_path):
    recipe = tmp_path / "vllm.yaml"
    recipe.write_text(
        "method: vps\nuse_vllm: true\nvllm_mode: server\nvllm_server_host: 10.0.0.7\nvllm_server_port: 8000\n"
        f"output_dir: {tmp_path / 'out'}\nuse_cpu: true\n"
    )
    _, args, _ = _parse(
        ["--config", str(recipe), "--vllm_server_port", "8123", "--vllm_server_timeout", "30"]
    )
    assert (args.method, args.use_vllm, args.vllm_mode) == ("vps", True, "server")
    assert (args.vllm_server_host, args.vllm_server_port, args.vllm_server_timeout) == (
        "10.0.0.7",
        8123,
        30.0,
    )


def test_colocate_mode_from_flags(tmp_path):
    _, args, _ = _parse(
        ["--output_dir", str(tmp_path), "--use_cpu", "true", "--method", "ps", "--use_vllm", "true",
         "--vllm_mode", "colocate", "--vllm_gpu_memory_utilization", "0.25", "--vllm_tensor_parallel_size", "2",
         "--vllm_enable_sleep_mode", "true"]
    )  # fmt: skip
    assert (args.method, args.use_vllm, args.vllm_mode) == ("ps", True, "colocate")
    assert (args.vllm_gpu_memory_utilization, args.vllm_tensor_parallel_size) == (0.25, 2)
    assert args.vllm_enable_sleep_mode


@pytest.mark.skipif(is_vllm_available(), reason="vLLM is installed")
def test_missing_vllm_is_a_clear_error_before_loading(tmp_path):
    args = ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, use_vllm=True, vllm_mode="colocate")
    # The model path does not exist: the error must come before any attempt to load it.
    with pytest.raises(ImportError, match=re.escape("pip install -e '.[vllm]' in psgrpo's folder")):
        ProcessGRPOTrainer(model=str(tmp_path / "no-such-model"), args=args)
