"""A character-level tokenizer for the embedded default: Qwen2's tokenizer class with no merges.

It is a real ``transformers`` ``Qwen2Tokenizer`` (byte-level BPE, Qwen's pre-tokenizer), given
a vocabulary of the 256 byte symbols and **no merges**: every byte, so every ASCII character,
is one token. The four format tags (``<reasoning>`` …) are single added tokens, which keeps
completions short. Because it is the same class Qwen2.5 uses, ``AutoTokenizer`` reloads it
exactly from a checkpoint next to a ``qwen2`` model config, and offsets, padding, chat
templates and TRL behave as they do for Qwen2.5.
"""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer, models
from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

PAD, EOS = "<|pad|>", "<|endoftext|>"
TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")


def byte_symbols() -> list[str]:
    """The 256 printable stand-ins that byte-level BPE uses for bytes 0..255, in byte order.

    Printable Latin-1 bytes stand for themselves; the others (control bytes, space …) are
    shifted to code points from 256 up, so space is ``Ġ`` and newline is ``Ċ`` as in GPT-2/Qwen.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols, shifted = {}, 0
    for byte in range(256):
        if byte in keep:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + shifted)
            shifted += 1
    return [symbols[b] for b in range(256)]


def build_char_tokenizer(model_max_length: int = 512) -> Qwen2Tokenizer:
    """Build the character-level tokenizer (deterministic: same ids every time).

    Ids: 0 ``<|pad|>``, 1 ``<|endoftext|>`` (EOS), 2..257 the bytes, 258..261 the four tags.
    Padding side is left, as generation with decoder-only models needs. No BOS is added.
    """
    vocab = {PAD: 0, EOS: 1}
    vocab.update({symbol: 2 + i for i, symbol in enumerate(byte_symbols())})
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=[],
        pad_token=PAD,
        eos_token=EOS,
        unk_token=None,
        padding_side="left",
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in TAGS])
    return tokenizer


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen-style ChatML, so chat prompts take the same path as with Qwen2.5-Instruct."""


def train_bpe_tokenizer(texts: list[str], vocab_size: int = 512) -> Qwen2Tokenizer:
    """Train a small byte-level BPE tokenizer in Qwen2.5's layout, with a ChatML chat template.

    Stands in for Qwen2.5's tokenizer in tests and benchmarks: the same class, pre-tokenizer
    and normaliser, real merges (so token and character boundaries differ), ``<|endoftext|>``
    as pad and ``<|im_end|>`` as EOS. It reloads identically from a checkpoint folder.
    """
    import json

    from tokenizers import trainers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    template = Qwen2Tokenizer(vocab={s: i for i, s in enumerate(specials)}, merges=[])
    core = Tokenizer(models.BPE())
    core.normalizer = template._tokenizer.normalizer
    core.pre_tokenizer = template._tokenizer.pre_tokenizer  # Qwen's split regex + byte level
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=byte_symbols(), show_progress=False
    )
    core.train_from_iterator(texts, trainer=trainer)
    model = json.loads(core.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = Qwen2Tokenizer(
        vocab=model["vocab"],
        merges=merges,
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        unk_token=None,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer
