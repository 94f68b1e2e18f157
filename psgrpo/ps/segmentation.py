"""Segmentation for PS-GRPO: split each completion into reasoning steps, as completion-token spans.

Two stages, each a small pure function (docs/design.md, "PS-GRPO" step 1):

1. A **text segmenter** splits the decoded completion into character spans, one per step.
   Segmenters live in a registry (the veRL ``core_algos`` pattern)::

       segmenter = get_segmenter("markers", pattern=r"(?m)^\\d+\\.")
       segmenter("1. a\\n2. b")  # [(0, 5), (5, 9)]

   Every segmenter returns spans ``(start, end)`` (end exclusive) that are disjoint, ordered,
   non-empty and together cover the whole text ``[0, len(text))``; ``[]`` for ``""``.

2. **Token mapping**: :func:`token_offsets` gives every generated token its character span in
   the decoded text (from the tokenizer's offsets; when the generated ids are not the canonical
   tokenisation of their text, from the tokens decoded one by one, or by decoding prefixes;
   never by tokenising pieces of the text), and :func:`char_spans_to_token_spans` assigns each token to the step holding its
   first character. Token spans ``(start, end)`` index completion tokens ``[0, n_tokens)``.

:func:`segment_completions` runs both on a batch; :func:`spans_to_segment_index` lays the spans
out as the (B, T) token → step tensor the ``ps`` estimator reads.

Register a new segmenter (a factory whose keyword arguments come from ``segmenter_kwargs``)::

    @SEGMENTERS.register("sentences")
    def make_sentence_segmenter() -> TextSegmenter: ...
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from psgrpo.registry import Registry

Span = tuple[int, int]
"""``(start, end)``, end exclusive: characters of a text, or tokens of a completion."""

TextSegmenter = Callable[[str], list[Span]]
"""``text -> character spans`` of its steps: disjoint, ordered, non-empty, covering the text."""

SegmenterFactory = Callable[..., TextSegmenter]

SEGMENTERS: Registry[SegmenterFactory] = Registry("segmenter")

STEP_LABEL = r"Step\s*\d+\s*:"
"""The arith/seed step label, ``Step 1:``, ``Step 2 :`` … (the diagnostics find step lines by it)."""

DEFAULT_MARKER = r"(?m)^[^\S\n]*(?>[#>*-]+[^\S\n]*)?\**+(?i:step)[^\S\n]*\d+[^\S\n]*:"
"""The default of the ``markers`` segmenter: a step label opening a line (``Step 1:``, ``step 2 :``, ``**Step 3:**``,
``### Step 4:``, ``- Step 5:``). Only at a line start: ``As in Step 1: …`` refers back to a step, it starts none.
Atomic groups keep a line of ten thousand ``*`` linear (it backtracked quadratically: 22 s for 50,000)."""

NON_BLANK_LINE = r"(?m)^(?=[^\S\n]*\S)"
"""Matches (empty) at the start of every line holding a non-whitespace character."""

BLANK_LINES = re.compile(r"\n\s*\n")
"""A paragraph separator: a newline, optional whitespace, a newline (greedy: one match per run)."""


def get_segmenter(name: str, **kwargs: Any) -> TextSegmenter:
    """Build the segmenter registered as ``name`` with ``kwargs``; the error lists the registered ones."""
    return SEGMENTERS.get(name)(**kwargs)


# -----------------------------------------------------------------------------
# text segmenters: text -> character spans


def spans_from_cuts(n_chars: int, cuts: Sequence[int]) -> list[Span]:
    """Character spans of a text of length ``n_chars`` cut at ``cuts`` (any order, duplicates ok).

    Cuts outside ``(0, n_chars)`` are ignored, so every span is non-empty. ``n_chars == 0`` → ``[]``.
    """
    if n_chars == 0:
        return []
    bounds = [0, *sorted({c for c in cuts if 0 < c < n_chars}), n_chars]
    return list(zip(bounds[:-1], bounds[1:], strict=False))


def split_at_markers(text: str, pattern: re.Pattern[str]) -> list[Span]:
    """A step starts at each match of ``pattern``; text before the first match joins the first step.

    The last step runs to the end of the text (so a final ``</reasoning><answer>…`` belongs to
    it). No match → one step, the whole text.
    """
    starts = sorted({m.start() for m in pattern.finditer(text)})
    return spans_from_cuts(len(text), starts[1:])


@SEGMENTERS.register("markers")
def make_marker_segmenter(pattern: str | re.Pattern[str] = DEFAULT_MARKER) -> TextSegmenter:
    """Steps start at each match of a regex (default a ``Step N:`` label opening a line); use inline flags such as
    ``(?m)``.

    Args:
        pattern: the regex a step starts at (Python ``re`` syntax), e.g. ``(?m)^[0-9]+[.]`` for numbered lines.

    Raises:
        ValueError: ``pattern`` does not compile, or matches the empty string at any point of plain text (``x*``: every
            character would start a step); the message names it. Anchored empty matches (``(?m)^``,
            ``(?=Step)``, ``\\b``) are markers like any other.
    """
    if not isinstance(pattern, re.Pattern):
        try:
            pattern = re.compile(pattern)
        except (re.error, TypeError) as err:
            raise ValueError(f"invalid step marker pattern {pattern!r}: {err}") from err
    inside = pattern.match(
        "aa", 1
    )  # inside a word, not at a line start: only an unanchored pattern matches here
    if inside is not None and inside.end() == 1:
        raise ValueError(
            f"step marker pattern {pattern.pattern!r} matches the empty string anywhere, so every character would "
            "start a step; make it need at least one character (x+ rather than x*) or anchor it ((?m)^ …)"
        )
    return partial(split_at_markers, pattern=pattern)


DISPLAY_MATH = re.compile(
    r"\\\[(?:(?!\\\[).)*?\\\]|\$\$.*?\$\$|\\\((?:(?!\\\().)*?\\\)"
    r"|\\begin\{([A-Za-z]+\*?)\}(?:(?!\\begin\{\1\}).)*?\\end\{\1\}",
    re.DOTALL,
)
"""A LaTeX block that may span lines: ``\\[ … \\]``, ``$$ … $$``, ``\\( … \\)``, ``\\begin{env} … \\end{env}``. A block
holds no opener of its own kind, so an unclosed ``\\[`` is no block (it would pair with a later block's closer
and swallow every line between), and the scan stays linear in the text."""

CONTINUES_EQUATION = re.compile(
    r"[^\S\n]*(?:&\s*)?(?:=|≈|≤|≥|≠|\\approx\b|\\le(?:q)?\b|\\ge(?:q)?\b|\\neq\b)"
)
"""A line that goes on with the equation above it (``= 12 + 10``, ``&= 22``, ``\\approx 3.1``)."""

CONTINUES_SENTENCE = re.compile(r"[^\S\n]*(?:[a-z]|[,;:.!?)\]}])")
"""A line that may go on with the sentence on the line right above it: lowercase text or punctuation."""

OPENS_ITEM = re.compile(r"[^\S\n]*[-*+•][^\S\n]")
"""A Markdown bullet (``- ``, ``* ``, ``+ ``, ``• ``): the first one may finish the line that introduces it."""

OPENS_DISPLAY = re.compile(r"[^\S\n]*(?:\\\[|\$\$|\\begin\{)")
"""A line that opens a display-math block, which may finish the sentence above it (``… a total of`` / ``\\[ … \\]``)."""

SENTENCE_ENDS = ".!?"
"""Characters that end a sentence (the last non-space character before a line)."""


def split_lines(text: str) -> list[Span]:
    """A step per non-blank line, except where a line goes on with the one before (the ``newline`` segmenter).

    A newline and any blank lines after it stay with the step before. No cut falls inside a display-math block
    (:data:`DISPLAY_MATH`), and a line joins the step before it when it continues that step's equation
    (:data:`CONTINUES_EQUATION`: a chain ``3 * 4 + 2 * 5`` / ``= 12 + 10`` / ``= 22`` is one step, so its false
    link is checked) or, after text that does not end a sentence (``.``, ``!``, ``?``), when it opens a display
    block (:data:`OPENS_DISPLAY`) or, right below with no blank line between, continues the sentence
    (:data:`CONTINUES_SENTENCE`): ``She runs a total of`` / ``\\[ 30 + 20 = 50 \\]`` / ``in 7 hours.`` is one
    step. The first Markdown bullet after such text joins it too (:data:`OPENS_ITEM`); a bullet after a bullet
    is a step of its own. Models write both constantly (Qwen's ``\\[ … \\]`` blocks); cut there, a fragment without an
    equation took a step of its own and a wrong link went unchecked.
    """
    blocks = [(m.start(), m.end()) for m in DISPLAY_MATH.finditer(text)]  # ordered, disjoint
    starts = [start for start, _ in blocks]
    cuts = []
    lines = itertools.islice(
        re.finditer(NON_BLANK_LINE, text), 1, None
    )  # text before the first line joins it
    for at in (m.start() for m in lines):
        block = bisect.bisect_left(starts, at) - 1  # the last block starting before this line
        if (block >= 0 and at < blocks[block][1]) or CONTINUES_EQUATION.match(text, at):
            continue
        last = at - 1  # the last non-space character above: only the blank lines between are skipped
        while last >= 0 and text[last].isspace():
            last -= 1
        if text[last] in SENTENCE_ENDS:
            cuts.append(at)
            continue
        if OPENS_DISPLAY.match(text, at):
            continue
        if OPENS_ITEM.match(text, at) and not OPENS_ITEM.match(text, text.rfind("\n", 0, last) + 1):
            continue  # "Micah ran" / "- 3.5 * 8 = 28 miles"; the next bullet is a step of its own
        if CONTINUES_SENTENCE.match(text, at) and text.count("\n", last, at) == 1:
            continue  # right below; a blank line between them ends the paragraph: a new step
        cuts.append(at)
    return spans_from_cuts(len(text), cuts)


@SEGMENTERS.register("newline")
def make_newline_segmenter() -> TextSegmenter:
    """A step per non-blank line, kept with the lines that go on with it: no cut inside display math, and a
    ``= …`` continuation, a display block or first bullet finishing a sentence, or a lowercase line right below an
    unfinished sentence joins the step above (:func:`split_lines`)."""
    return split_lines


def split_paragraphs(text: str) -> list[Span]:
    """Cut after every blank-line run (``\\n\\s*\\n``) that has non-whitespace text on both sides.

    The separator stays with the paragraph before it; leading or trailing blank lines never form
    a step of their own.
    """
    cuts = [m.end() for m in BLANK_LINES.finditer(text)]
    return spans_from_cuts(len(text), [c for c in cuts if text[:c].strip() and text[c:].strip()])


@SEGMENTERS.register("paragraph")
def make_paragraph_segmenter() -> TextSegmenter:
    """A step per paragraph (text between blank lines)."""
    return split_paragraphs


def whole_text(text: str) -> list[Span]:
    """The whole text as one step (``[]`` for ``""``)."""
    return spans_from_cuts(len(text), [])


@SEGMENTERS.register("single")
def make_single_segmenter() -> TextSegmenter:
    """One step per completion: PS-GRPO then reduces to one score per completion."""
    return whole_text


# -----------------------------------------------------------------------------
# tokens <-> characters


def special_token_ids(tokenizer: Any) -> set[int]:
    """Ids that ``decode(..., skip_special_tokens=True)`` drops: EOS, pad, and added special tokens."""
    ids = set(getattr(tokenizer, "all_special_ids", []))
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    ids |= {i for i, token in added.items() if getattr(token, "special", False)}
    return ids


def decode_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """The text of ``ids`` as every function here sees it: special tokens dropped, spaces untouched."""
    return tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)


def offsets_by_reencoding(tokenizer: Any, ids: Sequence[int], text: str) -> list[int] | None:
    """Fast path: each token's character END in ``text`` from the tokenizer's offset mapping.

    Re-encodes the whole ``text`` once; the offsets are used only when the re-encoded ids equal
    the non-special ids of ``ids`` (the canonical tokenisation). Special tokens get the end of
    the token before them (an empty span). Only the ends are read, so whitespace that an offset
    mapping trims (GPT-2's ``trim_offsets``) goes to the token after it, and the last text
    token ends at ``len(text)``.

    Returns:
        ``len(ids)`` character ends, or ``None`` when the fast path does not apply (slow
        tokenizer, non-canonical ids).
    """
    if not getattr(tokenizer, "is_fast", False):
        return None
    special = special_token_ids(tokenizer)
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    if list(encoding["input_ids"]) != [i for i in ids if i not in special]:
        return None
    text_ends = [end for _, end in encoding["offset_mapping"]]
    if text_ends:
        text_ends[-1] = len(text)
    ends, previous, k = [], 0, 0
    for token_id in ids:
        if token_id not in special:
            previous, k = text_ends[k], k + 1
        ends.append(previous)
    return ends


def offsets_by_pieces(tokenizer: Any, ids: Sequence[int], text: str) -> list[int] | None:
    """Linear path for non-canonical ids: token i ends at the summed length of tokens 0..i decoded one by one.

    Applies when those one-token texts concatenate to exactly ``text``, as they do for byte-level
    tokenizers unless a multi-byte character is split over tokens (each byte alone decodes to
    ``�``); then the ends equal :func:`offsets_by_decoding`'s at O(n) instead of O(n²) cost.
    Sampled completions are non-canonical when the policy spells an added token out character by
    character or samples a stray byte (which decodes to ``�``).

    Returns:
        ``len(ids)`` character ends, or ``None`` when the pieces do not concatenate to ``text``.
    """
    pieces = [decode_text(tokenizer, [token_id]) for token_id in ids]
    if "".join(pieces) != text:
        return None
    return list(itertools.accumulate(len(piece) for piece in pieces))


def offsets_by_decoding(tokenizer: Any, ids: Sequence[int], text: str) -> list[int]:
    """Fallback: character end of token i = ``len(decode(ids[:i+1]))``, made monotone, ≤ ``len(text)``.

    Always correct for the last token (``decode(ids) == text``); a character made of several
    byte tokens goes to the first of them (its partial decode is already one ``�``). Costs
    O(n²) in the number of tokens (about 50 ms for 800 tokens).
    """
    ends, previous = [], 0
    for i in range(len(ids)):
        previous = max(previous, min(len(decode_text(tokenizer, ids[: i + 1])), len(text)))
        ends.append(previous)
    return ends


def token_offsets(tokenizer: Any, completion_ids: Sequence[int]) -> tuple[str, list[Span]]:
    """The completion text and, for every token id, its character span in that text.

    Args:
        tokenizer: a Hugging Face tokenizer (fast or slow).
        completion_ids: (n,) generated token ids, unpadded, possibly ending with EOS.

    Returns:
        ``(text, offsets)``: ``text`` decoded with special tokens skipped and no space clean-up;
        ``offsets`` has n spans that tile ``[0, len(text))`` in order: span i starts where span
        i−1 ends. Special tokens (EOS, pad) and tail bytes of a multi-byte character get an
        empty span at their position.
    """
    ids = [int(i) for i in completion_ids]
    text = decode_text(tokenizer, ids)
    ends = offsets_by_reencoding(tokenizer, ids, text)
    if ends is None:
        ends = offsets_by_pieces(tokenizer, ids, text)
    if ends is None:
        ends = offsets_by_decoding(tokenizer, ids, text)
    ends = [min(end, len(text)) for end in itertools.accumulate(ends, max)]  # tile, whatever the offsets
    return text, list(zip([0, *ends], ends, strict=False))  # span i = (end of i-1, end of i)


def char_spans_to_token_spans(
    char_spans: Sequence[Span], offsets: Sequence[Span], n_tokens: int
) -> list[Span]:
    """Token spans of the steps: a token belongs to the step that holds its first character.

    Args:
        char_spans: the steps' character spans (a segmenter's output, ordered).
        offsets: (n_tokens,) each token's character span; an empty span means no text.
        n_tokens: number of completion tokens.

    Returns:
        Token spans that are disjoint, ordered, non-empty and cover ``[0, n_tokens)`` exactly
        (``[]`` when ``n_tokens == 0``). An empty-span token joins the step of the token before
        it (the first step if it leads). Step indices are kept non-decreasing along the tokens;
        steps that receive no token are dropped, so there are at most ``max(1, len(char_spans))``.
    """
    if len(offsets) != n_tokens:
        raise ValueError(f"got {len(offsets)} token offsets for n_tokens={n_tokens}")
    starts = [start for start, _ in char_spans]
    step_of_token, step = [], 0
    for first, end in offsets:
        if end > first:
            step = max(step, bisect.bisect_right(starts, first) - 1)
        step_of_token.append(step)
    spans: list[Span] = []
    for t in range(n_tokens):
        if t == 0 or step_of_token[t] != step_of_token[t - 1]:
            spans.append((t, t + 1))
        else:
            spans[-1] = (spans[-1][0], t + 1)
    return spans


# -----------------------------------------------------------------------------
# a batch of completions


@dataclass
class Segmentation:
    """Steps of a batch of completions; ``steps[i][j]`` is the text of tokens ``token_spans[i][j]``.

    Attributes:
        texts: (B,) decoded completions (special tokens skipped).
        steps: (B, S_i) step texts; concatenating a row gives back its text.
        token_spans: (B, S_i) ``(start, end)`` spans of completion tokens, covering each completion.
    """

    texts: list[str]
    steps: list[list[str]]
    token_spans: list[list[Span]]


def segment_completions(
    tokenizer: Any, completion_ids: Sequence[Sequence[int]], segmenter: TextSegmenter
) -> Segmentation:
    """Decode, segment and map to token spans every completion of a batch.

    Args:
        tokenizer: the policy's tokenizer.
        completion_ids: (B, n_i) unpadded token ids per completion, as TRL's
            ``completion_ids_list`` (may end with EOS). Lists or 1-D tensors.
        segmenter: ``text -> character spans`` (see :func:`get_segmenter`).

    Returns:
        A :class:`Segmentation` whose step texts are the text of each step's tokens (so a step
        never splits a token, and one dropped for having no token leaves no text behind).
    """
    texts, steps, token_spans = [], [], []
    for row in completion_ids:
        ids = row.tolist() if hasattr(row, "tolist") else list(row)
        text, offsets = token_offsets(tokenizer, ids)
        spans = char_spans_to_token_spans(segmenter(text), offsets, len(ids))
        texts.append(text)
        token_spans.append(spans)
        steps.append([text[offsets[a][0] : offsets[b - 1][1]] for a, b in spans])
    return Segmentation(texts, steps, token_spans)


def _check_width(token_spans: Sequence[Sequence[Span]], width: int) -> None:
    for i, spans in enumerate(token_spans):
        if spans and spans[-1][1] > width:
            raise ValueError(
                f"completion {i} has a step ending at token {spans[-1][1]}, beyond length {width}"
            )


def spans_to_segment_index(token_spans: Sequence[Sequence[Span]], T: int) -> torch.Tensor:
    """The step index of every completion token, -1 on tokens no span covers (right padding).

    Args:
        token_spans: (B, S_i) token spans per completion.
        T: padded completion length; every span must end at or before it.

    Returns:
        (B, T) LongTensor.
    """
    _check_width(token_spans, T)
    index = torch.full((len(token_spans), T), -1, dtype=torch.long)
    for i, spans in enumerate(token_spans):
        for j, (start, end) in enumerate(spans):
            index[i, start:end] = j
    return index


spans_to_step_index = spans_to_segment_index
"""The former name of :func:`spans_to_segment_index` (one name for the segment index of every method)."""
