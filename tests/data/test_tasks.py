"""Tests for psgrpo.data.tasks: one entry point from a TaskConfig to a validated dataset."""

from __future__ import annotations

import pytest

from psgrpo.data.arith import ARITH_VARIANTS, make_arith_dataset
from psgrpo.data.tasks import TaskConfig, default_template, load_task_split
from psgrpo.options import ArithVariant, allowed


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
