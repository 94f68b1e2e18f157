"""A typo in a YAML recipe is an error naming the file, the option, the value and the allowed values."""

from __future__ import annotations

import os

import pytest
import yaml
from trl import ModelConfig

from psgrpo.config.parsing import ConfigError, ConfigParser
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig


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
    from psgrpo.config.parsing import check_unique_keys
    from psgrpo.loading import RECIPES_DIR

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
        "chat_template_kwargs: {enable_thinking: false}\n"
    )
    parser = ConfigParser(
        (TaskConfig, EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    with caplog.at_level("INFO", logger="psgrpo"):
        task, cfg = parser.parse_args_and_config(["--config", str(recipe), "--temperature", "0.5"])
    assert cfg.chat_template_kwargs == {"enable_thinking": False}  # prompts render as the recipe trained them
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


# ---- layers and short names (issue 27): a user YAML over the demo recipe, flags over both ----


def _train_parser():
    return ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig), prog="psgrpo train")


def _train(*argv: str):
    from psgrpo.loading import with_default_recipe

    return _train_parser().parse_args_and_config(with_default_recipe(list(argv)))


def _fields(config) -> dict:
    from dataclasses import fields

    return {f.name: getattr(config, f.name) for f in fields(config)}


def test_a_three_line_yaml_keeps_the_demo_values_it_does_not_set(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"method: vps\nvps_alpha: 0.8\noutput_dir: {tmp_path / 'run'}\n")
    task, args, model_args = _train("--config", str(mine))
    _, demo, _ = _train()
    assert (args.method, args.vps_alpha, args.output_dir) == ("vps", 0.8, str(tmp_path / "run"))
    # the demo's, not TRL's defaults (learning rate 1e-6, batch 8, no max_steps: three epochs)
    assert (args.learning_rate, args.per_device_train_batch_size, args.max_steps) == (3e-5, 64, 200)
    assert (args.learning_rate, args.num_generations, args.max_steps) == (
        demo.learning_rate,
        demo.num_generations,
        demo.max_steps,
    )
    assert (task.dataset, model_args.model_name_or_path) == ("arith", None)
    # flags over both layers
    _, flagged, _ = _train("--config", str(mine), "--vps_alpha", "1.6", "--max_steps", "7")
    assert (flagged.vps_alpha, flagged.max_steps, flagged.method) == (1.6, 7, "vps")


def test_later_config_files_layer_over_earlier_ones(tmp_path):
    base, over = tmp_path / "base.yaml", tmp_path / "over.yaml"
    base.write_text("learning_rate: 1.0e-5\nmax_steps: 9\nenv: {PSGRPO_TEST_LAYER_A: a}\n")
    over.write_text("max_steps: 4\nenv: {PSGRPO_TEST_LAYER_B: b}\n")
    _, args, _ = _train("--config", str(base), f"--config={over}", "--output_dir", str(tmp_path / "o"))
    assert (args.learning_rate, args.max_steps) == (1e-5, 4)
    import os

    assert (os.environ.pop("PSGRPO_TEST_LAYER_A"), os.environ.pop("PSGRPO_TEST_LAYER_B")) == ("a", "b")


def test_a_config_file_given_twice_is_read_once_at_its_last_place(tmp_path):
    from psgrpo.config.parsing import split_config_args

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("max_steps: 3\nlearning_rate: 2.0e-5\n")
    b.write_text("max_steps: 7\n")
    paths, rest = split_config_args(["--config", str(a), "--config", str(b), f"--config={a}", "--seed", "1"])
    assert (paths, rest) == ([b, a], ["--seed", "1"])  # a, b, a means what b, a means
    _, args, _ = _train(
        "--config", str(a), "--config", str(b), "--config", str(a), "--output_dir", str(tmp_path / "o")
    )
    assert (args.max_steps, args.learning_rate) == (3, 2e-5)


def test_a_yaml_that_changes_the_step_scorer_drops_the_demos_scorer_kwargs(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("step_scorer: arithmetic\n")
    _, args, _ = _train("--config", str(mine), "--output_dir", str(tmp_path / "o"))
    _, demo, _ = _train()
    assert demo.step_scorer == "reference" and demo.step_scorer_kwargs  # the demo's reference weights
    assert (args.step_scorer, args.step_scorer_kwargs) == ("arithmetic", {})
    kept = tmp_path / "kept.yaml"
    kept.write_text(
        "step_scorer: arithmetic\nstep_scorer_kwargs: {correct_weight: 1.0, necessary_weight: 0.0}\n"
    )
    _, args, _ = _train("--config", str(kept), "--output_dir", str(tmp_path / "o"))
    assert args.step_scorer_kwargs == {"correct_weight": 1.0, "necessary_weight": 0.0}


@pytest.mark.parametrize("name", ["demo", "arith-hard", "gsm8k-qwen2.5-0.5b"])
def test_short_names_work_from_any_directory_and_mean_the_packaged_recipe(tmp_path, monkeypatch, name):
    from psgrpo.config.parsing import recipe_names

    monkeypatch.chdir(tmp_path)  # no configs/ here
    path = recipe_names()[name]
    flags = ["--use_cpu", "true"]  # the GSM8K recipe asks for bf16, which a CPU-only test machine may lack
    by_name = _train("--config", name, *flags)
    by_path = _train_parser().parse_args_and_config(["--config", str(path), *flags])  # the file on its own
    # a packaged recipe sets every key of the demo it layers over: layered or alone, the same config
    for layered, alone in zip(by_name, by_path, strict=True):
        assert _fields(layered) == _fields(alone)
    assert by_name[1].output_dir == yaml.safe_load(path.read_text())["output_dir"]


def test_every_packaged_recipe_sets_the_demo_recipes_keys():
    from psgrpo.config.parsing import recipe_names
    from psgrpo.loading import DEFAULT_RECIPE

    demo = set(yaml.safe_load(DEFAULT_RECIPE.read_text()))
    for name, path in recipe_names().items():
        missing = (
            demo - set(yaml.safe_load(path.read_text())) - {"step_scorer_kwargs"}
        )  # dropped with the scorer
        assert not missing, f"{name} ({path.name}) inherits {sorted(missing)} from the demo recipe"


def test_the_checkout_configs_folder_points_at_the_packaged_recipes():
    from psgrpo.loading import RECIPES_DIR

    configs = RECIPES_DIR.parents[1] / "configs"
    if not configs.exists():
        pytest.skip("not a checkout")
    assert configs.resolve() == RECIPES_DIR.resolve()
    _, args, _ = _train("--config", str(configs / "arith_hard.yaml"))
    assert args.output_dir == "outputs/arith-hard"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "dmeo",
            "config file dmeo does not exist; give a YAML file or a packaged recipe name: arith-hard, demo",
        ),
        (
            "configs/demo.yaml",
            "config file configs/demo.yaml does not exist (the packaged one is --config demo)",
        ),
    ],
)
def test_an_unknown_name_or_missing_file_is_one_line_listing_the_names(tmp_path, monkeypatch, value, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        _train("--config", value)
    assert message in str(err.value) and "gsm8k-qwen2.5-0.5b" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="--config needs a YAML file or a packaged recipe name: arith-hard"):
        _train("--config")


def test_an_unknown_key_is_named_with_its_file_before_a_bad_value(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("vps_alpha: .nan\nmax_stpes: 10\n")
    with pytest.raises(ConfigError) as err:
        _train("--config", str(mine))
    assert f"unknown option(s) ['--max_stpes', '10'] in {mine}" in str(err.value)
    assert "--max_steps" in str(err.value)  # did you mean


def test_help_lists_config_and_the_values_the_run_uses(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text("learning_rate: 7.0e-6\n")
    with pytest.raises(SystemExit):
        _train("--help")
    demo_help = " ".join(capsys.readouterr().out.split())
    assert "--config CONFIG YAML recipe: a file, or a packaged recipe by name" in demo_help
    assert "(default: demo.yaml)" in demo_help
    assert "The initial learning rate for AdamW (default: 3e-05)" in demo_help  # the demo's, used by a run
    with pytest.raises(SystemExit):
        _train("--config", str(mine), "--help")
    mine_help = " ".join(capsys.readouterr().out.split())
    assert "The initial learning rate for AdamW (default: 7e-06)" in mine_help
    assert "The batch size per device for training (default: 64)" in mine_help  # still the demo's
    assert "(default: demo.yaml mine.yaml)" in mine_help


def test_eval_takes_short_names_too(tmp_path, monkeypatch):
    from psgrpo.commands.evaluate import EvalConfig, training_options

    monkeypatch.chdir(tmp_path)
    parser = ConfigParser(
        (TaskConfig, EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    task, cfg = parser.parse_args_and_config(["--config", "arith-hard"])
    assert (task.dataset, cfg.model_name_or_path) == ("arith-hard", "embedded:arith-hard")


# ---- bad input (issue 27): malformed YAML, near-miss flags, a flag that replaces the recipe's scorer ----


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("method: ps\nlearning_rate: [1.0e-5\nmax_steps: 3\n", r"line 3, column \d+: not valid YAML"),
        ("method: ps\n  max_steps: 3\n", r"line 2, column \d+: not valid YAML"),
        ('dataset: "gsm8k\n', r"line 2, column 1: not valid YAML \(while scanning a quoted scalar"),
        ("- method: ps\n- max_steps: 3\n", "a config file holds `option: value` lines .* not a list"),
    ],
)
def test_malformed_yaml_is_one_error_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig))
    with pytest.raises(ConfigError, match=f"{path}: {message}"):
        parser.parse_args_and_config(["--config", str(path)])


def test_a_scorer_flag_drops_the_recipes_scorer_kwargs_unless_given(tmp_path):
    recipe = {"method": "ps", "step_scorer": "reference", "step_scorer_kwargs": {"reference_weight": 1.0}}
    _, (_, args, _) = _parse(tmp_path, recipe, "--step_scorer", "arithmetic")
    assert (args.step_scorer, args.step_scorer_kwargs) == ("arithmetic", {})
    _, (_, args, _) = _parse(tmp_path, recipe, "--step_scorer=reference")  # the same scorer: kept
    assert args.step_scorer_kwargs == {"reference_weight": 1.0}
    kwargs = '{"correct_weight": 0.5, "necessary_weight": 0.5}'
    _, (_, args, _) = _parse(tmp_path, recipe, "--step_scorer", "arithmetic", "--step_scorer_kwargs", kwargs)
    assert args.step_scorer_kwargs == {"correct_weight": 0.5, "necessary_weight": 0.5}


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("dataset_name", "--dataset"), ("max_stpes", "--max_steps"), ("output-dirr", "--output_dir")],
)
def test_near_miss_flags_get_the_nearest_options(tmp_path, typed, suggested):
    with pytest.raises(ConfigError, match=f"did you mean {suggested}"):
        _parse(tmp_path, {}, f"--{typed}", "1")


def test_a_flag_far_from_every_option_gets_no_guess(tmp_path):
    with pytest.raises(ConfigError) as info:
        _parse(tmp_path, {}, "--zzqx", "1")
    assert "did you mean" not in str(info.value)


def test_typed_options_reads_both_spellings():
    from psgrpo.config.parsing import typed_options

    argv = ["--step-scorer", "prm", "--max_steps=3", "--bf16", "--method", "ps"]
    assert typed_options(argv) == {"step_scorer": "prm", "max_steps": "3", "bf16": "", "method": "ps"}


def test_kwargs_follow_their_component_across_layers():
    from hypothesis import given
    from hypothesis import strategies as st

    from psgrpo.config.parsing import drop_foreign_component_kwargs

    scorers = st.sampled_from(["arithmetic", "reference", "prm"])

    @given(base_scorer=scorers, new_scorer=st.one_of(st.none(), scorers), new_kwargs=st.booleans())
    def check(base_scorer, new_scorer, new_kwargs):
        base = {"step_scorer": base_scorer, "step_scorer_kwargs": {"w": 1}, "segmenter_kwargs": {"p": "x"}}
        override = {} if new_scorer is None else {"step_scorer": new_scorer}
        if new_kwargs:
            override["step_scorer_kwargs"] = {"w": 2}
        kept = drop_foreign_component_kwargs(base, override)
        replaced = new_scorer is not None and new_scorer != base_scorer
        assert ("step_scorer_kwargs" in kept) == (not replaced or new_kwargs)
        assert kept["segmenter_kwargs"] == {"p": "x"} and base["step_scorer_kwargs"] == {
            "w": 1
        }  # base untouched

    check()


def test_a_parser_reused_for_another_command_line_forgets_the_previous_files(tmp_path):
    parser = _train_parser()
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("max_steps: 9\nstep_scorer: reference\nstep_scorer_kwargs: {reference_weight: 1.0}\n")
    second.write_text("step_scorer: arithmetic\n")
    _, args, _ = parser.parse_args_and_config(["--config", str(first), "--output_dir", str(tmp_path)])
    assert (args.max_steps, args.step_scorer_kwargs) == (9, {"reference_weight": 1.0})
    _, args, _ = parser.parse_args_and_config(["--config", str(second), "--output_dir", str(tmp_path)])
    assert (args.max_steps, args.step_scorer, args.step_scorer_kwargs) == (-1, "arithmetic", {})


def test_eval_drops_a_training_recipes_train_only_task_options(tmp_path):
    from psgrpo.commands.evaluate import EvalConfig, eval_task_config, training_options

    recipe = tmp_path / "train.yaml"
    recipe.write_text(
        "dataset: arith-hard\nheldout_eval_steps: 5\nmax_train_examples: 10\nmax_eval_examples: 7\n"
    )
    parser = ConfigParser(
        (eval_task_config(), EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    task, _ = parser.parse_args_and_config(["--config", str(recipe)])
    assert (task.dataset, task.max_eval_examples) == ("arith-hard", 7) and not hasattr(
        task, "heldout_eval_steps"
    )
    with pytest.raises(ConfigError, match="heldout_eval_steps"):  # typed to eval: not one of its options
        parser.parse_args_and_config(["--heldout_eval_steps", "3"])


def test_help_all_states_one_default_per_option(capsys):
    """--help-all: argparse's "(default: X)" unless the help text states its own; "(this run: X)" where a recipe
    set another value than the field's (the demo's step scorer), never both."""
    import re

    with pytest.raises(SystemExit):
        _train("--help-all")
    blocks = [" ".join(b.split()) for b in re.split(r"\n(?=  -)", capsys.readouterr().out)]
    assert len(blocks) > 250
    assert not [b[:80] for b in blocks if b.count("(default: ") + b.count("(this run: ") > 1]
    # "--step_scorer {…}, --step-scorer {…}" up to Python 3.12; "--step_scorer, --step-scorer {…}" from 3.13
    (scorer,) = [b for b in blocks if re.match(r"--step_scorer[ ,]", b)]
    assert scorer.endswith("(this run: reference)")
    (ps_lambda,) = [b for b in blocks if re.match(r"--ps_lambda[ ,]", b)]
    assert "(default: " not in ps_lambda  # its text states the default, which the run uses


def test_the_dropped_kwargs_note_waits_for_a_command_line_that_parses(tmp_path, caplog):
    """The demo recipe's step_scorer_kwargs belong to 'reference': swapping the scorer drops them with one
    INFO note, logged only once everything parsed, so that a bad value's error line is the only output."""
    note = "step_scorer_kwargs of"
    with (
        caplog.at_level("INFO", logger="psgrpo"),
        pytest.raises(ConfigError, match="'nonsense' is not allowed"),
    ):
        _train("--step_scorer", "nonsense", "--output_dir", str(tmp_path))
    assert note not in caplog.text
    with caplog.at_level("INFO", logger="psgrpo"):
        _, args, _ = _train("--step_scorer", "arithmetic", "--output_dir", str(tmp_path))
    assert args.step_scorer_kwargs == {}
    assert f"{note} " in caplog.text and "so they are not used with step_scorer 'arithmetic'" in caplog.text


def test_a_training_recipe_under_an_eval_config_drops_only_its_own_keys(tmp_path, caplog):
    """``--config train.yaml --config ev.yaml``: ev.yaml's temperature and output_dir stay (they were dropped with
    the recipe's, silently sampling at the recipe's temperature and writing nothing; a review, 2026-12-07)."""
    from psgrpo.commands.evaluate import EvalConfig, training_options

    recipe = tmp_path / "train.yaml"
    recipe.write_text(
        "method: ps\nlearning_rate: 3.0e-5\ndataset: arith-hard\noutput_dir: outputs/run\ntemperature: 1.0\n"
    )
    mine = tmp_path / "ev.yaml"
    mine.write_text("do_sample: true\nnum_samples: 4\ntemperature: 0.7\noutput_dir: out/eval_hard\n")
    parser = ConfigParser(
        (TaskConfig, EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    with caplog.at_level("INFO", logger="psgrpo"):
        task, cfg = parser.parse_args_and_config(["--config", str(recipe), "--config", str(mine)])
    assert (cfg.temperature, cfg.output_dir, cfg.do_sample, task.dataset) == (
        0.7,
        "out/eval_hard",
        True,
        "arith-hard",
    )
    assert f"{recipe} is another command's config; ignored: learning_rate, method" in caplog.text


def test_a_kernel_cache_variable_in_a_recipes_env_is_checked_when_it_is_read(tmp_path, monkeypatch):
    """The CLI checks the shell's LRU_CACHE_CAPACITY before parsing; one a YAML `env:` sets was only refused by the
    trainer, after the model had loaded (a review, 2026-12-07). It is one line naming the file now."""
    from psgrpo.loading import load_recipe

    monkeypatch.delenv("LRU_CACHE_CAPACITY", raising=False)
    recipe = tmp_path / "r.yaml"
    recipe.write_text('env: {LRU_CACHE_CAPACITY: "0"}\n')
    with pytest.raises(ValueError, match=r"r.yaml: env: \$LRU_CACHE_CAPACITY='0': expected an integer >= 1"):
        load_recipe(str(recipe))
    assert "LRU_CACHE_CAPACITY" not in os.environ  # nothing set


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ('{"": "1"}', r"env: '' is not an environment variable name"),
        ('{"A=B": "1"}', r"env: 'A=B' is not an environment variable name"),
        (
            "{PSGRPO_TEST_EMPTY: }",
            r"env: PSGRPO_TEST_EMPTY: expected one value \(a string or a number\), got None",
        ),
        ("{PSGRPO_TEST_LIST: [1, 2]}", r"env: PSGRPO_TEST_LIST: expected one value"),
    ],
)
def test_an_env_entry_the_os_cannot_take_is_named_with_its_file(tmp_path, env, message):
    """``os.environ`` raised a bare ``ValueError: illegal environment variable name`` (or set the text "None")."""
    from psgrpo.loading import load_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"env: {env}\n")
    with pytest.raises(ValueError, match=r"r.yaml: " + message):
        load_recipe(str(recipe))
    assert "PSGRPO_TEST_EMPTY" not in os.environ and "PSGRPO_TEST_LIST" not in os.environ  # nothing set


def test_env_numbers_and_booleans_are_set_as_text(tmp_path, monkeypatch):
    from psgrpo.loading import load_recipe

    for name in ("PSGRPO_TEST_NUMBER", "PSGRPO_TEST_FLAG"):
        monkeypatch.delenv(name, raising=False)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("env: {PSGRPO_TEST_NUMBER: 2, PSGRPO_TEST_FLAG: true}\n")
    load_recipe(str(recipe))
    assert (os.environ["PSGRPO_TEST_NUMBER"], os.environ["PSGRPO_TEST_FLAG"]) == ("2", "True")
    for name in ("PSGRPO_TEST_NUMBER", "PSGRPO_TEST_FLAG"):
        monkeypatch.delenv(name)
