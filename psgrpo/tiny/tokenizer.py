"""A character-level tokenizer, built with ``tokenizers`` and wrapped for ``transformers``.

Every printable ASCII character and the newline is one token, and so is each of the four
format tags (``<reasoning>`` …), which keeps completions short. Because it is a real
``PreTrainedTokenizerFast``, offsets, padding, ``save_pretrained`` and TRL all work unchanged.
"""

from __future__ import annotations

import string

from tokenizers import AddedToken, Tokenizer, decoders, models
from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<|pad|>", "<|endoftext|>", "<|unk|>"
TAGS = ("<reasoning>", "</reasoning>", "<answer>", "</answer>")
CHARS = "\n" + "".join(c for c in string.printable if c.isprintable())


def build_char_tokenizer(model_max_length: int = 512) -> PreTrainedTokenizerFast:
    """Build the character-level tokenizer (deterministic: same vocabulary ids every time).

    Ids: 0 pad, 1 eos, 2 unk, then the characters, then the four tags. Padding side is left,
    as generation with decoder-only models needs. No BOS token is added.
    """
    specials = [PAD, EOS, UNK]
    vocab = {tok: i for i, tok in enumerate(specials + list(CHARS))}
    # BPE with no merges is exactly character-level, and keeps character offsets.
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    core.decoder = decoders.Fuse()
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    core.add_tokens([AddedToken(t, special=False, normalized=False, single_word=False) for t in TAGS])
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        padding_side="left",
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )


CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen-style ChatML, so chat prompts take the same path as with Qwen2.5-Instruct."""


def train_bpe_tokenizer(texts: list[str], vocab_size: int = 512) -> PreTrainedTokenizerFast:
    """Train a small byte-level BPE tokenizer with a ChatML chat template (Qwen2.5's layout).

    Stands in for Qwen2.5's tokenizer in tests and benchmarks: real merges (so token and
    character boundaries differ), ``<|endoftext|>`` as pad and ``<|im_end|>`` as EOS.
    """
    from tokenizers import pre_tokenizers, trainers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer
