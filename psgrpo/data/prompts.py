"""Prompt templates shared by every task.

A template is a ``str.format`` pattern with one field, ``{question}``. The ``tags``
template asks for the ``<reasoning>…</reasoning><answer>…</answer>`` format
that :mod:`psgrpo.rewards.functions` scores.
"""

from __future__ import annotations

from typing import Any

TAGS_TEMPLATE = "Respond in format:\n<reasoning>...</reasoning>\n<answer>...</answer>\n\nQuestion: {question}"
"""Asks for the reasoning and answer tags the rewards read. Default for GSM8K."""

COMPACT_TEMPLATE = "Question: {question}\n"
"""Short prompt for the embedded character-level model, where every character is a token."""

TEMPLATES: dict[str, str] = {"tags": TAGS_TEMPLATE, "compact": COMPACT_TEMPLATE}


def resolve_template(template: str) -> str:
    """Return the pattern for a template name (``tags``, ``compact``) or a literal pattern.

    Raises:
        ValueError: when a literal pattern lacks the ``{question}`` field.
    """
    pattern = TEMPLATES.get(template, template)
    if "{question}" not in pattern:
        raise ValueError(
            f"prompt template {template!r} is neither a known name ({', '.join(TEMPLATES)}) nor a pattern "
            "containing '{question}'"
        )
    return pattern


def format_prompt(
    question: str, template: str = "tags", chat: bool = False, system_prompt: str | None = None
) -> str | list[dict[str, Any]]:
    """Format one question.

    Args:
        question: the problem text.
        template: a name from :data:`TEMPLATES` or a pattern with ``{question}``.
        chat: return a conversational prompt (list of messages) for instruct models; TRL
            applies the tokenizer's chat template. Otherwise return plain text.
        system_prompt: optional system message (chat only).
    """
    text = resolve_template(template).format(question=question)
    if not chat:
        return text
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": text})
    return messages
