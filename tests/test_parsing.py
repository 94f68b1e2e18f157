"""A typo in a YAML recipe is an error naming the file, the option, the value and the allowed values."""

from __future__ import annotations

import pytest
import yaml
from trl import ModelConfig

from psgrpo.config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig
from psgrpo.parsing import ConfigError, ConfigParser


def _parse(tmp_path, recipe: dict, *flags: str):
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "out"), "use_cpu": True, **recipe}))
    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig))
    return path, parser.parse_args_and_config(["--config", str(path), *flags])


@pytest.mark.parametrize(
    ("option", "typo", "allowed"),
    [
        ("vps_boundaries", "marker", "'entropy', 'markers'"),
        ("method", "vsp", "'grpo', 'ps', 'vps'"),
        ("ps_advantage_mode", "reward-to-go", "'auto', 'step', 'min', 'pure_min', 'reward_to_go'"),
        ("segmenter", "lines", "'markers', 'newline', 'paragraph', 'single'"),
        ("step_scorer", "verifier", "'arithmetic', 'prm'"),
        ("kl_schedule", "exp", "'none', 'linear', 'cosine'"),
    ],
)
def test_a_yaml_typo_names_file_option_value_and_allowed_values(tmp_path, option, typo, allowed):
    with pytest.raises(ConfigError) as err:
        _parse(tmp_path, {option: typo})
    message = str(err.value)
    assert str(tmp_path / "recipe.yaml") in message
    assert f"{option}: {typo!r} is not allowed; choose one of {allowed}" in message


def test_trl_choice_options_are_checked_in_yaml_too(tmp_path):
    path = tmp_path / "recipe.yaml"
    with pytest.raises(ConfigError, match=f"{path}: lr_scheduler_type: 'constnt' is not allowed"):
        _parse(tmp_path, {"lr_scheduler_type": "constnt"})
    # TRL checks these only at the first loss, after loading; psgrpo at config time
    for option, typo in (
        ("loss_type", "grpoo"),
        ("scale_rewards", "groups"),
        ("importance_sampling_level", "seq"),
    ):
        with pytest.raises(ConfigError, match=rf"{option}='{typo}' is not allowed; choose one of .*{path}"):
            _parse(tmp_path, {option: typo})


def test_good_yaml_values_parse_and_flags_override(tmp_path):
    _, (_, args, _) = _parse(tmp_path, {"vps_boundaries": "markers", "method": "vps"}, "--method", "ps")
    assert args.vps_boundaries == "markers" and args.method == "ps"


def test_range_errors_name_the_config_file(tmp_path):
    path = tmp_path / "recipe.yaml"
    with pytest.raises(ConfigError, match=rf"vps_alpha=nan is not a finite number.*{path}"):
        _parse(tmp_path, {"vps_alpha": float("nan")})


def test_a_key_set_twice_is_refused_with_both_lines(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(f"output_dir: {tmp_path / 'out'}\nuse_cpu: true\nvps_alpha: 0.8\nvps_alpha: 1.6\n")
    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig))
    with pytest.raises(ConfigError, match=rf"{path}: line 4: 'vps_alpha' is set twice \(first on line 3\)"):
        parser.parse_args_and_config(["--config", str(path)])


def test_shipped_recipes_set_each_key_once():
    from psgrpo.loading import RECIPES_DIR
    from psgrpo.parsing import check_unique_keys

    recipes = sorted(RECIPES_DIR.rglob("*.yaml"))
    assert len(recipes) >= 3
    for recipe in recipes:
        check_unique_keys(str(recipe))


def test_missing_config_file(tmp_path):
    parser = ConfigParser((ProcessGRPOConfig,))
    with pytest.raises(ConfigError, match="config file .*nope.yaml does not exist"):
        parser.parse_args_and_config(["--config", str(tmp_path / "nope.yaml")])


def test_an_unknown_option_names_itself_and_the_command():
    from psgrpo.commands.evaluate import EvalConfig

    parser = ConfigParser((TaskConfig, EvalConfig), prog="psgrpo eval")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['--bf16', 'false'\].*`psgrpo eval --help`"):
        parser.parse_args_and_config(["--bf16", "false"])


def test_eval_reads_a_training_recipe_task_and_model_and_ignores_the_rest(tmp_path, caplog):
    from psgrpo.commands.evaluate import EvalConfig, training_options

    recipe = tmp_path / "train.yaml"
    recipe.write_text(
        "method: ps\nlearning_rate: 3.0e-5\ndataset: arith-hard\nmodel_name_or_path: embedded:arith-hard\n"
        "output_dir: outputs/arith-hard\ntemperature: 1.0\nmax_eval_examples: 7\n"
    )
    parser = ConfigParser(
        (TaskConfig, EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    with caplog.at_level("INFO", logger="psgrpo"):
        task, cfg = parser.parse_args_and_config(["--config", str(recipe), "--temperature", "0.5"])
    assert (task.dataset, task.max_eval_examples, cfg.model_name_or_path) == (
        "arith-hard",
        7,
        "embedded:arith-hard",
    )
    assert cfg.output_dir is None and cfg.temperature == 0.5  # the run's output_dir is not the evaluation's
    assert (
        "is another command's config; ignored: learning_rate, method, output_dir, temperature" in caplog.text
    )


def test_an_eval_config_keeps_its_own_shared_keys_and_a_typo_is_still_an_error(tmp_path):
    from psgrpo.commands.evaluate import EvalConfig, training_options

    parser = ConfigParser(
        (TaskConfig, EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    own = tmp_path / "eval.yaml"
    own.write_text("output_dir: outputs/eval\ntemperature: 0.7\n")  # no training-only key: an eval config
    _, cfg = parser.parse_args_and_config(["--config", str(own)])
    assert (cfg.output_dir, cfg.temperature) == ("outputs/eval", 0.7)
    typo = tmp_path / "typo.yaml"
    typo.write_text("learning_rate: 1.0e-5\nmax_eval_exampels: 7\n")
    with pytest.raises(ConfigError, match="max_eval_exampels"):
        parser.parse_args_and_config(["--config", str(typo)])
