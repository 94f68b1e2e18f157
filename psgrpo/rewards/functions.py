"""Outcome rewards: answer extraction, correctness and format.

Every reward function has TRL's signature, ``f(completions, **kwargs) -> list[float]``: ``completions``
holds plain strings or conversational message lists (the last message is scored), dataset columns
arrive as keyword lists (the gold answer column is ``answer``). Each returns one float per
completion, never ``None``, also for empty output. TRL logs each reward under its ``__name__``.

The scale (docs/design.md, "Outcome GRPO"):

- ``correctness_reward``: 2.0 exact, 1.5 numerically close (``|p - g| <= rel_tol * max(1, |g|)``,
  ``rel_tol`` = 1e-2 by default, 0 disables close credit), else 0.
- ``format_reward``: 0.2 for each of ``<reasoning>``, ``</reasoning>``, ``<answer>``, ``</answer>``
  that is used properly (once, in order, nothing after ``</answer>``); at most 0.8.
- ``strict_format_reward``: 0.8 when the whole completion is exactly
  ``<reasoning>…</reasoning><answer>…</answer>``, else 0.

Anti-gaming rules, so that spamming never pays more than the clean format:

- a completion with more than one ``<answer>`` or more than one ``</answer>`` has no answer at all
  (listing several candidates earns 0 correctness);
- a format tag earns credit only if it occurs exactly once, after every occurrence of the tags that
  should precede it; only text up to the first ``</answer>`` is read for tags, and any non-space text
  after it forfeits the ``</answer>`` credit. So appending anything after ``</answer>`` never raises
  the format reward.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

from math_verify import parse as mv_parse
from math_verify import verify as mv_verify
from math_verify.errors import TimeoutException

from psgrpo.registry import Registry
from psgrpo.rewards.numbers import parse_number

RewardFunc = Callable[..., list[float]]

REASONING_OPEN, REASONING_CLOSE = "<reasoning>", "</reasoning>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
FORMAT_TAGS = (REASONING_OPEN, REASONING_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
"""The four format tags, in the order they must appear."""

EXACT_REWARD = 2.0
CLOSE_REWARD = 1.5
DEFAULT_REL_TOL = 1e-2
"""Close-credit tolerance: absolute 0.01 for |gold| <= 1 (two-decimal rounding), 1% of |gold| beyond, so from a
gold of 100 on an answer off by one earns the close reward (``correctness_rel_tol 0`` turns it off)."""
TAG_REWARD = 0.2
STRICT_FORMAT_REWARD = 0.8
MATH_VERIFY_TIMEOUT_S = 5
"""Per-call limit for math-verify (signal based, so only applied in the main thread on POSIX)."""
MATH_VERIFY_MAX_CHARS = 1000
"""A predicted answer longer than this is wrong without asking math-verify (bounded work on model text)."""

# -----------------------------------------------------------------------------
# completion text and answer extraction


def completion_text(completion: str | Sequence[dict[str, Any]] | dict[str, Any]) -> str:
    """Text of one completion: a plain string, or the content of the last message of a conversation.

    Message content may be a string, ``None`` (treated as empty) or a list of typed parts, whose
    ``text`` fields are joined.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        message = completion
    elif isinstance(completion, Sequence):
        if len(completion) == 0:
            return ""
        message = completion[-1]
    else:
        raise TypeError(f"completion must be a string or a list of messages, got {type(completion).__name__}")
    content = message.get("content") if isinstance(message, dict) else message
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal parts: [{"type": "text", "text": "..."}]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise TypeError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (nested braces allowed); ``None`` if it is not closed."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i = start + len("\\boxed{")
    depth = 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def extract_answer(text: str) -> str | None:
    """The model's final answer in ``text``, stripped, or ``None`` if there is none (or it is empty).

    1. If any answer tag occurs, the answer is the content of the one ``<answer>…</answer>`` block.
       More than one ``<answer>`` or ``</answer>``, an unclosed block or a stray ``</answer>`` give
       ``None``: no fallback is tried, so listing several answers never pays.
    2. Otherwise the content of the last ``\\boxed{…}`` (``None`` if that one is not closed).
    3. Otherwise GSM8K style: the first line after the last ``####``.
    """
    n_open, n_close = text.count(ANSWER_OPEN), text.count(ANSWER_CLOSE)
    if n_open or n_close:
        if n_open != 1 or n_close != 1:
            return None
        start = text.index(ANSWER_OPEN) + len(ANSWER_OPEN)
        end = text.index(ANSWER_CLOSE)
        answer = text[start:end] if end >= start else ""
    elif "\\boxed{" in text:
        answer = _last_boxed(text) or ""
    elif "####" in text:
        answer = text.rsplit("####", 1)[1].strip().split("\n", 1)[0]
    else:
        return None
    answer = answer.strip()
    return answer or None


# -----------------------------------------------------------------------------
# answer comparison

Grade = Literal["exact", "close", "wrong"]

_EMPHASIS_RE = re.compile(r"^(?P<mark>[*_]{1,3}|`)(?P<inner>[^*_`]+)(?P=mark)$")
"""A whole answer in Markdown emphasis or code: ``**18**``, ``*$18*``, ``` `18` ```."""
_UNITS_RE = re.compile(
    r"^(?P<number>.*?\d%?)\$?(?:\s+|(?=[/(]))(?P<units>[(/]?[^\W\d_][^\W\d_\s.,'’\-/()²³%]*"
    r"(?:[\s.,'’\-/()²³%]+[^\W\d_][^\W\d_\s.,'’\-/()²³%]*)*[)²³]?)[.!]?$"
)
"""A number, then unit words: letters with spaces, ``.``, ``,``, ``-``, ``/``, ``'``, brackets, ``²``/``³``, ``%``
between them, and no digit (``5 apples``, ``$18/hour``, ``163 Post-it notes``, ``18 (dollars)``, ``18 m²``)."""
_TRAILING_SIGN_RE = re.compile(r"^(?P<number>.*?\d)\s?\$[.!]?$")
"""An amount with the dollar sign after it: ``350$``."""
_NOT_UNITS = {"or", "and"}
"""Words that make unit text a second quantity or a hedge (``4 apples and 3 pears``; ``3 or 4`` has a digit)."""


def _parse_number_with_units(text: str) -> Fraction | None:
    """``parse_number``, also accepting the ways people write one amount with its units.

    Unit words after the number (``5 apples``, ``18 dollars.``, ``$18/hour``, ``163 Post-it notes``,
    ``18 (dollars)``, ``18 m²``, ``10% more``), a dollar sign after it (``350$``) and Markdown emphasis
    around it (``**18**``). The units hold no digit and none of :data:`_NOT_UNITS`, so ``3 or 4``,
    ``18 (or 17)`` and ``4 apples and 3 pears`` are not numbers.
    """
    text = text.strip()
    value = parse_number(text)
    if value is not None:
        return value
    if (emphasis := _EMPHASIS_RE.match(text)) is not None:
        return _parse_number_with_units(emphasis["inner"])
    if (sign_after := _TRAILING_SIGN_RE.match(text)) is not None:
        return parse_number(sign_after["number"])
    match = _UNITS_RE.match(text)
    if match is None:
        return None
    words = re.split(r"[^\w]+", match["units"].lower())
    if _NOT_UNITS.intersection(words):
        return None
    return parse_number(match["number"])


_NUMBER_LIST_RE = re.compile(
    r"(?<![\d.,/])\d+(?:\.\d+)?(?:\s*,\s+|\s*,(?!\d{3}(?!\d))|\s+|\s*(?:\.{3}|…)[\s,]*)\d+(?![\d/])"
)
"""Two numbers side by side, apart only by spaces, a comma or an ellipsis: ``1 2``, ``8, 9``, ``3 ... 100``
(not ``1,000``, ``3 1/2``)."""


def is_number_list(text: str) -> bool:
    """Whether ``text`` lists numbers side by side (``1 2 3 … 100``, ``8, 9``): never one numeric answer.

    math-verify reads such a list as something (``1 2 3`` as 6, ``1, 2, ..., 100`` as 100), so a
    policy could hedge with it; :func:`grade_answer` grades it wrong when the gold is one number.
    """
    return _NUMBER_LIST_RE.search(text) is not None


def _math_verify_timeout() -> int | None:
    """math-verify's signal-based timeout works only in the main thread on POSIX; elsewhere none."""
    if os.name == "posix" and threading.current_thread() is threading.main_thread():
        return MATH_VERIFY_TIMEOUT_S
    return None


_MV_PARSED: dict[str, tuple[Any, ...]] = {}
_MV_PARSED_SIZE = 4096


def _mv_parse(text: str) -> tuple[Any, ...]:
    """math-verify parse of ``text`` read as one whole expression (wrapped in ``\\boxed{}``).

    Wrapping makes ``3 or 4`` a set {3, 4} rather than "the last number, 4"; a failure gives ``()``.
    Successful parses are remembered (up to 4096, oldest dropped first); a failure is not, because
    math-verify reports a timeout (a loaded machine) as an empty parse, and remembering it would
    grade every later answer to that gold wrong for the rest of the run.
    """
    if (parsed := _MV_PARSED.get(text)) is not None:
        return parsed
    try:
        parsed = tuple(mv_parse(f"\\boxed{{{text}}}", parsing_timeout=_math_verify_timeout()))
    except (Exception, TimeoutException):
        return ()
    if parsed:
        if len(_MV_PARSED) >= _MV_PARSED_SIZE:
            _MV_PARSED.pop(next(iter(_MV_PARSED)))
        _MV_PARSED[text] = parsed
    return parsed


def math_verify_equal(predicted: str, gold: str) -> bool:
    """Whether math-verify finds ``predicted`` equal to ``gold`` (LaTeX, expressions, equations).

    Any error or timeout counts as not equal.
    """
    gold_parsed, pred_parsed = _mv_parse(gold), _mv_parse(predicted)
    if not gold_parsed or not pred_parsed:
        return False
    try:
        return bool(mv_verify(list(gold_parsed), list(pred_parsed), timeout_seconds=_math_verify_timeout()))
    except (Exception, TimeoutException):
        return False


def grade_answer(predicted: str | None, gold: str, rel_tol: float = DEFAULT_REL_TOL) -> Grade:
    """Grade a predicted answer against the gold one: ``"exact"``, ``"close"`` or ``"wrong"``.

    Both parse as numbers (``1,000``, ``$18``, ``18.0``, ``3/4``, ``5 apples``): exact if equal, close
    if ``|p - g| <= rel_tol * max(1, |g|)`` (never when ``rel_tol`` is 0), else wrong. Otherwise
    (LaTeX ``\\frac{3}{4}``, ``x = 5``, symbolic gold) math-verify decides exact or wrong.

    Never more than one answer: a list of numbers (:func:`is_number_list`) against a numeric gold,
    or a prediction longer than :data:`MATH_VERIFY_MAX_CHARS`, is wrong.
    """
    if predicted is None or not predicted.strip():
        return "wrong"
    p, g = _parse_number_with_units(predicted), _parse_number_with_units(gold)
    if p is not None and g is not None:
        if p == g:
            return "exact"
        tolerance = Fraction(str(rel_tol)) * max(Fraction(1), abs(g))
        return "close" if rel_tol > 0 and abs(p - g) <= tolerance else "wrong"
    if len(predicted) > MATH_VERIFY_MAX_CHARS or (g is not None and is_number_list(predicted)):
        return "wrong"
    return "exact" if math_verify_equal(predicted, gold) else "wrong"


def answers_match(
    predicted: str | None,
    gold: str,
    rel_tol: float = DEFAULT_REL_TOL,
    exact: float = EXACT_REWARD,
    close: float = CLOSE_REWARD,
) -> float:
    """Correctness score of one predicted answer: ``exact``, ``close`` or 0.0 (see :func:`grade_answer`)."""
    return {"exact": exact, "close": close, "wrong": 0.0}[grade_answer(predicted, gold, rel_tol)]


# -----------------------------------------------------------------------------
# correctness reward


def make_correctness_reward(
    exact: float = EXACT_REWARD, close: float = CLOSE_REWARD, rel_tol: float = DEFAULT_REL_TOL
) -> RewardFunc:
    """Build a correctness reward (``__name__`` ``correctness_reward``) that reads the ``answer`` column.

    Args:
        exact: reward for an exactly right answer.
        close: reward for a numerically close answer.
        rel_tol: close-credit tolerance, ``|p - g| <= rel_tol * max(1, |g|)``; 0 disables it.
    """
    if rel_tol < 0:
        raise ValueError(f"rel_tol must be >= 0, got {rel_tol}")

    def correctness_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        """``exact`` / ``close`` / 0 per completion, comparing its extracted answer with ``answer``."""
        if "answer" not in kwargs:
            given = ", ".join(sorted(kwargs)) or "none"
            raise ValueError(
                "correctness_reward needs the gold answer column 'answer' in the dataset; "
                f"columns given: {given}"
            )
        golds = kwargs["answer"]
        if len(golds) != len(completions):
            raise ValueError(f"got {len(completions)} completions but {len(golds)} gold answers")
        return [
            float(answers_match(extract_answer(completion_text(c)), str(gold), rel_tol, exact, close))
            for c, gold in zip(completions, golds, strict=True)
        ]

    return correctness_reward


correctness_reward = make_correctness_reward()

# -----------------------------------------------------------------------------
# format rewards


def format_score(text: str) -> float:
    """Format score of one text: ``TAG_REWARD`` per properly used tag, at most 0.8.

    Only the text up to the first ``</answer>`` is read for tags. Tag k of
    ``<reasoning> </reasoning> <answer> </answer>`` counts when it occurs exactly once there and
    every occurrence of the tags before it in that list comes earlier. ``</answer>`` counts only
    if nothing but whitespace follows it in the whole text.
    """
    cut = text.find(ANSWER_CLOSE)
    head = text if cut < 0 else text[: cut + len(ANSWER_CLOSE)]
    positions = [[m.start() for m in re.finditer(re.escape(tag), head)] for tag in FORMAT_TAGS]
    score = 0.0
    for k, occurrences in enumerate(positions):
        if len(occurrences) != 1:
            continue
        if any(p > occurrences[0] for earlier in positions[:k] for p in earlier):
            continue
        if FORMAT_TAGS[k] == ANSWER_CLOSE and text[cut + len(ANSWER_CLOSE) :].strip():
            continue
        score += TAG_REWARD
    return round(score, 10)


def format_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """0.2 per properly used format tag, max 0.8 (see :func:`format_score`)."""
    return [format_score(completion_text(c)) for c in completions]


# both blocks need a non-space character: "<reasoning>\n</reasoning>" is as empty as "<reasoning></reasoning>"
_STRICT_RE = re.compile(r"^\s*<reasoning>\s*\S.*?</reasoning>\s*<answer>\s*\S.*?</answer>\s*$", re.DOTALL)


def strict_format_score(text: str) -> float:
    """0.8 if ``text`` is exactly one non-empty ``<reasoning>`` block then one non-empty ``<answer>`` block (each
    with a non-space character), else 0."""
    if any(text.count(tag) != 1 for tag in FORMAT_TAGS):
        return 0.0
    return STRICT_FORMAT_REWARD if _STRICT_RE.match(text) else 0.0


def strict_format_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """0.8 per completion in the exact ``<reasoning>…</reasoning><answer>…</answer>`` shape, else 0."""
    return [strict_format_score(completion_text(c)) for c in completions]


# -----------------------------------------------------------------------------
# registry

REWARD_FUNCS: Registry[RewardFunc] = Registry("reward function")
REWARD_FUNCS.register("correctness")(correctness_reward)
REWARD_FUNCS.register("format")(format_reward)
REWARD_FUNCS.register("strict_format")(strict_format_reward)


def get_reward_funcs(names: Sequence[str] | str, **correctness_kwargs: Any) -> list[RewardFunc]:
    """Reward functions by name (a list, or one comma-separated string), in the order given.

    ``correctness_kwargs`` (``exact``, ``close``, ``rel_tol``) configure the correctness reward.

    Raises:
        ValueError: for an unknown or repeated name.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    for name in names:
        resolve_reward_func(name)  # an unknown name: ValueError listing the registered ones
    repeated = sorted({n for n in names if list(names).count(n) > 1})
    if repeated:
        raise ValueError(f"reward function(s) {repeated} listed more than once")
    return [
        make_correctness_reward(**correctness_kwargs)
        if n == "correctness" and correctness_kwargs
        else resolve_reward_func(n)
        for n in names
    ]


def resolve_reward_func(name: str) -> RewardFunc:
    """A registered reward function, or one named by its import path (``my_rewards.accuracy``).

    An import path is read as ``trl grpo`` reads it: the module (searched in the current directory
    first, then ``sys.path``) and a callable in it. Registered names win over import paths.

    Raises:
        ValueError: an unknown name, a module that cannot be imported, or no callable of that name in it.
    """
    if name in REWARD_FUNCS or "." not in name:
        return REWARD_FUNCS.get(name)
    module_path, _, attribute = name.rpartition(".")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as trl grpo: my_rewards.py next to where the command runs
    try:
        module = importlib.import_module(module_path)
    except Exception as err:  # not found, or the module itself fails: both are the user's file to fix
        raise ValueError(
            f"reward_funcs={name!r}: cannot import module {module_path!r} ({type(err).__name__}: {err}); an "
            "import path names a function in a module of the current directory or of sys.path, such as "
            f"my_rewards.accuracy; registered names: {', '.join(REWARD_FUNCS.names())}"
        ) from None
    func = getattr(module, attribute, None)
    if not callable(func):
        raise ValueError(
            f"reward_funcs={name!r}: module {module_path!r} ({getattr(module, '__file__', '?')}) has no function "
            f"{attribute!r}"
        )
    return func
