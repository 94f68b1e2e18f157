"""GSM8K grade-school maths problems, from the Hugging Face Hub or a local JSONL file.

Each raw row has a ``question`` and an ``answer``: the worked solution, whose last line is
``#### <gold number>``. :func:`load_gsm8k` turns it into the columns the trainer and evaluator use:

* ``prompt``: the question in a prompt template (plain text, or a message list with ``chat=True``);
* ``answer``: the canonical gold number as text (``"1,000"`` → ``"1000"``);
* ``solution``: the original worked solution;
* ``question``: the original question;
* ``difficulty``: the number of reasoning lines in the solution (before ``####``).

Usage::

    from psgrpo.data.gsm8k import load_gsm8k

    train = load_gsm8k()                                   # openai/gsm8k, config "main" (needs the hub)
    test = load_gsm8k("data/gsm8k", split="test")          # a directory holding test.jsonl
    small = load_gsm8k("data/gsm8k/train.jsonl", chat=True, limit=64)
    small[0]["prompt"]    # [{"role": "user", "content": "Respond in format:\\n<reasoning>..."}]
    small[0]["answer"]    # "72"

A ``source`` that is an existing file or directory is always read locally; the hub is tried only
for anything else. Problems are reported as :class:`DatasetValidationError` naming the row (and,
for local files, ``line N of PATH``) and the field, so a bad file can be fixed by hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import datasets

from psgrpo.data.prompts import format_prompt, resolve_template
from psgrpo.data.validation import (
    DatasetValidationError,
    iter_column,
    more_rows_note,
    short_repr,
    validate_columns,
)
from psgrpo.hub import looks_like_local_path, offline_hint
from psgrpo.rewards.numbers import format_number, parse_number

__all__ = [
    "GOLD_MARKER",
    "GSM8K_HUB_CONFIG",
    "GSM8K_HUB_ID",
    "HubLoadError",
    "extract_gsm8k_gold",
    "load_gsm8k",
    "solution_steps",
]

GSM8K_HUB_ID = "openai/gsm8k"
GSM8K_HUB_CONFIG = "main"
GOLD_MARKER = "####"
RAW_COLUMNS = ("question", "answer")
OUTPUT_COLUMNS = ("prompt", "answer", "solution", "question", "difficulty")
LOCAL_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True)
class _Origin:
    """Where raw rows came from, to say where a bad row is in error messages.

    Attributes:
        name: a file path, or ``openai/gsm8k (split 'train')`` for the hub.
        lines: for a JSON Lines file, the 1-based line number of each row; else ``None``.
    """

    name: str
    lines: Sequence[int] | None = None

    def locate(self, index: int) -> str:
        """``line 5 of data/train.jsonl (row 3)``, or ``row 3 of NAME`` without line numbers."""
        if self.lines is None:
            return f"row {index} of {self.name}"
        return f"line {self.lines[index]} of {self.name} (row {index})"

    def short(self, index: int) -> str:
        """``line 5`` or ``row 3``: how further bad rows are listed."""
        return f"row {index}" if self.lines is None else f"line {self.lines[index]}"


class HubLoadError(OSError):
    """Loading GSM8K from the Hugging Face Hub failed (offline machine, unknown id, ...): an environment
    problem, so ``psgrpo`` shows it as one ``psgrpo: error:`` line (an OSError)."""


def extract_gsm8k_gold(solution: str) -> str:
    """The canonical gold number of a GSM8K solution: the text after the last ``####``.

    ``"... #### 1,000"`` gives ``"1000"``, ``"#### 18.0"`` gives ``"18"``.

    Raises:
        ValueError: there is no ``####``, or what follows it is not one number.
    """
    _, marker, tail = solution.rpartition(GOLD_MARKER)
    if not marker:
        raise ValueError(
            f"no {GOLD_MARKER!r} gold marker in {short_repr(solution)}; "
            f"expected a GSM8K solution ending in '{GOLD_MARKER} <number>'"
        )
    value = parse_number(
        tail.strip()
    )  # "1,234" reads as 1234; "2,5" or "1,2,3" is refused, not read as 25 or 123
    if value is None:
        raise ValueError(
            f"the text after {GOLD_MARKER!r} is {short_repr(tail.strip())}, not a number; "
            f"expected a GSM8K solution ending in '{GOLD_MARKER} <number>'"
        )
    return format_number(value)


def solution_steps(solution: str) -> list[str]:
    """The non-empty reasoning lines (stripped) before the last ``####`` of a GSM8K solution.

    Their count is the row's ``difficulty``. A solution without ``####`` is all reasoning.
    """
    head, marker, _ = solution.rpartition(GOLD_MARKER)
    reasoning = head if marker else solution
    return [line.strip() for line in reasoning.splitlines() if line.strip()]


# --------------------------------------------------------------------------- local files


def _looks_like_path(source: str) -> bool:
    """True when ``source`` is plainly meant as a local path rather than a hub id."""
    return source.endswith(LOCAL_SUFFIXES) or looks_like_local_path(source)


def _resolve_local(source: str, split: str) -> Path | None:
    """The local file to read for ``source``, or ``None`` when ``source`` should be a hub id.

    Raises:
        FileNotFoundError: ``source`` is a directory without ``{split}.jsonl``/``{split}.json``,
            or looks like a file path (``*.jsonl``, ``./...``) that does not exist.
    """
    path = Path(source).expanduser()
    if path.is_dir():
        for candidate in (path / f"{split}.jsonl", path / f"{split}.json"):
            if candidate.is_file():
                return candidate
        found = sorted(child.name for child in path.iterdir())[:20]
        raise FileNotFoundError(
            f"GSM8K directory {path} has no {split}.jsonl (nor {split}.json) for split {split!r}; "
            f"it contains {found}"
        )
    if path.is_file():
        return path
    if _looks_like_path(source):
        raise FileNotFoundError(
            f"GSM8K file {str(path)!r} does not exist; pass a JSONL file with 'question' and "
            f"'answer' fields, a directory holding {split}.jsonl, or a hub id like {GSM8K_HUB_ID!r}"
        )
    return None


def _decode_line(raw: bytes, path: Path, lineno: int) -> str:
    """Decode one line of a local file as UTF-8 (a BOM on line 1 is dropped)."""
    try:
        return raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as err:
        raise DatasetValidationError(f"line {lineno} of {path} is not valid UTF-8: {err.reason}") from None


def _parse_object(text: str, where: str) -> dict[str, Any]:
    """Parse one JSON object, naming ``where`` it came from when it is not one."""
    try:  # without the newline: an error at the line's end would read "column 1" (of the next line)
        value = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as err:
        raise DatasetValidationError(
            f"{where} is not valid JSON ({err.msg} at column {err.colno}): {short_repr(text.strip())}"
        ) from None
    if not isinstance(value, dict):
        raise DatasetValidationError(
            f"{where} is a JSON {type(value).__name__}, not an object with 'question' and 'answer' fields"
        )
    return value


def _read_json_lines(path: Path) -> tuple[list[dict[str, Any]], _Origin]:
    """Read a JSON Lines file (blank lines skipped); rows are located by their line number."""
    rows: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            text = _decode_line(raw, path, lineno)
            if text.strip():
                rows.append(_parse_object(text, f"line {lineno} of {path}"))
                line_numbers.append(lineno)
    return rows, _Origin(str(path), line_numbers)


def _read_json_array(path: Path) -> tuple[list[dict[str, Any]], _Origin]:
    """Read a ``.json`` file holding one array of row objects; rows are located by item index."""
    try:
        items = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as err:
        raise DatasetValidationError(
            f"{path} is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})"
        ) from None
    if not isinstance(items, list):
        raise DatasetValidationError(f"{path} holds a JSON {type(items).__name__}; expected an array of rows")
    rows = [_parse_object(json.dumps(item), f"item {index} of {path}") for index, item in enumerate(items)]
    return rows, _Origin(str(path))


def _read_local(path: Path) -> tuple[list[dict[str, Any]], _Origin]:
    """Read a local ``.jsonl`` file, or a ``.json`` file holding either an array or JSON Lines."""
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8-sig", errors="replace").lstrip()
    if head.startswith("[") and path.suffix == ".json":
        return _read_json_array(path)
    if (
        head.startswith("[")
        and "\n" in head.rstrip()
        and not head.rstrip().split("\n", 1)[0].rstrip().endswith("]")
    ):
        raise DatasetValidationError(  # a pretty-printed array: line 1 alone, "[", is no JSON at all
            f"{path} holds a JSON array over several lines, not JSON Lines (one object per line); name the file "
            "*.json to read it as an array of rows, or write one object per line"
        )
    return _read_json_lines(path)


# --------------------------------------------------------------------------- hub


def _load_hub(source: str, split: str) -> tuple[datasets.Dataset, _Origin]:
    """Load ``source`` (config ``main``) from the hub, turning any failure into :class:`HubLoadError`."""
    try:
        loaded = datasets.load_dataset(source, GSM8K_HUB_CONFIG, split=split)
    except Exception as err:  # offline, unknown id, missing config or split: all mean "use a file"
        raise HubLoadError(
            f"could not load GSM8K from the Hugging Face Hub as {source!r} (config "
            f"{GSM8K_HUB_CONFIG!r}, split {split!r}): hub access failed with {type(err).__name__}: "
            f"{err}. {source!r} is not an existing local file or directory either. Pass a local "
            f"path instead: a JSONL file with 'question' and 'answer' fields (gold after "
            f"'{GOLD_MARKER}'), or a directory holding {split}.jsonl; {offline_hint()}."
        ) from err
    return loaded, _Origin(f"{source} (split {split!r})")


# --------------------------------------------------------------------------- conversion


def _row_problem(question: Any, solution: Any) -> tuple[str, str] | None:
    """``(field, message)`` describing why a raw row is unusable, or ``None`` when it is fine."""
    if question is None or solution is None:
        return ("question" if question is None else "answer"), "the field is missing (or null)"
    if not isinstance(question, str) or not question.strip():
        return "question", f"question {short_repr(question)} is not a non-empty string"
    if not isinstance(solution, str):
        return "answer", (
            f"solution {short_repr(solution)} is of type {type(solution).__name__}; "
            f"expected a string ending in '{GOLD_MARKER} <number>'"
        )
    try:
        extract_gsm8k_gold(solution)
    except ValueError as err:
        return "answer", str(err)
    return None


def _check_rows(questions: Sequence[Any], solutions: Sequence[Any], origin: _Origin) -> None:
    """Raise one :class:`DatasetValidationError` for the first bad row, counting the others."""
    bad = [
        (index, problem)
        for index, (question, solution) in enumerate(zip(questions, solutions, strict=True))
        if (problem := _row_problem(question, solution)) is not None
    ]
    if not bad:
        return
    index, (field, message) = bad[0]
    others = [origin.short(other) for other, _ in bad[1:]]
    raise DatasetValidationError(
        f"GSM8K: {origin.locate(index)}, field {field!r}: {message}{more_rows_note(others)}",
        row=index,
        field=field,
    )


def _convert(
    questions: Sequence[str],
    solutions: Sequence[str],
    template: str,
    chat: bool,
    system_prompt: str | None,
) -> dict[str, list[Any]]:
    """Build the output columns from validated raw questions and solutions."""
    return {
        "prompt": [
            format_prompt(q, template=template, chat=chat, system_prompt=system_prompt) for q in questions
        ],
        "answer": [extract_gsm8k_gold(s) for s in solutions],
        "solution": list(solutions),
        "question": list(questions),
        "difficulty": [len(solution_steps(s)) for s in solutions],
    }


def _check_limit(limit: int | None) -> None:
    """``limit`` must be ``None`` or a positive integer."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")


def load_gsm8k(
    source: str = GSM8K_HUB_ID,
    split: str = "train",
    template: str = "tags",
    chat: bool = False,
    system_prompt: str | None = None,
    limit: int | None = None,
) -> datasets.Dataset:
    """Load GSM8K and shape it for training and evaluation.

    Args:
        source: a local ``.jsonl``/``.json`` file, a directory holding ``{split}.jsonl``, or a hub
            id (loaded with config ``main``; tried only when ``source`` is not an existing path).
        split: the split to load from a hub id or a directory (ignored for a file).
        template: prompt template name (``seed``, ``compact``) or a pattern with ``{question}``.
        chat: make ``prompt`` a list of chat messages instead of plain text.
        system_prompt: optional system message for chat prompts.
        limit: keep only the first ``limit`` rows.

    Returns:
        A :class:`datasets.Dataset` with columns ``prompt``, ``answer`` (canonical gold number),
        ``solution``, ``question`` and ``difficulty`` (number of reasoning lines).

    Raises:
        DatasetValidationError: the data is empty, lacks ``question``/``answer``, has a malformed
            JSON line, or has a row without a parsable ``#### <number>`` gold answer (the message
            names the row, its line for local files, and the field).
        FileNotFoundError: a local path (or ``{split}.jsonl`` in a directory) does not exist.
        HubLoadError: ``source`` is not a local path and the hub could not provide it.
        ValueError: bad ``template`` or ``limit``.
    """
    if not source:
        raise ValueError("source must be a local path or a hub id, got an empty string")
    _check_limit(limit)
    resolve_template(template)  # fail on a bad template before reading any data
    path = _resolve_local(source, split)
    raw: Any
    raw, origin = _read_local(path) if path is not None else _load_hub(source, split)
    validate_columns(raw, RAW_COLUMNS, name="GSM8K", source=origin.name)
    questions = list(islice(iter_column(raw, "question"), limit))
    solutions = list(islice(iter_column(raw, "answer"), limit))
    _check_rows(questions, solutions, origin)
    columns = _convert(questions, solutions, template, chat, system_prompt)
    return datasets.Dataset.from_dict(columns)
