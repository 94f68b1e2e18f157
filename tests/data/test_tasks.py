"""Tests for psgrpo.data.tasks: one entry point from a TaskConfig to a validated dataset."""

from __future__ import annotations

import pytest

from psgrpo.config.options import ArithVariant, allowed
from psgrpo.data.arith import ARITH_VARIANTS, make_arith_dataset
from psgrpo.data.tasks import TaskConfig, default_template, load_task_split


@pytest.mark.parametrize("variant", ["arith", "arith-long", "arith-distractor", "arith-hard"])
def test_arith_variants_load_with_the_compact_template(variant):
    task = TaskConfig(dataset=variant)
    assert default_template(task) == "compact"
    data = load_task_split(task, "eval", limit=5)
    assert data.to_list() == make_arith_dataset("test", n=5, variant=variant).to_list()


def test_gsm8k_style_datasets_keep_the_tags_template():
    assert default_template(TaskConfig(dataset="gsm8k")) == "tags"
    assert (
        default_template(TaskConfig(dataset="arith-hard", prompt_template="Q: {question}")) == "Q: {question}"
    )


def test_unknown_split_names_the_variant():
    with pytest.raises(
        ValueError, match=r"arith-hard has splits \['eval', 'test', 'train', 'validation'\], got 'dev'"
    ):
        load_task_split(TaskConfig(dataset="arith-hard"), "dev")


def test_the_variant_names_are_the_option_values():
    assert tuple(ARITH_VARIANTS) == allowed(ArithVariant)


def test_a_misspelt_variant_is_refused_with_the_names():
    with pytest.raises(
        ValueError, match=r"dataset='arith-hrad' is not allowed; choose one of 'arith', 'arith-long'"
    ):
        TaskConfig(dataset="arith-hrad")


# ---- psgrpo.load_task: the public, offline way to the tasks (issue 27) ----

GSM8K_LINES = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips "
        "altogether in April and May.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. "
        "How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned 0.2 x 50 = "
        "$<<0.2*50=10>>10.\n#### 10",
    },
]


def test_load_task_is_exported_and_equals_the_cli_loader():
    import psgrpo
    from psgrpo.data.tasks import load_task

    assert psgrpo.load_task is load_task and "load_task" in psgrpo.__all__
    rows = psgrpo.load_task("arith", split="train", limit=4)
    assert rows.to_list() == load_task_split(TaskConfig(), "train", limit=4).to_list()
    assert {"prompt", "answer", "solution", "difficulty"} <= set(rows.column_names)
    hard = psgrpo.load_task("arith-hard", split="test", limit=3)
    assert hard.to_list() == make_arith_dataset("test", n=3, variant="arith-hard").to_list()


def test_load_task_reads_a_local_gsm8k_jsonl(tmp_path):
    import json

    from psgrpo import load_task

    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in GSM8K_LINES))
    rows = load_task(str(path), split="test")
    assert rows["answer"] == ["72", "10"]
    assert rows[0]["prompt"].startswith("Respond in format:") and "Natalia" in rows[0]["prompt"]
    chat = load_task(str(path), split="test", chat=True, system_prompt="Think step by step.")
    assert chat[0]["prompt"][0] == {"role": "system", "content": "Think step by step."}


def test_load_task_names_a_bad_option_or_variant():
    from psgrpo import load_task

    with pytest.raises(ValueError, match=r"load_task: unknown option\(s\) \['chatt'\]"):
        load_task("arith", chatt=True)
    with pytest.raises(ValueError, match="dataset='arith-hrad' is not allowed"):
        load_task("arith-hrad")
