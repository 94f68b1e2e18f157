"""psgrpo compare: option handling, resume checks, and the whole command on a tiny budget."""

from __future__ import annotations

import csv
import json
import logging
import shutil
from pathlib import Path

import pytest
from PIL import Image

from psgrpo.commands.cli import main
from psgrpo.commands.compare import (
    CompareConfig,
    compare,
    compare_arms,
    parse_compare_args,
    run_recipe,
    strip_compare_flags,
)
from psgrpo.compare.settings import (
    RESULT_NEUTRAL,
    finished_run,
    flag_values,
    recipe_defaults,
    settings_diff,
    with_recipe_defaults,
)
from psgrpo.loading import DEFAULT_RECIPE, RECIPES_DIR


def test_flag_values_normalise_names_and_keep_the_last():
    flags = [
        "--max_steps",
        "2",
        "--methods=grpo",
        "--seeds",
        "0",
        "-1",
        "--eval-every",
        "5",
        "--bf16",
        "--max_steps",
        "3",
    ]
    assert flag_values(flags) == {
        "max_steps": ["3"],
        "methods": ["grpo"],
        "seeds": ["0", "-1"],
        "eval_every": ["5"],
        "bf16": [],
    }
    with pytest.raises(ValueError, match="expected an option"):
        flag_values(["2", "--max_steps"])


def test_settings_diff_lists_each_changed_setting():
    before = {"recipe": {"lr": 1e-5, "beta": 0.0}, "flags": {"max_steps": ["2"]}}
    after = {"recipe": {"lr": 1e-5}, "flags": {"max_steps": ["3"], "seed": ["1"]}}
    assert settings_diff(before, after) == [
        "flags.max_steps: ['2'] → ['3']",
        "flags.seed: None → ['1']",
        "recipe.beta: 0.0 → None",
    ]
    assert settings_diff(after, after) == []
    speed_only = {"recipe": {"lr": 1e-5, "gradient_checkpointing": False}, "flags": {"report_to": ["none"]}}
    assert settings_diff(after | {"flags": {}}, speed_only, ignore=RESULT_NEUTRAL) == []
    assert settings_diff(speed_only, {"recipe": {"lr": 1e-5}, "flags": {}}, ignore=RESULT_NEUTRAL) == []
    assert settings_diff(before, speed_only, ignore=RESULT_NEUTRAL) == [
        "flags.max_steps: ['2'] → None",
        "recipe.beta: 0.0 → None",
    ]


def test_strip_compare_flags_keeps_training_options():
    flags = ["--methods", "grpo", "ps", "--seed", "3", "--seeds=0", "--eval-every", "5", "--max_steps", "7"]
    assert strip_compare_flags(flags) == ["--seed", "3", "--max_steps", "7"]


def test_run_recipe_drops_compare_keys():
    assert run_recipe({"methods": ["ps"], "eval_every": 5, "max_steps": 10, "method": "vps"}) == {
        "max_steps": 10,
        "method": "vps",
    }


def test_default_is_the_demo_recipe_with_the_statistical_protocol():
    recipe, flags, args, cfg = parse_compare_args([])
    assert recipe == DEFAULT_RECIPE
    assert (cfg.methods, cfg.seeds, cfg.eval_every) == (["grpo", "ps", "vps"], [0, 1, 2, 3, 4], 25)
    assert (args.output_dir, args.max_steps, args.save_strategy) == ("outputs/compare", 100, "no")
    assert flag_values(flags)["max_eval_examples"] == ["1000"] and flag_values(flags)["eval_batch_size"] == [
        "250"
    ]
    # Flags override compare's defaults; with --config, the recipe's values stand.
    _, _, args, _ = parse_compare_args(["--max_steps", "7", "--output_dir", "x"])
    assert (args.max_steps, args.output_dir) == (7, "x")
    recipe, flags, args, _ = parse_compare_args(["--config", str(RECIPES_DIR / "demo.yaml"), "--seeds", "4"])
    assert (args.max_steps, args.output_dir, flags) == (200, "outputs/demo", ["--seeds", "4"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--methods", "grpo", "ppo"], "--methods takes one or more of grpo, ps, vps"),
        (["--seeds", "1", "1"], "--seeds must list distinct values"),
        (["--eval_every", "0"], "--eval_every must be a positive"),
        (["--temperature", "0"], "--temperature"),  # the pre-load checks of psgrpo train
        (["--max_completion_length", "0"], "--max_completion_length"),
    ],
)
def test_bad_options_fail_before_training(tmp_path, flags, message):
    with pytest.raises(ValueError, match=message):
        compare(["--output_dir", str(tmp_path), *flags])
    assert not (tmp_path / "runs").exists()


def test_arms_default_to_one_per_method_and_parse_label_and_flags():
    assert compare_arms(CompareConfig(methods=["grpo", "vps"])) == [
        ("grpo", ["--method", "grpo"]),
        ("vps", ["--method", "vps"]),
    ]
    arms = CompareConfig(arms=["grpo=--method grpo", " vps-a0.8 = --method vps --vps_alpha 0.8"])
    assert compare_arms(arms) == [
        ("grpo", ["--method", "grpo"]),
        ("vps-a0.8", ["--method", "vps", "--vps_alpha", "0.8"]),
    ]


@pytest.mark.parametrize(
    ("arms", "message"),
    [
        (["--method vps"], "expected 'LABEL=FLAGS'"),
        (["a/b=--method vps"], "expected 'LABEL=FLAGS'"),
        (["a=--method vps", "a=--method ps"], "the label 'a' appears twice"),
        (["a=--method vps --seed 3"], "sets --seed, which compare sets"),
        (["a=--method vps --output_dir x"], "sets --output_dir"),
    ],
)
def test_bad_arms_are_refused_naming_the_entry(arms, message):
    with pytest.raises(ValueError, match=message):
        compare_arms(CompareConfig(arms=arms))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--arms", "a=--method ppo"], r"--arms 'a': its flags '--method ppo' are not valid"),
        (["--arms", "a=--method vps --vps_alpha x"], r"--arms 'a': its flags"),
        (["--arms", "a=--method vps", "--methods", "grpo"], "give --methods or --arms, not both"),
        (  # shlex strips the JSON's own quotes: say how to quote it, and name the demo recipe once
            ["--arms", 'a=--method ps --step_scorer_kwargs {"correct_weight": 0.5}'],
            r"from \S+demo\.yaml and the command line\) \(an arm's flags are split like a shell line, so quote",
        ),
    ],
)
def test_arm_flags_are_checked_before_training(tmp_path, flags, message):
    with pytest.raises(ValueError, match=message):
        compare(["--output_dir", str(tmp_path), *flags])
    assert not (tmp_path / "runs").exists()


TINY = [
    "--methods", "grpo", "vps",
    "--seeds", "0", "1",
    "--max_steps", "2",
    "--eval_every", "2",
    "--max_eval_examples", "2",
    "--eval_max_new_tokens", "8",
    "--per_device_train_batch_size", "8",
    "--max_completion_length", "8",
    "--report_to", "none",
    "--disable_tqdm", "true",
]  # fmt: skip


def _skipped(caplog):
    return sum("finished earlier, skipped" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_compare_end_to_end_and_resume(tmp_path, caplog, capsys):
    """2 methods × 2 seeds × 2 steps on the embedded checkpoint; a second call trains only what is missing."""
    out = tmp_path / "cmp"
    caplog.set_level(logging.INFO, logger="psgrpo.commands.compare")
    main(["compare", *TINY, "--output_dir", str(out)])
    assert _skipped(caplog) == 0

    with (out / "curves.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["method"], r["seed"], r["step"]) for r in rows] == [
        (m, s, step) for m in ("grpo", "vps") for s in ("0", "1") for step in ("0", "2")
    ]
    assert all(0 <= float(r["accuracy"]) <= 1 and 0 < float(r["mean_tokens"]) <= 8 for r in rows)
    assert all(float(r["completion_tokens"]) == 0 for r in rows if r["step"] == "0")
    # Every run starts from the embedded checkpoint: step 0 is evaluated once and reused by the other three.
    assert len(list((out / "heldout_cache").glob("*.json"))) == 1
    assert len({(r["accuracy"], r["mean_tokens"]) for r in rows if r["step"] == "0"}) == 1
    assert all(
        float(r["completion_tokens"]) > 0 and float(r["wall_seconds"]) > 0 for r in rows if r["step"] == "2"
    )

    report = (out / "compare.md").read_text()
    assert "steps to reach grpo final" in report
    assert "at each evaluation step" not in report  # one evaluation after step 0: the final Δ says it all
    main_table, rest = report.split("## Where the errors are (final evaluation)")
    errors, rest = rest.split("## Length and unneeded steps")
    lengths, signal = rest.split("## The process signal while training (last window)")
    for table in (main_table, errors, lengths, signal):  # one row per method in each table
        rows_of = [
            line.split("|")[1].strip()
            for line in table.splitlines()
            if line.startswith("| ") and "---" not in line
        ]
        assert rows_of[1:] == ["grpo", "vps"]
    assert "| method | calculation errors | logic errors | format errors | every step checks |" in errors
    assert (
        "| method | held-out tokens | training tokens, last window |" in lengths
    )  # TINY logs no diagnostics
    # vps logs its process share with or without --diagnostics; the AUC needs --diagnostics
    assert "| method | process share of |A_t| |" in signal
    assert "| grpo | — |" in signal
    assert "psgrpo compare --methods grpo vps --seeds 0 1" in report
    assert report in capsys.readouterr().out  # also printed
    with Image.open(out / "compare.png") as image:
        image.verify()  # a complete, valid PNG
        assert image.format == "PNG"
    run_dir = out / "runs" / "vps-seed1"
    assert json.loads((run_dir / "report.json").read_text())["method"] == "vps"
    assert (out / "recipe.yaml").exists() and not (run_dir / "checkpoint-2").exists()  # save_strategy no

    # Interrupted comparison: one run lacks its report.
    (run_dir / "report.json").unlink()
    recipe_written = (out / "recipe.yaml").stat().st_mtime_ns
    # --report_only draws the table from the finished runs, trains nothing and leaves the unfinished one alone.
    main(["compare", *TINY, "--output_dir", str(out), "--report_only", "true"])
    with (out / "curves.csv").open() as f:
        assert sorted({(r["method"], r["seed"]) for r in csv.DictReader(f)}) == [
            ("grpo", "0"), ("grpo", "1"), ("vps", "0")
        ]  # fmt: skip
    seeds_of = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in (out / "compare.md").read_text().split("## Where")[0].splitlines()
        if line.startswith("| ") and "---" not in line
    }
    assert seeds_of["grpo"] == "2" and seeds_of["vps"] == "1"
    assert (run_dir / "metrics.jsonl").exists()  # not cleared: another process may be training it
    assert (out / "recipe.yaml").stat().st_mtime_ns == recipe_written  # nor the recipe runs start from
    assert any("not finished, left out of the report" in r.getMessage() for r in caplog.records)
    # Only that run trains again, from scratch.
    caplog.clear()
    main(["compare", *TINY, "--output_dir", str(out)])
    assert _skipped(caplog) == 3
    with (out / "curves.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 8
    held = [
        line for line in (run_dir / "metrics.jsonl").read_text().splitlines() if "heldout/accuracy" in line
    ]
    assert len(held) == 2  # the restarted run's log holds only its own evaluations

    # Only a result-neutral setting differs: every finished run is reused, and the difference logged.
    caplog.clear()
    main(["compare", *TINY, "--output_dir", str(out), "--gradient_checkpointing", "false"])
    assert _skipped(caplog) == 4
    assert any("differs only in settings that change no result" in r.getMessage() for r in caplog.records)

    # Same directory, another budget: refused, naming the setting, before any run trains (ps comes first).
    with pytest.raises(ValueError, match=r"flags\.max_steps: \['2'\] → \['3'\]"):
        main(["compare", *TINY, "--output_dir", str(out), "--max_steps", "3", "--methods", "ps", "grpo"])
    assert not (out / "runs" / "ps-seed0" / "metrics.jsonl").exists()

    # A moved directory still holds its runs: each was written under the old path, and is reused.
    moved = tmp_path / "moved"
    shutil.move(out, moved)
    caplog.clear()
    main(["compare", *TINY, "--output_dir", str(moved), "--report_only", "true"])
    assert _skipped(caplog) == 4
    with (moved / "curves.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 8


def test_report_only_without_finished_runs_says_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="no finished run in .* run compare without --report_only first"):
        compare([*TINY, "--output_dir", str(tmp_path / "empty"), "--report_only", "true"])
    assert not list((tmp_path / "empty" / "runs").glob("*/compare_run.json"))  # nothing prepared to train


@pytest.mark.slow
def test_compare_arms_label_rows_and_runs(tmp_path):
    """Two arms of the same method family (an α sweep in miniature): rows and run directories carry the labels."""
    out = tmp_path / "arms"
    flags = [f for f in TINY if f not in ("--methods", "grpo", "vps")]
    flags[flags.index("--seeds") + 1 : flags.index("--seeds") + 3] = ["0"]
    main(["compare", *flags, "--output_dir", str(out), "--max_steps", "1", "--eval_every", "1",
          "--arms", "grpo=--method grpo", "vps-a0=--method vps --vps_alpha 0"])  # fmt: skip
    with (out / "curves.csv").open() as f:
        assert [(r["method"], r["step"]) for r in csv.DictReader(f)] == [
            ("grpo", "0"), ("grpo", "1"), ("vps-a0", "0"), ("vps-a0", "1")
        ]  # fmt: skip
    spec = json.loads((out / "runs" / "vps-a0-seed0" / "compare_run.json").read_text())
    assert spec["flags"]["method"] == ["vps"] and spec["flags"]["vps_alpha"] == ["0"]
    assert json.loads((out / "runs" / "vps-a0-seed0" / "report.json").read_text())["method"] == "vps"
    assert "paired Δ vs grpo" in (out / "compare.md").read_text()


@pytest.mark.slow
def test_compare_leaves_a_run_another_process_trains(tmp_path, caplog, hold_run_lock):
    """A second compare into the same directory skips (and never clears) the run the first is training."""
    out = tmp_path / "cmp"
    flags = [*TINY, "--seeds", "0", "--max_steps", "1", "--eval_every", "1", "--output_dir", str(out)]
    busy_dir = out / "runs" / "vps-seed0"
    busy_dir.mkdir(parents=True)
    (busy_dir / "compare_run.json").write_text("{}")  # the holder's run, half written: its spec comes first
    (busy_dir / "metrics.jsonl").write_text("")
    caplog.set_level(logging.INFO, logger="psgrpo.commands.compare")
    holder = hold_run_lock(busy_dir)
    compare(flags)
    assert (busy_dir / "metrics.jsonl").exists() and not (busy_dir / "report.json").exists()
    messages = [r.getMessage() for r in caplog.records]
    assert "run 2/2 (vps, seed 0): being trained by pid 4242 on elsewhere, skipped" in messages
    assert any("1 run(s) still training in other processes" in m and "vps-seed0" in m for m in messages)
    with (out / "curves.csv").open() as f:
        assert {r["method"] for r in csv.DictReader(f)} == {"grpo"}

    # The holder dies without finishing: the next compare claims the run, restarts it and trains only it.
    holder.kill()
    holder.wait(timeout=30)
    caplog.clear()
    compare(flags)
    messages = [r.getMessage() for r in caplog.records]
    assert "run 1/2 (grpo, seed 0): finished earlier, skipped" in messages
    assert any(m.endswith("unfinished run, starting it again") for m in messages)
    assert (busy_dir / "report.json").exists()
    with (out / "curves.csv").open() as f:
        assert {r["method"] for r in csv.DictReader(f)} == {"grpo", "vps"}


def test_every_run_busy_is_a_clear_error(tmp_path, hold_run_lock):
    out = tmp_path / "cmp"
    for run in ("grpo-seed0", "grpo-seed1", "vps-seed0", "vps-seed1"):
        hold_run_lock(out / "runs" / run)
    with pytest.raises(ValueError, match="other processes were training every run; run compare with"):
        compare([*TINY, "--output_dir", str(out)])


def test_a_short_name_or_a_short_yaml_layers_over_the_demo_as_in_train(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no configs/ here
    recipe, flags, args, _ = parse_compare_args(["--config", "arith-hard", "--seeds", "0"])
    assert recipe == RECIPES_DIR / "arith_hard.yaml" and flags == ["--seeds", "0"]
    assert (args.output_dir, args.step_scorer) == ("outputs/arith-hard", "arithmetic")
    mine = tmp_path / "mine.yaml"
    mine.write_text("methods: [grpo, vps]\nmax_steps: 6\noutput_dir: cmp\n")
    _, _, args, cfg = parse_compare_args(["--config", str(mine)])
    assert (cfg.methods, args.max_steps, args.learning_rate, args.num_generations) == (
        ["grpo", "vps"],
        6,
        3e-5,
        8,
    )
    with pytest.raises(ValueError, match="psgrpo compare takes one --config"):
        parse_compare_args(["--config", "demo", "--config", str(mine)])


def test_ctrl_c_during_a_run_says_the_same_compare_continues(tmp_path, monkeypatch, capsys):
    import psgrpo.commands.train as train_module

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.setattr(train_module, "train", interrupted)
    out = tmp_path / "cmp"
    assert main(["compare", *TINY, "--output_dir", str(out)]) == 130
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("psgrpo: interrupted")]
    assert len(lines) == 1 and "interrupted during run 1/" in lines[0]
    assert "finished runs are kept" in lines[0] and f"psgrpo compare {' '.join(TINY[:2])}" in lines[0]


def test_a_recipe_that_spells_out_a_default_matches_a_finished_run_that_left_it_out(tmp_path):
    """A recipe key set on one side only compares as its field default: ``step_scorer: arithmetic`` (the
    default) reuses a run whose recipe never named a scorer; ``step_scorer: reference`` does not."""
    assert recipe_defaults()["step_scorer"] == "arithmetic"
    old = {"recipe": {"method": "grpo", "learning_rate": 3e-5}, "flags": {"seed": ["0"]}}
    run = tmp_path / "run"
    run.mkdir()
    (run / "compare_run.json").write_text(json.dumps(old))
    (run / "report.json").write_text("{}")
    same = {"recipe": {**old["recipe"], "step_scorer": "arithmetic"}, "flags": old["flags"]}
    assert finished_run(run, same)
    filled = with_recipe_defaults(old, same, recipe_defaults())
    assert filled["recipe"]["step_scorer"] == "arithmetic" and "step_scorer" not in old["recipe"]
    other = {"recipe": {**old["recipe"], "step_scorer": "reference"}, "flags": old["flags"]}
    with pytest.raises(ValueError, match="recipe.step_scorer: arithmetic → reference"):
        finished_run(run, other)


def test_runs_go_seed_by_seed_so_a_stopped_comparison_leaves_whole_pairs(tmp_path, monkeypatch):
    import psgrpo.commands.train as train_module

    trained = []

    def stop_at_the_third(argv):
        run_dir = argv[
            len(argv) - argv[::-1].index("--output_dir")
        ]  # the last one: compare's per-run override
        trained.append(run_dir.rsplit("/", 1)[-1])
        if len(trained) == 3:
            raise KeyboardInterrupt

    monkeypatch.setenv("PSGRPO_DEBUG", "0")
    monkeypatch.setattr(train_module, "train", stop_at_the_third)
    assert TINY[:3] == ["--methods", "grpo", "vps"] and TINY[3:6] == ["--seeds", "0", "1"]
    flags = [
        *TINY[3:],
        "--output_dir",
        str(tmp_path / "cmp"),
        "--arms",
        "grpo=--method grpo",
        "ps=--method ps",
    ]
    assert main(["compare", *flags]) == 130
    assert trained == ["grpo-seed0", "ps-seed0", "grpo-seed1"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["grpo", "ps", "vps", "tree"])
def test_a_finished_run_leaves_no_trainer_or_model_alive(tmp_path, monkeypatch, method):
    """compare trains its runs in one process: anything a run leaves reachable adds to every later run."""
    import gc
    import weakref

    import psgrpo.trainer
    from psgrpo.commands.train import train

    made = []
    init = psgrpo.trainer.ProcessGRPOTrainer.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.extend([weakref.ref(self), weakref.ref(self.model)])

    monkeypatch.setattr(psgrpo.trainer.ProcessGRPOTrainer, "__init__", recording_init)
    train(
        [
            "--method", method, "--max_steps", "2", "--heldout_eval_steps", "1", "--max_eval_examples", "2",
            "--eval_max_new_tokens", "8", "--per_device_train_batch_size", "8", "--max_completion_length", "8",
            "--save_strategy", "no", "--report_to", "none", "--disable_tqdm", "true",
            "--output_dir", str(tmp_path / method),
        ]
    )  # fmt: skip
    assert (tmp_path / method / "report.json").exists() and len(made) == 2
    gc.collect()
    assert [ref() for ref in made] == [None, None]  # the trainer (its optimizer, its buffers) and its model


def test_a_run_another_process_finished_with_other_settings_is_left_out(tmp_path, caplog):
    """A run busy at planning time and finished meanwhile by another compare enters the report only when its
    settings are this comparison's (it used to enter unchecked, under a warning saying it was left out)."""
    from psgrpo.commands.compare import _finished_since

    run_dir = tmp_path / "runs" / "grpo-seed0"
    run_dir.mkdir(parents=True)
    spec = {"recipe": {}, "flags": {"learning_rate": ["3e-5"], "seed": ["0"]}}
    assert not _finished_since(run_dir, spec)  # not finished
    (run_dir / "report.json").write_text("{}")
    (run_dir / "compare_run.json").write_text(
        json.dumps({"recipe": {}, "flags": {**spec["flags"], "learning_rate": ["1e-3"]}})
    )
    caplog.set_level(logging.WARNING, logger="psgrpo.commands.compare")
    assert not _finished_since(run_dir, spec)
    assert any(
        "left out of this report" in r.getMessage() and "learning_rate" in r.getMessage()
        for r in caplog.records
    )
    (run_dir / "compare_run.json").write_text(json.dumps(spec))
    assert _finished_since(run_dir, spec)


@pytest.fixture()
def no_training(monkeypatch):
    """Fail the test if compare gets as far as training a run; ``PSGRPO_DEBUG=0`` for ``main``'s error line."""
    import psgrpo.commands.train as train_module

    def refuse(argv):
        raise AssertionError(f"a run trained before the bad input was reported: {argv}")

    monkeypatch.setattr(train_module, "train", refuse)
    monkeypatch.setenv("PSGRPO_DEBUG", "0")


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("psgrpo: error:")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


ONE_RUN = ["--seeds", "0", "--report_to", "none"]


def test_a_run_folder_compare_did_not_make_is_refused_before_anything_is_written(
    tmp_path, capsys, no_training
):
    """A folder in runs/ without compare_run.json is the user's: it used to be deleted (and compare.md
    overwritten) to train there. Every run's folder is checked before the first trains."""
    proj = tmp_path / "proj"
    (proj / "runs" / "b-seed0").mkdir(parents=True)
    (proj / "runs" / "b-seed0" / "data.txt").write_text("mine")
    (proj / "recipe.yaml").write_text("max_steps: 3\n")
    (proj / "compare.md").write_text("my notes")
    arms = ["--arms", "a=--method grpo", "b=--method vps"]  # b's folder is the user's; a comes first
    assert main(["compare", *ONE_RUN, "--output_dir", str(proj), *arms]) == 2
    line = _one_error_line(capsys)
    assert f"{proj / 'runs' / 'b-seed0'} (the folder of arm b, seed 0) was not made by psgrpo compare" in line
    assert "give another --output_dir" in line
    assert (proj / "runs" / "b-seed0" / "data.txt").read_text() == "mine"
    assert (proj / "compare.md").read_text() == "my notes" and (
        proj / "recipe.yaml"
    ).read_text() == "max_steps: 3\n"
    assert not (proj / "runs" / "a-seed0").exists()
    (proj / "runs" / "a-seed0").write_text("a file")  # where a run folder goes
    with pytest.raises(FileExistsError, match="a-seed0 .the folder of arm a, seed 0. was not made"):
        compare([*ONE_RUN, "--output_dir", str(proj), "--arms", "a=--method grpo"])


def test_only_a_run_folder_compare_made_or_an_empty_one_is_cleared(tmp_path, monkeypatch):
    import psgrpo.commands.train as train_module

    trained = []
    monkeypatch.setattr(
        train_module, "train", lambda argv: trained.append(sorted(p.name for p in run.iterdir()))
    )
    out = tmp_path / "cmp"
    run = out / "runs" / "grpo-seed0"
    run.mkdir(parents=True)
    (run / "compare_run.json").write_text("{}")  # an interrupted run of compare's
    (run / "metrics.jsonl").write_text("{}")
    (out / "runs" / "vps-seed0").mkdir()  # empty
    with pytest.raises(ValueError, match="no finished run to report"):  # the fake train finishes nothing
        compare([*ONE_RUN, "--output_dir", str(out), "--methods", "grpo", "vps"])
    assert trained[0] == ["compare_run.json"]  # cleared, then the fresh spec written
    assert json.loads((run / "compare_run.json").read_text())["flags"]["method"] == ["grpo"]
    assert (out / "runs" / "vps-seed0" / "compare_run.json").exists()


@pytest.mark.parametrize(
    ("held", "refused"),
    [
        (["notes.txt"], True),
        (["runs/events.out"], True),  # a runs/ folder of someone else's (TensorBoard's default name)
        (["recipe.yaml"], True),  # a user's recipe may have that name
        (["notes.txt", "compare.md"], False),  # an earlier compare's folder, annotated
        (["runs/.grpo-seed0.lock"], False),
        (["runs/grpo-seed1/compare_run.json"], False),
        ([], False),
    ],
)
def test_an_output_dir_holding_nothing_of_compare_is_refused(tmp_path, capsys, no_training, held, refused):
    out = tmp_path / "proj"
    out.mkdir()
    for name in held:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("{}")
    command = ["compare", *ONE_RUN, "--output_dir", str(out), "--methods", "grpo"]
    if not refused:
        with pytest.raises(AssertionError, match="a run trained"):  # past the checks, to the first run
            main(command)
        return
    assert main(command) == 2
    line = _one_error_line(capsys)
    assert f"--output_dir {out}: holds" in line and "no output of psgrpo compare" in line
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(held)


def test_every_arm_is_checked_as_its_runs_get_it_before_the_first_run(tmp_path, capsys, no_training):
    out = tmp_path / "cmp"
    arms = ["--arms", "a=--method grpo", "b=--method grpo --temperature 0"]
    assert main(["compare", *ONE_RUN, "--output_dir", str(out), *arms]) == 2
    assert _one_error_line(capsys).startswith("psgrpo: error: --arms b: --temperature 0: ")
    assert not out.exists()
    with pytest.raises(OSError, match="--arms b: --model_name_or_path"):  # train's checkpoint check, too
        compare([*ONE_RUN, "--output_dir", str(out), "--arms", "a=--method grpo",
                 f"b=--method grpo --model_name_or_path {tmp_path / 'none'}"])  # fmt: skip


def test_an_unclosed_quote_in_an_arm_names_the_entry(tmp_path, capsys, no_training):
    with pytest.raises(ValueError, match=r"--arms entry 'b=--method \"grpo': .*No closing quotation"):
        compare_arms(CompareConfig(arms=["a=--method grpo", 'b=--method "grpo']))
    out = tmp_path / "cmp"
    assert main(["compare", *ONE_RUN, "--output_dir", str(out), "--arms", 'b=--method "grpo']) == 2
    assert "--arms entry 'b=--method \"grpo'" in _one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize("where", ["afile", "afile/sub", "/proc/nope"])
def test_an_output_dir_that_cannot_be_a_folder_is_one_line_naming_the_flag(
    tmp_path, capsys, no_training, where
):
    if where.startswith("/proc") and not Path("/proc/self").exists():
        pytest.skip("needs Linux's /proc")
    (tmp_path / "afile").write_text("x")
    out = where if where.startswith("/") else str(tmp_path / where)
    assert main(["compare", *ONE_RUN, "--output_dir", out]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"psgrpo: error: --output_dir {out}: ") and "Errno" not in line
    assert (tmp_path / "afile").read_text() == "x"
