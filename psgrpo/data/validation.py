"""Dataset checks whose errors say what is wrong, where, and how to fix it.

They are generic: the synthetic ``arith`` task, GSM8K and user datasets all go through them before
training or evaluation, so that a misnamed column or an unparsable gold answer fails at load time
with a readable message instead of deep inside the trainer::

    from psgrpo.data.validation import validate_columns, validate_gold_answers

    validate_columns(dataset, ["prompt", "answer"], name="train dataset", source="my.jsonl")
    validate_gold_answers(dataset, column="answer", name="train dataset")

A "dataset" here is any of:

* a :class:`datasets.Dataset` (columns are read column-wise, which is fast);
* a :class:`datasets.IterableDataset` or other iterable of row mappings;
* a mapping of column name to list of values (``{"question": [...], "answer": [...]}``);
* a sequence of row mappings (``[{"question": ..., "answer": ...}, ...]``).

Every failure raises :class:`DatasetValidationError` (a :class:`ValueError`).
"""

from __future__ import annotations

import difflib
import itertools
import math
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from psgrpo.rewards.numbers import parse_number

__all__ = [
    "DatasetValidationError",
    "describe_dataset",
    "iter_column",
    "more_rows_note",
    "short_repr",
    "validate_columns",
    "validate_gold_answers",
    "validate_prompts",
    "require_chat_template",
]

REPR_LIMIT = 80
"""Longest ``repr`` of an offending value quoted in an error message."""

MAX_LISTED_ROWS = 5
"""How many further bad rows an error message lists after the first one."""

GOLD_EXPECTATION = "a non-empty string holding one number, e.g. '72', '1,000', '-3.5' or '3/4'"

ANY_GOLD_EXPECTATION = "a non-empty string (a number, or LaTeX such as '\\frac{3}{4}') or a number"

PROMPT_EXPECTATION = (
    "a non-empty string, or a non-empty list of chat messages such as [{'role': 'user', 'content': '...'}]"
)

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles a chat message of a prompt may have (those chat templates render)."""


class DatasetValidationError(ValueError):
    """A dataset lacks something training needs (rows, a column, a parsable gold answer).

    Attributes:
        row: 0-based index of the first offending row, when the problem is in a row.
        field: the column or field involved, when there is one.
    """

    def __init__(self, message: str, *, row: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.row = row
        self.field = field


def short_repr(value: Any, limit: int = REPR_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters (with a note of the full length) when longer."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def describe_dataset(name: str, source: str | None = None) -> str:
    """How error messages refer to a dataset: ``dataset 'train' (from data/train.jsonl)``."""
    where = f"dataset {name!r}"
    return f"{where} (from {source})" if source else where


def _split_names(dataset: Any) -> list[str] | None:
    """The split names when ``dataset`` is a ``DatasetDict``-like mapping of datasets, else ``None``."""
    if isinstance(dataset, Mapping) and dataset and all(hasattr(v, "column_names") for v in dataset.values()):
        return list(dataset)
    return None


def _first_row(dataset: Iterable[Any]) -> Any | None:
    """The first row of an iterable dataset, or ``None`` when it has none."""
    return next(iter(dataset), None)


def _is_columnar(dataset: Any) -> bool:
    """True for a ``datasets.Dataset``-like object that can hand out whole columns by name."""
    return isinstance(getattr(dataset, "column_names", None), list) and hasattr(dataset, "__len__")


def _column_names(dataset: Any) -> list[str]:
    """Column names of a dataset, in order (union of row keys for a list of rows)."""
    names = getattr(dataset, "column_names", None)
    if isinstance(names, list):
        return list(names)
    if isinstance(dataset, Mapping):
        return [str(key) for key in dataset]
    rows: Iterable[Any] = dataset if isinstance(dataset, Sequence) else itertools.islice(dataset, 1)
    seen: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            seen.update(dict.fromkeys(str(key) for key in row))
    return list(seen)


def _num_rows(dataset: Any) -> int | None:
    """Number of rows, or ``None`` when it cannot be known without iterating (iterable datasets)."""
    if _is_columnar(dataset):
        return len(dataset)
    if isinstance(dataset, Mapping):
        return max((len(values) for values in dataset.values()), default=0)
    if isinstance(dataset, Sequence):
        return len(dataset)
    return None


def _is_empty(dataset: Any) -> bool:
    """True when the dataset has no rows."""
    count = _num_rows(dataset)
    if count is not None:
        return count == 0
    return _first_row(dataset) is None


def iter_column(dataset: Any, column: str) -> Iterator[Any]:
    """Yield the values of one column, row by row (``None`` where a row lacks it).

    A ``datasets.Dataset`` or a mapping of columns is read column-wise; other datasets row-wise.
    """
    if _is_columnar(dataset) or isinstance(dataset, Mapping):
        yield from dataset[column]
        return
    for row in dataset:
        yield row.get(column) if isinstance(row, Mapping) else None


def _suggestion(missing: str, present: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest present column name, or ``""`` when none is close."""
    lowered = {name.lower(): name for name in present}
    exact = lowered.get(missing.lower())
    if exact is not None:
        return f" (did you mean {exact!r}?)"
    close = difflib.get_close_matches(missing.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[close[0]]!r}?)" if close else ""


def validate_columns(
    dataset: Any, required: Sequence[str], name: str = "dataset", *, source: str | None = None
) -> None:
    """Check that ``dataset`` has rows and every column in ``required``.

    Args:
        dataset: a ``datasets.Dataset``, iterable dataset, mapping of columns or list of rows.
        required: the column names that must be present.
        name: what the dataset is called in error messages (``"train dataset"``, ``"GSM8K"``).
        source: where it came from (a path or hub id), quoted in error messages when given.

    Raises:
        DatasetValidationError: the dataset is a ``DatasetDict`` (no split chosen), is empty, or
            lacks a required column; the message lists the columns present and suggests the
            closest name for a misnamed one (``answers`` → ``did you mean 'answer'?``).
    """
    if isinstance(required, str):
        required = [required]
    where = describe_dataset(name, source)
    splits = _split_names(dataset)
    if splits is not None:
        raise DatasetValidationError(
            f"{where} is a dataset dictionary with splits {splits}, not one split; "
            f"pass one of them, e.g. dataset[{splits[0]!r}]"
        )
    if _is_empty(dataset):
        raise DatasetValidationError(
            f"{where} is empty: it has no rows (each row needs columns {list(required)})"
        )
    present = _column_names(dataset)
    missing = [column for column in required if column not in present]
    if missing:
        described = ", ".join(f"{column!r}{_suggestion(column, present)}" for column in missing)
        noun = "column" if len(missing) == 1 else "columns"
        raise DatasetValidationError(
            f"{where} is missing required {noun} {described}; it has columns {present}, "
            f"and needs {list(required)}",
            field=missing[0],
        )


def _gold_problem(value: Any, numeric: bool = True) -> str | None:
    """Why ``value`` is not a usable gold answer, or ``None`` when it is one.

    ``numeric``: the answer must parse as one number (the arith tasks, GSM8K); else any non-empty string or a
    number passes (the correctness reward compares ``str(gold)``, math-verify reads LaTeX and expressions).
    """
    if not numeric and isinstance(value, int | float) and not isinstance(value, bool):
        return None if math.isfinite(value) else "is not a finite number"
    if not isinstance(value, str):
        hint = " (convert the column to strings)" if isinstance(value, int | float) else ""
        return f"is of type {type(value).__name__}, not a string{hint}"
    if not value.strip():
        return "is empty"
    if numeric and parse_number(value) is None:
        return "is not a number"
    return None


def more_rows_note(labels: Sequence[str]) -> str:
    """``" (3 more bad rows: row 4, row 9, row 12)"`` for the rows after the first bad one.

    Lists at most :data:`MAX_LISTED_ROWS` labels; returns ``""`` when there are none.
    """
    if not labels:
        return ""
    listed = ", ".join(labels[:MAX_LISTED_ROWS])
    if len(labels) > MAX_LISTED_ROWS:
        listed += ", ..."
    return f" ({len(labels)} more bad {'row' if len(labels) == 1 else 'rows'}: {listed})"


def validate_gold_answers(
    dataset: Any,
    column: str = "answer",
    name: str = "dataset",
    *,
    source: str | None = None,
    numeric: bool = True,
) -> None:
    """Check that every row's gold answer is a non-empty string that :func:`parse_number` parses.

    Args:
        dataset: as for :func:`validate_columns`; the column is read column-wise when possible (a stream
            only in its first :data:`STREAM_ROWS_CHECKED` rows).
        column: the gold-answer column.
        name: what the dataset is called in error messages.
        source: where it came from, quoted in error messages when given.
        numeric: ``False`` accepts any non-empty string or finite number (symbolic golds math-verify reads)
            and refuses only what can match nothing: ``None``, an empty string, another type.

    Raises:
        DatasetValidationError: the column is missing (see :func:`validate_columns`), or a value is
            not a number; the message names the first bad row (0-based index), the field, the
            offending value and what was expected, and counts the other bad rows.
    """
    validate_columns(dataset, [column], name, source=source)
    expected = GOLD_EXPECTATION if numeric else ANY_GOLD_EXPECTATION
    _raise_bad_rows(
        dataset, column, lambda value: _gold_problem(value, numeric), "gold answer", expected, name, source
    )


def _prompt_problem(value: Any) -> str | None:
    """Why ``value`` is not a prompt TRL can render, or ``None`` when it is one."""
    if isinstance(value, str):
        return None if value.strip() else "is empty"
    if value is None:
        return "is missing"
    if not isinstance(value, list):
        return f"is of type {type(value).__name__}"
    if not value:
        return "is an empty list of messages"
    for k, message in enumerate(value):
        if not isinstance(message, Mapping):
            return f"has message {k} of type {type(message).__name__}, not a mapping"
        role, content = message.get("role"), message.get("content")
        if role not in CHAT_ROLES:
            return f"has message {k} with role {short_repr(role)}, not one of {', '.join(CHAT_ROLES)}"
        if not isinstance(content, str | list):
            return f"has message {k} with content {short_repr(content)}, not a string"
    return None


def validate_prompts(
    dataset: Any, name: str = "dataset", *, column: str = "prompt", source: str | None = None
) -> None:
    """Check that every row's prompt is a non-empty string or a non-empty list of chat messages
    (``{"role": one of CHAT_ROLES, "content": a string}``; a content list of parts also passes).

    Args: as for :func:`validate_gold_answers`.

    Raises:
        DatasetValidationError: the column is missing, or a prompt is ``None``, empty, of another type, or a
            message lacks a known role or a string content; the message names the first bad row and counts
            the others (tokenizers and chat templates fail on these with errors that name no row, some only
            when training reaches the row).
    """
    validate_columns(dataset, [column], name, source=source)
    _raise_bad_rows(dataset, column, _prompt_problem, "prompt", PROMPT_EXPECTATION, name, source)


STREAM_ROWS_CHECKED = 64
"""Rows of a stream (an iterable dataset without a length) whose values are checked: reading more would
consume it before training."""


def _raise_bad_rows(
    dataset: Any,
    column: str,
    problem_of: Callable[[Any], str | None],
    what: str,
    expected: str,
    name: str,
    source: str | None,
) -> None:
    """Raise :class:`DatasetValidationError` naming the first row whose ``column`` value has a problem
    (``problem_of``), with the value, the problem, what was ``expected`` and the other bad rows."""
    values = iter_column(dataset, column)
    if _num_rows(dataset) is None:
        values = itertools.islice(values, STREAM_ROWS_CHECKED)
    bad = [(index, value, problem) for index, value in enumerate(values) if (problem := problem_of(value))]
    if not bad:
        return
    index, value, problem = bad[0]
    raise DatasetValidationError(
        f"{describe_dataset(name, source)}: row {index}, field {column!r}: {what} "
        f"{short_repr(value)} {problem}; expected {expected}"
        f"{more_rows_note([f'row {other}' for other, _, _ in bad[1:]])}",
        row=index,
        field=column,
    )


SLACK_TOKENS_PER_MESSAGE = 8
"""Tokens a tokenizer may add to each message beyond its text's bytes and its role pattern's empty template
(SentencePiece's leading ``▁``, a BOS), in the bound :func:`check_prompts_fit_context` reads before it
tokenizes a row."""


def _longest_bytes(text: str) -> int:
    """An upper bound on the UTF-8 bytes of ``text`` after any normalizer a tokenizer applies: the longest of
    its NFKD forms (compatibility decomposition expands most; NFC can decompose too, e.g. U+0F73), cased and
    case-folded."""
    return max(len(unicodedata.normalize("NFKD", form).encode()) for form in (text, text.casefold()))


def _text_bytes(prompt: Any) -> tuple[int, int] | None:
    """The bound in bytes of a prompt's text (:func:`_longest_bytes`) and its number of messages (a plain
    string: 1); ``None`` for content that is not text (parts of a multimodal message), which only exact
    tokenization can measure."""
    if isinstance(prompt, str):
        return _longest_bytes(prompt), 1
    if not all(isinstance(message.get("content"), str) for message in prompt):
        return None
    return sum(_longest_bytes(message["content"]) for message in prompt), len(prompt)


def check_prompts_fit_context(
    dataset: Any,
    name: str,
    count_tokens: Callable[[Any], int],
    max_positions: int | None,
    max_completion_length: int,
    length_option: str = "max_completion_length",
) -> str | None:
    """Check that every prompt leaves room in the model's context for a completion.

    ``count_tokens(prompt)``: the prompt's tokens as training renders it (chat template included). A row is
    tokenized only when a bound on its length could reach the limit: its text's bytes after any Unicode
    normalization (each byte at least one token of a byte-level BPE, SentencePiece with byte fallback or
    WordPiece), plus the template of its role pattern with empty contents (counted once per pattern: a
    default system prompt comes only where a row has none) and :data:`SLACK_TOKENS_PER_MESSAGE` per message.
    GSM8K on a 32k-context model tokenizes none. Streams and ``max_positions=None`` (no limit) are not
    checked. ``length_option`` names ``max_completion_length`` in messages (the evaluation's ``max_new_tokens``).

    Returns:
        A warning when some prompts leave fewer than ``max_completion_length`` positions (their long
        completions would run past the positions the model knows, which transformers only warns about
        while decoding), or when ``max_completion_length`` alone reaches the context; else ``None``.

    Raises:
        DatasetValidationError: a prompt fills the whole context (no completion token fits), naming the
            first such row, its length and the others.
    """
    if max_positions is None or _num_rows(dataset) is None or _is_empty(dataset):
        return None
    validate_columns(dataset, ["prompt"], name)
    # the longest prompt a full-length completion fits after; with no room at all only full prompts are looked for
    limit = (
        max_positions - max_completion_length if max_completion_length < max_positions else max_positions - 1
    )
    templates: dict[tuple[Any, ...], int] = {}
    lengths: dict[int, int] = {}
    for index, prompt in enumerate(iter_column(dataset, "prompt")):
        if _prompt_problem(prompt):
            continue  # validate_prompts names it
        size = _text_bytes(prompt)
        if size is None:
            lengths[index] = count_tokens(prompt)
            continue
        pattern = () if isinstance(prompt, str) else tuple(message.get("role") for message in prompt)
        if pattern not in templates:
            templates[pattern] = count_tokens(
                "" if isinstance(prompt, str) else [{**message, "content": ""} for message in prompt]
            )
        if templates[pattern] + size[0] + SLACK_TOKENS_PER_MESSAGE * size[1] > limit:
            lengths[index] = count_tokens(prompt)
    full = [index for index, n in lengths.items() if n >= max_positions]
    if full:
        first = full[0]
        raise DatasetValidationError(
            f"{describe_dataset(name)}: row {first}, field 'prompt': the prompt is {lengths[first]} tokens, and the "
            f"model's context is {max_positions} positions, so no completion token fits after it; shorten or drop "
            f"the row{more_rows_note([f'row {other}' for other in full[1:]])}",
            row=first,
            field="prompt",
        )
    if max_completion_length >= max_positions:
        return (
            f"{length_option} ({max_completion_length}) is not below the model's context of {max_positions} "
            f"positions: with the prompt before it, a completion that runs that long passes the positions the model "
            f"knows (transformers only warns); set {length_option} below {max_positions} minus the prompts' length"
        )
    tight = [index for index, n in lengths.items() if n > limit]
    if not tight:
        return None
    longest = max(tight, key=lambda index: lengths[index])
    return (
        f"{describe_dataset(name)}: {len(tight)} of {_num_rows(dataset)} prompts leave fewer than {length_option} "
        f"({max_completion_length}) positions of the model's context of {max_positions} (the longest, row {longest}, is "
        f"{lengths[longest]} tokens): a completion that runs that long passes the positions the model knows "
        f"(transformers only warns); lower {length_option} or drop those rows"
    )


def require_chat_template(processing_class: Any, name: str) -> None:
    """Chat-message prompts of dataset ``name`` need a chat template: the processor's own, else its tokenizer's.

    Raises:
        DatasetValidationError: ``processing_class`` has none (transformers would refuse at the first prompt, in
            words that name neither the dataset nor a way out).
    """
    template = getattr(processing_class, "chat_template", None) or getattr(
        getattr(processing_class, "tokenizer", None), "chat_template", None
    )
    if not template:
        raise DatasetValidationError(
            f"{describe_dataset(name)}: the prompts are chat messages, but the tokenizer has no chat template to "
            "render them: write plain-string prompts (psgrpo.load_task(..., chat=False)), or use an instruct "
            "model whose tokenizer has one",
            field="prompt",
        )
