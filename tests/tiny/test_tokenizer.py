"""Tests for psgrpo.tiny.tokenizer: the character-level tokenizer of the embedded default."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.tokenizer import CHARS, EOS, PAD, TAGS, UNK, build_char_tokenizer

ASCII_TEXT = st.text(alphabet=st.sampled_from([chr(i) for i in range(32, 127)] + ["\n"]), max_size=120)
TEXT_WITH_TAGS = st.lists(st.one_of(st.sampled_from(TAGS), ASCII_TEXT), max_size=8).map("".join)
SAMPLE = "<reasoning>\nStep 1: 7 + 5 = 12\n</reasoning>\n<answer>12</answer>"


@pytest.fixture(scope="module")
def tok():
    return build_char_tokenizer()


def ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=True)["input_ids"]


def expected_token_count(text: str) -> int:
    """Tags (and the special tokens) are one token each; every other character is one token."""
    singles = (*TAGS, PAD, EOS, UNK)
    count, i = 0, 0
    while i < len(text):
        tag = next((t for t in singles if text.startswith(t, i)), None)
        i += len(tag) if tag else 1
        count += 1
    return count


# -----------------------------------------------------------------------------
# vocabulary and special tokens


def test_special_token_ids(tok):
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert (tok.pad_token, tok.eos_token, tok.unk_token) == (PAD, EOS, UNK)


def test_no_bos_token(tok):
    assert tok.bos_token is None


def test_padding_side_is_left(tok):
    assert tok.padding_side == "left"


def test_vocabulary_size(tok):
    assert len(tok) == 3 + len(CHARS) + len(TAGS)


def test_build_is_deterministic(tok):
    assert build_char_tokenizer().get_vocab() == tok.get_vocab()


def test_no_special_tokens_are_added(tok):
    assert ids(tok, "ab") == [tok.convert_tokens_to_ids("a"), tok.convert_tokens_to_ids("b")]


def test_left_padding(tok):
    batch = tok(["ab", "abcd"], padding=True)
    a, b = tok.convert_tokens_to_ids(["a", "b"])
    assert batch["input_ids"][0] == [0, 0, a, b]
    assert batch["attention_mask"] == [[0, 0, 1, 1], [1, 1, 1, 1]]


def test_unknown_character_maps_to_unk(tok):
    assert ids(tok, "é") == [tok.unk_token_id]
    assert ids(tok, "\t") == [tok.unk_token_id]


def test_every_vocabulary_character_is_known(tok):
    assert tok.unk_token_id not in ids(tok, CHARS)


# -----------------------------------------------------------------------------
# tags and characters


@pytest.mark.parametrize("tag", TAGS)
def test_each_tag_is_one_token(tok, tag):
    token_ids = ids(tok, tag)
    assert len(token_ids) == 1
    assert tok.convert_ids_to_tokens(token_ids) == [tag]


def test_tags_are_the_last_four_ids(tok):
    assert tok.convert_tokens_to_ids(list(TAGS)) == list(range(len(tok) - 4, len(tok)))


def test_tokens_of_a_sample_completion(tok):
    tokens = tok.convert_ids_to_tokens(ids(tok, SAMPLE))
    assert tokens[:3] == ["<reasoning>", "\n", "S"]
    assert tokens[-4:] == ["<answer>", "1", "2", "</answer>"]
    tag_chars = sum(len(t) for t in TAGS)
    assert len(tokens) == len(SAMPLE) - tag_chars + len(TAGS)


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_token_count_is_characters_plus_tags(tok, text):
    assert len(ids(tok, text)) == expected_token_count(text)


# -----------------------------------------------------------------------------
# round trip and offsets


def test_round_trip_on_arith_rows(tok):
    rows = make_arith_dataset("test", n=30)
    for text in list(rows["prompt"]) + list(rows["completion"]):
        assert tok.decode(ids(tok, text)) == text


def test_round_trip_of_prompt_plus_completion(tok):
    row = make_arith_dataset("test", n=1)[0]
    text = row["prompt"] + row["completion"]
    assert tok.decode(ids(tok, text)) == text


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_round_trip_on_ascii_text(tok, text):
    assert tok.decode(ids(tok, text)) == text


def test_round_trip_keeps_repeated_spaces_and_newlines(tok):
    text = "  a  \n\n b \n"
    assert tok.decode(ids(tok, text)) == text


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_offsets_give_the_exact_span_of_each_token(tok, text):
    encoding = tok(text, return_offsets_mapping=True)
    tokens = tok.convert_ids_to_tokens(encoding["input_ids"])
    for token, (start, end) in zip(tokens, encoding["offset_mapping"], strict=True):
        assert text[start:end] == token


def test_offsets_are_contiguous_on_a_completion(tok):
    offsets = tok(SAMPLE, return_offsets_mapping=True)["offset_mapping"]
    assert offsets[0][0] == 0
    assert offsets[-1][1] == len(SAMPLE)
    assert all(prev[1] == cur[0] for prev, cur in zip(offsets[:-1], offsets[1:], strict=True))
    assert offsets[0] == (0, len("<reasoning>"))


# -----------------------------------------------------------------------------
# serialisation


def test_save_and_reload_gives_identical_ids(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    rows = make_arith_dataset("test", n=5)
    for text in list(rows["prompt"]) + list(rows["completion"]) + ["é\t", "  x  "]:
        assert ids(reloaded, text) == ids(tok, text)
    assert reloaded.get_vocab() == tok.get_vocab()


def test_save_and_reload_keeps_specials_and_padding(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert (reloaded.pad_token_id, reloaded.eos_token_id, reloaded.unk_token_id) == (0, 1, 2)
    assert reloaded.padding_side == "left"
    assert reloaded.bos_token is None
    assert reloaded.decode(ids(reloaded, SAMPLE)) == SAMPLE
