"""configs/arith_hard.yaml: the testbed recipe parses, and its checkpoint and dataset resolve."""

from __future__ import annotations

from pathlib import Path

from trl import ModelConfig

from psgrpo.config.parsing import ConfigParser
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig, load_task_split
from psgrpo.loading import RECIPES_DIR, checkpoint_path


def test_the_recipe_trains_on_arith_hard_from_its_own_checkpoint(tmp_path):
    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig), prog="psgrpo train")
    task, args, model_args = parser.parse_args_and_config(
        ["--config", str(RECIPES_DIR / "arith_hard.yaml"), "--output_dir", str(tmp_path)]
    )
    assert task.dataset == "arith-hard" and args.max_completion_length == task.eval_max_new_tokens == 256
    assert args.bf16 is False and args.use_cpu
    folder = Path(checkpoint_path(model_args.model_name_or_path))
    assert folder.name == "arith-hard" and (folder / "model.safetensors").exists()
    row = load_task_split(task, task.eval_split, limit=1)[0]
    assert "does" in row["prompt"]  # arith-hard questions name whom they ask about
