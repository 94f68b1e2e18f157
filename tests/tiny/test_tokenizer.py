"""Tests for psgrpo.tiny.tokenizer: Qwen2's tokenizer class with a byte vocabulary and no merges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer
from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.tokenizer import EOS, PAD, TAGS, build_char_tokenizer, byte_symbols

ASCII_TEXT = st.text(alphabet=st.sampled_from([chr(i) for i in range(32, 127)] + ["\n"]), max_size=120)
TEXT_WITH_TAGS = st.lists(st.one_of(st.sampled_from(TAGS), ASCII_TEXT), max_size=8).map("".join)
SAMPLE = "<reasoning>\nStep 1: 7 + 5 = 12\n</reasoning>\n<answer>12</answer>"


@pytest.fixture(scope="module")
def tok():
    return build_char_tokenizer()


def ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=True)["input_ids"]


def expected_token_count(text: str) -> int:
    """Tags and specials are one token each; every other character is one token per UTF-8 byte."""
    singles = (*TAGS, PAD, EOS)
    count, i = 0, 0
    while i < len(text):
        tag = next((t for t in singles if text.startswith(t, i)), None)
        if tag:
            i, count = i + len(tag), count + 1
        else:
            i, count = i + 1, count + len(text[i].encode())
    return count


def test_byte_symbols_are_gpt2_style():
    symbols = byte_symbols()
    assert len(set(symbols)) == 256
    assert symbols[ord("a")] == "a" and symbols[ord(" ")] == "Ġ" and symbols[ord("\n")] == "Ċ"


def test_is_qwen2_tokenizer_with_special_ids(tok):
    assert isinstance(tok, Qwen2Tokenizer)
    assert (tok.pad_token_id, tok.eos_token_id) == (0, 1)
    assert (tok.pad_token, tok.eos_token) == (PAD, EOS)
    assert tok.bos_token is None and tok.padding_side == "left"


def test_vocabulary_size_and_tag_ids(tok):
    assert len(tok) == 2 + 256 + len(TAGS)
    assert tok.convert_tokens_to_ids(list(TAGS)) == list(range(258, 262))


def test_build_is_deterministic(tok):
    assert build_char_tokenizer().get_vocab() == tok.get_vocab()


def test_no_special_tokens_are_added(tok):
    assert ids(tok, "ab") == tok.convert_tokens_to_ids(["a", "b"])


def test_left_padding(tok):
    batch = tok(["ab", "abcd"], padding=True)
    a, b = tok.convert_tokens_to_ids(["a", "b"])
    assert batch["input_ids"][0] == [0, 0, a, b]
    assert batch["attention_mask"] == [[0, 0, 1, 1], [1, 1, 1, 1]]


def test_non_ascii_is_bytes_not_unknown(tok):
    assert len(ids(tok, "é")) == 2
    assert tok.decode(ids(tok, "é\tx")) == "é\tx"


@pytest.mark.parametrize("tag", TAGS)
def test_each_tag_is_one_token(tok, tag):
    assert tok.convert_ids_to_tokens(ids(tok, tag)) == [tag]


def test_tokens_of_a_sample_completion(tok):
    tokens = tok.convert_ids_to_tokens(ids(tok, SAMPLE))
    assert tokens[:3] == ["<reasoning>", "Ċ", "S"]
    assert tokens[-4:] == ["<answer>", "1", "2", "</answer>"]
    assert len(tokens) == len(SAMPLE) - sum(len(t) for t in TAGS) + len(TAGS)


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_token_count_is_bytes_plus_tags(tok, text):
    assert len(ids(tok, text)) == expected_token_count(text)


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_round_trip_on_ascii_text(tok, text):
    assert tok.decode(ids(tok, text)) == text


def test_round_trip_on_arith_rows(tok):
    rows = make_arith_dataset("test", n=30)
    for text in list(rows["prompt"]) + list(rows["completion"]) + ["  a  \n\n b \n"]:
        assert tok.decode(ids(tok, text)) == text


@given(text=TEXT_WITH_TAGS)
@settings(max_examples=100, deadline=None)
def test_offsets_give_the_exact_span_of_each_token(tok, text):
    encoding = tok(text, return_offsets_mapping=True)
    for token_id, (start, end) in zip(encoding["input_ids"], encoding["offset_mapping"], strict=True):
        assert text[start:end] == tok.decode([token_id])


def test_offsets_are_contiguous_on_a_completion(tok):
    offsets = tok(SAMPLE, return_offsets_mapping=True)["offset_mapping"]
    assert offsets[0] == (0, len("<reasoning>"))
    assert offsets[-1][1] == len(SAMPLE)
    assert all(prev[1] == cur[0] for prev, cur in zip(offsets[:-1], offsets[1:], strict=True))


def test_reload_next_to_a_qwen2_model_gives_identical_ids(tok, tmp_path):
    """AutoTokenizer picks the tokenizer class from the model config: it must still be ours."""
    tok.save_pretrained(tmp_path)
    build_tiny_model(tok, hidden_size=16, num_layers=1, intermediate_size=32).save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    rows = make_arith_dataset("test", n=5)
    for text in list(rows["prompt"]) + list(rows["completion"]) + ["é\t", "  x  "]:
        assert ids(reloaded, text) == ids(tok, text)
    assert reloaded.get_vocab() == tok.get_vocab()
    assert (reloaded.pad_token_id, reloaded.eos_token_id, reloaded.padding_side) == (0, 1, "left")
    assert reloaded.decode(ids(reloaded, SAMPLE)) == SAMPLE
