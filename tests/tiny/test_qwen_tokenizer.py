"""Tests for psgrpo.tiny.qwen_tokenizer: Qwen2.5's tokenizer built offline from Qwen's BPE ranks.

The reference for every encoding is tiktoken's algorithm (pre-split with Qwen's regex, then merge
the adjacent pair whose union has the lowest rank), written out below on the raw ranks file, plus
ids known from Qwen2.5. Tests needing the ranks file skip when it cannot be had (offline).
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import unicodedata
from functools import cache
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer

from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.qwen_tokenizer import (
    NUM_RANKS,
    QWEN2_5_VOCAB_SIZE,
    RANKS_FILENAME,
    RANKS_SHA256,
    SPECIAL_TOKENS,
    QwenVocabUnavailable,
    build_qwen_tokenizer,
    default_cache_dir,
    fetch_ranks_file,
    main,
    ranks_to_vocab_and_merges,
    read_ranks,
)

SAMPLE_SOLUTION = (
    "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72"
)
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFF), max_size=80
).filter(
    # The tokenizer NFC-normalises and matches its added tokens first; tiktoken's BPE does neither.
    lambda s: unicodedata.is_normalized("NFC", s) and not any(token in s for token, _ in SPECIAL_TOKENS)
)


@pytest.fixture(scope="module")
def tok(qwen_tokenizer):
    return qwen_tokenizer


@pytest.fixture(scope="module")
def ranks_file(qwen_tokenizer) -> Path:
    return fetch_ranks_file(download=False)


@cache
def _ranks(path: Path) -> dict[bytes, int]:
    return read_ranks(path)


def tiktoken_encode(ranks: dict[bytes, int], text: str) -> list[int]:
    """tiktoken's byte-pair encoding of ordinary text (no special tokens), straight from the ranks."""
    ids: list[int] = []
    for piece in regex.findall(PRETOKENIZE_REGEX, text):
        parts = [bytes([b]) for b in piece.encode()]
        while len(parts) > 1:
            unions = [(ranks.get(parts[i] + parts[i + 1]), i) for i in range(len(parts) - 1)]
            unions = [(rank, i) for rank, i in unions if rank is not None]
            if not unions:
                break
            _, i = min(unions)  # the lowest rank; the leftmost among equals
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        ids += [ranks[p] for p in parts]
    return ids


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


INLINE_TEXTS = [SAMPLE_SOLUTION, "Natalia sold clips to 48 of her friends in April."]
"""One GSM8K row written inline: the texts checked wherever the GSM8K copy is missing (CI)."""


def gsm8k_texts(gsm8k_dir: Path, limit: int) -> list[str]:
    """Questions and solutions of the first ``limit`` rows of the GSM8K test split; skips the test without it."""
    path = gsm8k_dir / "test.jsonl"
    if not path.is_file():
        pytest.skip(f"no GSM8K test split at {path} (set PSGRPO_GSM8K_DIR)")
    rows = [json.loads(line) for line in path.read_text().splitlines()[:limit]]
    return [r[key] for r in rows for key in ("question", "answer")]


# ----------------------------------------------------------------------------- the ranks file


def test_cached_file_is_found_without_downloading(ranks_file, tmp_path):
    shutil.copy(ranks_file, tmp_path / RANKS_FILENAME)
    assert fetch_ranks_file(tmp_path, download=False) == tmp_path / RANKS_FILENAME


def test_missing_file_without_download_says_how_to_fetch_it(tmp_path):
    with pytest.raises(QwenVocabUnavailable, match="does not exist") as error:
        fetch_ranks_file(tmp_path / "empty", download=False)
    assert f"python -m psgrpo.tiny.qwen_tokenizer --cache_dir {tmp_path / 'empty'}" in str(error.value)


def test_a_cached_file_with_another_hash_is_refused(tmp_path):
    (tmp_path / RANKS_FILENAME).write_bytes(b"IQ== 0\n")
    with pytest.raises(QwenVocabUnavailable, match=f"expected {RANKS_SHA256}.*delete it"):
        fetch_ranks_file(tmp_path)


def test_pip_that_cannot_run_is_unavailable_not_a_crash(tmp_path):
    with pytest.raises(QwenVocabUnavailable, match="could not run"):
        fetch_ranks_file(tmp_path, python=str(tmp_path / "no-such-python"))
    assert not (tmp_path / RANKS_FILENAME).exists()


def test_cache_dir_follows_psgrpo_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("PSGRPO_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("PSGRPO_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "psgrpo"


def test_cli_copies_the_checked_file(ranks_file, tmp_path, capsys):
    shutil.copy(ranks_file, tmp_path / RANKS_FILENAME)
    copied = main(["--cache_dir", str(tmp_path), "--copy_to", str(tmp_path / "repo" / ".cache")])
    assert copied == tmp_path / "repo" / ".cache" / RANKS_FILENAME
    assert copied.read_bytes() == ranks_file.read_bytes() and str(copied) in capsys.readouterr().out


def test_cli_exits_with_the_reason_when_unavailable(tmp_path):
    (tmp_path / RANKS_FILENAME).write_bytes(b"not the ranks\n")
    with pytest.raises(SystemExit, match="Qwen vocabulary unavailable: .* has sha256"):
        main(["--cache_dir", str(tmp_path)])


@pytest.mark.slow
def test_fetch_downloads_the_wheel_and_keeps_only_the_ranks(tmp_path):
    """The real path: pip download of the pinned qwen-agent wheel, one member read out, hash checked."""
    try:
        path = fetch_ranks_file(tmp_path)
    except QwenVocabUnavailable as error:
        pytest.skip(f"PyPI unreachable: {error}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [RANKS_FILENAME]  # no wheel left behind
    assert len(read_ranks(path)) == NUM_RANKS


@given(tokens=st.lists(st.binary(min_size=1, max_size=8), unique=True, max_size=30))
@settings(max_examples=50, deadline=None)
def test_ranks_file_round_trips(tokens):
    lines = [base64.b64encode(token) + b" " + str(rank).encode() for rank, token in enumerate(tokens)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ranks.tiktoken"
        path.write_bytes(b"\n".join(lines) + b"\n")
        assert read_ranks(path) == {token: rank for rank, token in enumerate(tokens)}


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"IQ== 0\nIg==\n", "line 2: expected 'base64-token rank'"),
        (b"IQ== 0\n!!!! 1\n", "line 2"),
        (b"IQ== 0\nIg== x\n", "line 2"),
        (b"IQ== 0\nIg== 2\n", "rank 1 is missing"),
    ],
)
def test_malformed_ranks_name_the_line(tmp_path, content, match):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        read_ranks(path)


def test_a_ranks_file_of_another_size_is_not_qwens(tmp_path):
    path = tmp_path / "small.tiktoken"
    path.write_bytes(b"IQ== 0\nIg== 1\n")
    with pytest.raises(ValueError, match=f"holds 2 tokens; Qwen's ranks file holds {NUM_RANKS}"):
        build_qwen_tokenizer(path)


def test_merges_are_the_last_step_of_bpe_below_each_rank():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4, b"abc": 5, b"cab": 6}
    vocab, merges = ranks_to_vocab_and_merges(ranks)
    assert vocab == {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "cab": 6}
    # abc: a|bc and ab|c both exist; BPE on a,b,c merges ab (rank 3) before bc (4), so ab+c
    assert merges == [("a", "b"), ("b", "c"), ("ab", "c"), ("c", "ab")]
    assert ranks_to_vocab_and_merges({b" ": 0, b"\n": 1, b" \n": 2})[1] == [("Ġ", "Ċ")]  # byte symbols


@st.composite
def bpe_tables(draw) -> dict[bytes, int]:
    """The 256 bytes, then up to 40 tokens, each two earlier tokens (of ``ab␣``) joined.

    A token is kept only when byte-pair merging of its own bytes can build it, as in every
    trained BPE table (Qwen's included); others are refused (test below) and never produced.
    """
    ranks = {bytes([b]): b for b in range(256)}
    pool = [b"a", b"b", b" "]
    for _ in range(draw(st.integers(1, 40))):
        token = draw(st.sampled_from(pool)) + draw(st.sampled_from(pool))
        if token in ranks:
            continue
        try:
            ranks_to_vocab_and_merges({**ranks, token: len(ranks)})
        except ValueError:
            continue
        ranks[token] = len(ranks)
        pool.append(token)
    return ranks


@given(ranks=bpe_tables(), text=st.text(alphabet="ab \n", max_size=40))
@settings(max_examples=200, deadline=None)
def test_merges_reproduce_tiktoken_on_any_ranks_table(ranks, text):
    """Byte-pair merging by the derived merges is tiktoken's lowest-rank-union encoding (offline, no Qwen file)."""
    vocab, merges = ranks_to_vocab_and_merges(ranks)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token=None, pad_token=None, eos_token=None)
    assert ids(tokenizer, text) == tiktoken_encode(ranks, text)


def test_a_token_no_merge_can_build_is_refused():
    with pytest.raises(
        ValueError, match=r"token b'abc' \(rank 3\) is not a merge of two lower-ranked tokens"
    ):
        ranks_to_vocab_and_merges({b"a": 0, b"b": 1, b"c": 2, b"abc": 3})


# ----------------------------------------------------------------------------- the tokenizer


def test_is_qwen2_tokenizer_with_qwen25_instruct_specials(tok):
    assert isinstance(tok, Qwen2Tokenizer) and len(tok) == NUM_RANKS + len(SPECIAL_TOKENS) == 151_665
    assert tok.convert_tokens_to_ids([t for t, _ in SPECIAL_TOKENS]) == list(range(151_643, 151_665))
    assert (tok.pad_token, tok.pad_token_id) == ("<|endoftext|>", 151_643)
    assert (tok.eos_token, tok.eos_token_id) == ("<|im_end|>", 151_645)
    assert tok.bos_token is None and tok.model_max_length == 131_072
    special = {t for t, is_special in SPECIAL_TOKENS if is_special}
    assert {tok.added_tokens_decoder[i].content for i in tok.all_special_ids} == special
    assert len(tok) <= QWEN2_5_VOCAB_SIZE
    model = json.loads(tok.backend_tokenizer.to_str())["model"]
    assert len(model["merges"]) == NUM_RANKS - 256  # one per multi-byte token, as Qwen2's merges.txt


def test_known_qwen25_ids(tok):
    assert ids(tok, "Hello world") == [9707, 1879]
    assert ids(tok, "<|im_start|>system\n") == [151_644, 8948, 198]
    assert ids(tok, "user") == [872] and ids(tok, "assistant") == [77091]
    assert ids(tok, "\n\n") == [271] and ids(tok, " the") == [279]


@given(number=st.integers(min_value=0, max_value=10**12))
@settings(max_examples=50, deadline=None)
def test_digits_are_one_token_each(tok, number):
    digits = str(number)
    assert ids(tok, digits) == [15 + int(d) for d in digits]  # "0" is 15 … "9" is 24
    assert ids(tok, f" {digits}") == [220] + [15 + int(d) for d in digits]  # a lone space, then the digits


def test_special_and_added_tokens_are_single_ids(tok):
    assert ids(tok, "<|im_end|>") == [151_645]
    assert ids(tok, "a<tool_call>b") == [64, 151_657, 65]
    text = "x<|im_end|><tool_call>"
    assert (
        tok.decode(ids(tok, text), skip_special_tokens=True) == "x<tool_call>"
    )  # <tool_call> is not special


def test_chat_template_is_qwen25_instructs(tok):
    messages = [{"role": "user", "content": "What is 2+3?"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
    )
    with_system = [
        {"role": "system", "content": "Be brief."},
        *messages,
        {"role": "assistant", "content": "5"},
    ]
    assert tok.apply_chat_template(with_system, tokenize=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n"
        "<|im_start|>assistant\n5<|im_end|>\n"
    )


@given(text=TEXT)
@settings(max_examples=150, deadline=None)
def test_encoding_equals_tiktoken_on_any_text(tok, ranks_file, text):
    assert ids(tok, text) == tiktoken_encode(_ranks(ranks_file), text)
    assert tok.decode(ids(tok, text)) == text


def test_encoding_equals_tiktoken_and_round_trips_on_an_inline_gsm8k_row(tok, ranks_file):
    for text in INLINE_TEXTS:
        assert ids(tok, text) == tiktoken_encode(_ranks(ranks_file), text), text
        assert tok.decode(ids(tok, text)) == text


def test_encoding_equals_tiktoken_and_round_trips_on_gsm8k(tok, ranks_file, gsm8k_dir):
    texts = gsm8k_texts(gsm8k_dir, limit=300)
    assert len(texts) == 600
    for text in texts:
        assert ids(tok, text) == tiktoken_encode(_ranks(ranks_file), text), text
        assert tok.decode(ids(tok, text)) == text


def test_offsets_tile_a_solution(tok):
    encoding = tok(SAMPLE_SOLUTION, return_offsets_mapping=True)
    offsets = encoding["offset_mapping"]
    assert offsets[0][0] == 0 and offsets[-1][1] == len(SAMPLE_SOLUTION)
    assert all(prev[1] == cur[0] for prev, cur in zip(offsets[:-1], offsets[1:], strict=True))
    for token_id, (start, end) in zip(encoding["input_ids"], offsets, strict=True):
        assert SAMPLE_SOLUTION[start:end] == tok.decode([token_id])


@pytest.fixture(scope="module")
def reloaded(tok, tmp_path_factory):
    """AutoTokenizer's Qwen2Tokenizer rebuilt from ``tok``'s saved vocab and merges, next to a Qwen2 model."""
    folder = tmp_path_factory.mktemp("reloaded")
    tok.save_pretrained(folder)
    model = build_tiny_model(
        tok, vocab_size=QWEN2_5_VOCAB_SIZE, hidden_size=8, num_layers=1, intermediate_size=16
    )
    model.save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def assert_same_encoding(reloaded, tok, texts: list[str]) -> None:
    for text in texts:
        assert ids(reloaded, text) == ids(tok, text), text
        assert (
            reloaded(text, return_offsets_mapping=True)["offset_mapping"]
            == (tok(text, return_offsets_mapping=True)["offset_mapping"])
        ), text


def test_reload_next_to_a_qwen2_model_gives_identical_ids(tok, reloaded):
    """AutoTokenizer rebuilds a Qwen2Tokenizer from the saved vocab and merges: nothing may change."""
    assert type(reloaded) is Qwen2Tokenizer and reloaded.get_vocab() == tok.get_vocab()
    assert_same_encoding(
        reloaded, tok, [*INLINE_TEXTS, "<|im_start|>user\n é\t  x  <|im_end|>\n", "<tool_call>-5"]
    )
    assert (reloaded.pad_token_id, reloaded.eos_token_id, reloaded.bos_token) == (151_643, 151_645, None)
    assert reloaded.chat_template == tok.chat_template
    assert reloaded.all_special_ids == tok.all_special_ids


def test_reload_next_to_a_qwen2_model_gives_identical_ids_on_gsm8k(tok, reloaded, gsm8k_dir):
    texts = gsm8k_texts(gsm8k_dir, limit=50)
    assert len(texts) == 100
    assert_same_encoding(reloaded, tok, texts)
