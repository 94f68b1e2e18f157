"""Solutions with a labelled first wrong step, in ProcessBench's JSON Lines format, and their gold rows.

One solution a line (arXiv 2412.06559; ``Qwen/ProcessBench`` on the Hub)::

    {"id": "gsm8k-0", "problem": "Janet's ducks lay 16 eggs per day. ...",
     "steps": ["Janet has 16 - 3 - 4 = 9 eggs left.", "She makes 9 * 2 = $18."],
     "label": -1, "final_answer_correct": true}

- ``id``: a string or an integer, unique in the file;
- ``problem``: the question, a non-empty string;
- ``steps``: the solution's steps, a non-empty list of strings;
- ``label``: the 0-based index of the first wrong step, or -1 when every step is right;
- ``final_answer_correct`` (optional): true or false;
- any other field (``generator`` ...) is kept as it is.

:func:`read_labelled_solutions` checks every line and raises one
:class:`~psgrpo.data.validation.DatasetValidationError` naming the file, the line, the field and
what was expected. :func:`gold_by_problem` indexes a GSM8K file (read by
:func:`psgrpo.data.gsm8k.load_gsm8k`, so its ``solution`` keeps the calculator annotations and its
``answer`` is the canonical gold number) by the whitespace-normalised question, the key
:func:`problem_key` gives a solution's ``problem``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psgrpo.data.validation import DatasetValidationError, short_repr

logger = logging.getLogger(__name__)

FIELDS = ("id", "problem", "steps", "label", "final_answer_correct")
"""ProcessBench's fields; ``final_answer_correct`` is optional here."""

GOLD_COLUMNS = ("solution", "answer", "question")
"""The columns a gold row gives a step scorer (as the GSM8K loader names them)."""


@dataclass(frozen=True)
class LabelledSolution:
    """One line of a labelled-solutions file.

    Attributes:
        id: the solution's id (string or integer).
        problem: the question.
        steps: the step texts (S ≥ 1).
        label: first wrong step in [0, S), or -1.
        line: the 1-based line number in the file.
        extra: every other field of the line, ``final_answer_correct`` included, in file order.
    """

    id: str | int
    problem: str
    steps: list[str]
    label: int
    line: int
    extra: dict[str, Any] = field(default_factory=dict)


def problem_key(text: str) -> str:
    """The join key of a question: its words separated by single spaces (case and punctuation kept)."""
    return " ".join(text.split())


_MISSING = object()
"""Stands for a field the line lacks."""


def _field_error(path: Path, lineno: int, name: str, expected: str, value: Any) -> DatasetValidationError:
    got = "the field is missing" if value is _MISSING else f"got {short_repr(value)}"
    return DatasetValidationError(
        f"{path}, line {lineno}, field {name!r}: expected {expected}; {got}", field=name
    )


def _check_line(record: dict[str, Any], path: Path, lineno: int) -> LabelledSolution:
    """One parsed line as a :class:`LabelledSolution`, or the error for its first bad field."""
    get = record.get
    ident = get("id", _MISSING)
    if isinstance(ident, bool) or not isinstance(ident, (str, int)) or ident == "":
        raise _field_error(path, lineno, "id", "a non-empty string or an integer", ident)
    problem = get("problem", _MISSING)
    if not isinstance(problem, str) or not problem.strip():
        raise _field_error(path, lineno, "problem", "the question, a non-empty string", problem)
    steps = get("steps", _MISSING)
    if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
        raise _field_error(path, lineno, "steps", "a non-empty list of strings (the solution's steps)", steps)
    label = get("label", _MISSING)
    if isinstance(label, bool) or not isinstance(label, int) or not -1 <= label < len(steps):
        raise _field_error(
            path,
            lineno,
            "label",
            f"an integer from -1 (no wrong step) to {len(steps) - 1} (the 0-based index of the first wrong "
            f"step among its {len(steps)} steps)",
            label,
        )
    if "final_answer_correct" in record and not isinstance(record["final_answer_correct"], bool):
        raise _field_error(
            path, lineno, "final_answer_correct", "true or false", record["final_answer_correct"]
        )
    extra = {k: v for k, v in record.items() if k not in ("id", "problem", "steps", "label")}
    return LabelledSolution(ident, problem, list(steps), label, lineno, extra)


def read_labelled_solutions(path: str | Path, limit: int | None = None) -> list[LabelledSolution]:
    """Read and check a labelled-solutions JSONL file (module docstring); blank lines are skipped.

    Args:
        path: the file.
        limit: keep only the first ``limit`` solutions (all are still read up to there).

    Raises:
        FileNotFoundError: ``path`` is not a file.
        DatasetValidationError: a line is not a JSON object, a field is missing or of the wrong
            kind, an id repeats, or the file holds no solution.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"--data {str(path)!r} is not a file; expected a JSONL file of labelled solutions "
            f"(one JSON object a line with {', '.join(FIELDS[:4])})"
        )
    solutions: list[LabelledSolution] = []
    seen: dict[str | int, int] = {}
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if limit is not None and len(solutions) >= limit:
                break
            try:
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DatasetValidationError(
                    f"{path}, line {lineno}: not valid UTF-8 ({err.reason})"
                ) from None
            if not text.strip():
                continue
            try:
                record = json.loads(text.rstrip("\r\n"))  # else an error at the line's end reads "column 1"
            except json.JSONDecodeError as err:
                raise DatasetValidationError(
                    f"{path}, line {lineno}: not valid JSON ({err.msg} at column {err.colno}); expected one "
                    f"JSON object a line: {short_repr(text.strip())}"
                ) from None
            if not isinstance(record, dict):
                raise DatasetValidationError(
                    f"{path}, line {lineno}: a JSON {type(record).__name__}, expected an object with the "
                    f"fields {', '.join(FIELDS[:4])}"
                )
            solution = _check_line(record, path, lineno)
            if solution.id in seen:
                raise DatasetValidationError(
                    f"{path}, line {lineno}, field 'id': expected a unique id; {solution.id!r} is also on "
                    f"line {seen[solution.id]}",
                    field="id",
                )
            seen[solution.id] = lineno
            solutions.append(solution)
    warn_contradictory_labels(path, solutions)
    if not solutions:
        raise DatasetValidationError(
            f"--data {path} holds no solution (empty or blank lines only); expected one JSON object a line "
            f"with the fields {', '.join(FIELDS[:4])}"
        )
    return solutions


def warn_contradictory_labels(path: Path, solutions: list[LabelledSolution]) -> None:
    """One warning for solutions labelled with no wrong step (-1) whose ``final_answer_correct`` is false.

    ProcessBench has no such row: every step right means the answer is right. They are read as
    correct solutions (the label decides), so a mislabelled file would silently score as one.
    """
    odd = [s for s in solutions if s.label == -1 and s.extra.get("final_answer_correct") is False]
    if odd:
        logger.warning(
            "%s: %d solution(s) have label -1 (no wrong step) but final_answer_correct false, the first on line "
            "%d; they are scored as correct solutions: check their labels",
            path,
            len(odd),
            odd[0].line,
        )


def gold_by_problem(path: str | Path) -> dict[str, dict[str, str]]:
    """GSM8K gold rows indexed by :func:`problem_key` of their question: ``{key: {solution, answer, question}}``.

    The file is read by :func:`psgrpo.data.gsm8k.load_gsm8k` (its checks and error messages); when
    a question appears twice, the first row is kept.

    Raises:
        FileNotFoundError: ``path`` is not a file.
        DatasetValidationError: a row of the file is not a GSM8K row.
    """
    from psgrpo.data.gsm8k import load_gsm8k

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"--gold {str(path)!r} is not a file; expected a GSM8K JSONL file with 'question' and "
            "'answer' (worked solution ending in '#### <number>') fields"
        )
    rows = load_gsm8k(str(path))
    index: dict[str, dict[str, str]] = {}
    for row in rows:
        index.setdefault(problem_key(row["question"]), {name: row[name] for name in GOLD_COLUMNS})
    return index
