"""Tests for psgrpo.data.prompts: templates and plain/chat prompt formatting."""

from __future__ import annotations

import pytest

from psgrpo.data.prompts import COMPACT_TEMPLATE, TAGS_TEMPLATE, TEMPLATES, format_prompt, resolve_template

QUESTION = "Tom has 3 apples and buys 4 more. How many now?"


def test_seed_template_is_the_design_prompt() -> None:
    expected = "Respond in format:\n<reasoning>...</reasoning>\n<answer>...</answer>\n\nQuestion: " + QUESTION
    assert format_prompt(QUESTION) == expected
    assert format_prompt(QUESTION, template="tags") == expected


def test_compact_template() -> None:
    assert format_prompt(QUESTION, template="compact") == f"Question: {QUESTION}\n"


def test_literal_pattern() -> None:
    assert format_prompt("2+2?", template="Q: {question}\nA:") == "Q: 2+2?\nA:"


def test_named_templates_resolve() -> None:
    assert TEMPLATES == {"tags": TAGS_TEMPLATE, "compact": COMPACT_TEMPLATE}
    assert resolve_template("tags") is TAGS_TEMPLATE
    assert resolve_template("X {question}") == "X {question}"


def test_chat_without_system_prompt() -> None:
    messages = format_prompt(QUESTION, template="compact", chat=True)
    assert messages == [{"role": "user", "content": f"Question: {QUESTION}\n"}]


def test_chat_with_system_prompt() -> None:
    messages = format_prompt(QUESTION, chat=True, system_prompt="You are a careful solver.")
    assert messages == [
        {"role": "system", "content": "You are a careful solver."},
        {"role": "user", "content": format_prompt(QUESTION)},
    ]


def test_system_prompt_is_ignored_without_chat() -> None:
    assert format_prompt(QUESTION, system_prompt="ignored") == format_prompt(QUESTION)


@pytest.mark.parametrize("template", ["nope", "Answer this:", ""])
def test_bad_template_is_rejected(template: str) -> None:
    with pytest.raises(ValueError, match=r"neither a known name \(tags, compact\).*\{question\}"):
        format_prompt(QUESTION, template=template)
