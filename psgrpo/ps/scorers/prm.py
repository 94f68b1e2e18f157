"""A Hugging Face process reward model (PRM) as a step scorer: one score in [0, 1] per step.

Two PRM formats are supported (``style``):

``"token_classification"`` (Qwen2.5-Math-PRM, Math-Shepherd with a classification head): a model
whose output ``logits`` are ``(B, T, num_labels)``. Each step is followed by a separator token
and the step's score is ``softmax(logits)[positive_label]`` at that separator::

    Janet has 3 apples ... How many?\\n\\nStep 1: 3 + 2 = 5<extra_0>Step 2: 5 * 2 = 10<extra_0>
                                                      ^ score 1          ^ score 2

    PRMScorer("Qwen/Qwen2.5-Math-PRM-7B", format="qwen2.5-math-prm", trust_remote_code=True)

``"causal_lm"`` (Math-Shepherd): a causal LM trained to predict a good or bad label token after a
step tag; the score is ``P(good) / (P(good) + P(bad))`` from the next-token distribution at the tag::

    Janet has 3 apples ... How many? Step 1: 3 + 2 = 5 ки\\nStep 2: 5 * 2 = 10 ки
                                                    ^ P("+") vs P("-")   ^ ...

    PRMScorer("peiyi9979/math-shepherd-mistral-7b-prm", format="math-shepherd")

**Formats** (``format``): the settings of the PRMs people use (Qwen2.5-Math-PRM, Math-Shepherd,
TRL's PRMTrainer), as their model cards and trainers feed them: :mod:`psgrpo.ps.scorers.prm_formats`.

**Encodings** (``encoding``). ``"tokens"`` (the default, and ``trl``'s, as TRL builds its training
rows): the text before ``{steps}`` in ``template`` (with the question
filled in) is tokenised once, then each step (preceded by ``step_joiner`` from the second step on)
is tokenised on its own and the separator id is appended, so the positions read are exact and
never searched for in re-tokenised text. Special tokens (e.g. a BOS) are added to the question
part only. ``"text"`` (``qwen2.5-math-prm``, ``math-shepherd``, as their model cards do): the whole
input string is built (question part, steps, separators, joiners) and tokenised once; the step's
position is the token covering the last character of its separator (character offsets of a fast
tokenizer), so a tag that is one token only in running text (SentencePiece's ``▁ки``) is read
where the PRM saw it in training.

Truncation: an input longer than ``max_length`` (default: the model's ``max_position_embeddings``)
keeps the question and the leading steps that fit; a first step that does not fit is cut so its
separator is the last position. Steps beyond the context get the score of the last scored step,
and a warning with the count is logged once per scorer (``num_truncated_steps`` keeps counting).

Multi-process training: the PRM is not the trainer's model, so it is never wrapped or sharded.
Every process loads a full copy (also under DeepSpeed ZeRO-3 or FSDP, see
:func:`psgrpo.distributed.replicated_loading`) on its own device and scores its own completions;
no collective runs, so processes may run different numbers of PRM batches.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from transformers import (
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from psgrpo.distributed import replicated_loading
from psgrpo.ps.scorers.base import Prompt, question_text, validate_step_scores
from psgrpo.ps.scorers.prm_formats import (
    DEFAULT_JOINER,
    DEFAULT_SEPARATOR,
    Encoding,
    auto_class,
    char_owners,
    check_no_missing_weights,
    prm_settings,
)

logger = logging.getLogger(__name__)

Style = Literal["token_classification", "causal_lm"]


@dataclass
class _Encoded:
    """One sample's input ids, the positions to read (one per scored step) and how many steps were cut."""

    ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    num_cut: int = 0


def single_token_id(tokenizer: PreTrainedTokenizerBase, text: str, what: str) -> int:
    """The id of ``text`` if the tokenizer encodes it as exactly one token, else a clear ``ValueError``."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ValueError(
            f"PRM {what} {text!r} must be a single token in the PRM tokenizer "
            f"({type(tokenizer).__name__}, {tokenizer.name_or_path or 'unnamed'}), but it encodes to "
            f"{len(ids)} tokens {pieces}; pass the token the PRM was trained with"
        )
    return ids[0]


def _load_tokenizer(
    model: str | PreTrainedModel, tokenizer: str | PreTrainedTokenizerBase | None, trust_remote_code: bool
) -> PreTrainedTokenizerBase:
    """The given tokenizer, or the one loaded from ``tokenizer`` or the model's path."""
    if tokenizer is None:
        if not isinstance(model, str):
            raise ValueError("PRMScorer got a built model without a tokenizer; pass tokenizer=")
        tokenizer = model
    if isinstance(tokenizer, str):
        tokenizer = AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=trust_remote_code)
    return tokenizer


class PRMScorer:
    """Score reasoning steps with a Hugging Face PRM (see the module docstring for the two styles).

    The model is loaded once, put in eval mode on ``device`` and run under ``torch.no_grad()`` in
    batches of ``batch_size`` (right padding with an attention mask; samples are grouped by length).
    ``model`` is a path / hub id (loaded with the Auto class matching ``style``; ``model_kwargs`` such
    as ``trust_remote_code=True`` go to ``from_pretrained``) or an already built model, which then
    needs ``tokenizer``. Calling it follows the scorer interface and returns python floats in [0, 1].

    Args:
        model: the PRM: a local path or hub id, or a built model (which then needs ``tokenizer``).
        tokenizer: the PRM's tokenizer or its path. Default: loaded from ``model``'s path.
        style: ``"token_classification"`` (score = softmax(logits)[positive_label] at each step's separator)
            or ``"causal_lm"`` (score = P(good) / (P(good) + P(bad)) of the next token at each step tag).
        step_separator: the single token after each step. Default: ``<extra_0>`` (token classification),
            `` ки`` (causal LM).
        good_token: causal LM only: the label token of a good step.
        bad_token: causal LM only: the label token of a bad step.
        positive_label: token classification only: the label index whose probability is the score.
        batch_size: samples per PRM forward.
        max_length: longest input in tokens. Default: the model's ``max_position_embeddings``; longer inputs
            keep the question and the leading steps, and later steps get the last scored step's score.
        device: where the PRM runs. Default: CUDA when available, else the CPU.
        dtype: weights dtype, e.g. ``"bfloat16"``. Default: transformers' default.
        template: the text the steps follow, with ``{question}``; it must end with ``{steps}``.
        step_joiner: text between one step's separator and the next step. Default: none (token
            classification), a newline (causal LM).
        format: a PRM family's settings (:data:`PRM_FORMATS`: ``"qwen2.5-math-prm"``, ``"math-shepherd"``,
            ``"trl"``); the arguments above override them. Default: none (the defaults above).
        encoding: ``"tokens"`` (default) or ``"text"``: how the input is tokenised (module docstring).
        **model_kwargs: passed to ``from_pretrained``, e.g. ``trust_remote_code=True``.
    """

    def __init__(
        self,
        model: str | PreTrainedModel,
        tokenizer: str | PreTrainedTokenizerBase | None = None,
        style: Style = "token_classification",
        step_separator: str | None = None,
        good_token: str = "+",
        bad_token: str = "-",
        positive_label: int = 1,
        batch_size: int = 8,
        max_length: int | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        template: str = "{question}\n\n{steps}",
        step_joiner: str | None = None,
        format: str = "",
        encoding: Encoding | Literal[""] = "",
        **model_kwargs: Any,
    ) -> None:
        settings = prm_settings(
            format,
            batch_size,
            max_length,
            style=style,
            step_separator=step_separator,
            step_joiner=step_joiner,
            template=template,
            good_token=good_token,
            bad_token=bad_token,
            positive_label=positive_label,
            encoding=encoding,
        )
        style, template, encoding = settings["style"], settings["template"], settings["encoding"]
        good_token, bad_token = settings["good_token"], settings["bad_token"]
        positive_label = settings["positive_label"]
        step_separator, step_joiner = settings["step_separator"], settings["step_joiner"]
        self.style = style
        self.model_id = (
            model if isinstance(model, str) else (getattr(model, "name_or_path", "") or type(model).__name__)
        )
        self.name = f"PRMScorer({self.model_id})"
        # Check the checkpoint's kind (its config only), then the tokens, before loading a (possibly large) model.
        trust_remote_code = bool(model_kwargs.get("trust_remote_code", False))
        auto = auto_class(model, style, trust_remote_code) if isinstance(model, str) else None
        self.tokenizer = _load_tokenizer(model, tokenizer, trust_remote_code)
        self.step_separator = DEFAULT_SEPARATOR[style] if step_separator is None else step_separator
        self.step_joiner = DEFAULT_JOINER[style] if step_joiner is None else step_joiner
        self.encoding = encoding
        if encoding == "tokens":
            self.separator_id = single_token_id(self.tokenizer, self.step_separator, "step separator")
        elif not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(
                f"encoding 'text' reads token offsets, which {type(self.tokenizer).__name__} (a slow tokenizer) "
                "lacks; load the PRM's fast tokenizer or use encoding 'tokens'"
            )
        if style == "causal_lm":
            self.label_ids = [
                single_token_id(self.tokenizer, good_token, "good label token"),
                single_token_id(self.tokenizer, bad_token, "bad label token"),
            ]
            if self.label_ids[0] == self.label_ids[1]:
                raise ValueError(
                    f"good and bad label tokens are the same token: {good_token!r}, {bad_token!r}"
                )

        if isinstance(model, str):
            dtype_kwargs = {} if dtype is None else {"dtype": dtype}
            with replicated_loading():  # a full copy per process, also under ZeRO-3 / FSDP
                path = model
                model_kwargs.pop("output_loading_info", None)  # read here, whatever was passed
                model, loading = auto.from_pretrained(
                    path, **dtype_kwargs, **model_kwargs, output_loading_info=True
                )
            # a quantizer reports weights it packs differently as missing (GPTQ biases): not a random head
            if getattr(model, "hf_quantizer", None) is None:
                check_no_missing_weights(path, style, loading.get("missing_keys") or ())
            model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        else:
            if device is not None:
                model.to(device)
            if dtype is not None:
                model.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        self.model = model.eval()
        if style == "token_classification":
            num_labels = getattr(self.model.config, "num_labels", None)
            if num_labels is not None and not 0 <= positive_label < num_labels:
                raise ValueError(
                    f"positive_label {positive_label} is not a label index of a {num_labels}-label PRM"
                )
        self.positive_label = positive_label
        self.batch_size = batch_size
        self.max_length = (
            max_length
            if max_length is not None
            else getattr(self.model.config, "max_position_embeddings", None)
        )
        self.template = template
        self.pad_id = next(
            (i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id) if i is not None), 0
        )
        self.num_truncated_steps = 0
        self._warned_truncation = False

    @property
    def device(self) -> torch.device:
        """The device the PRM runs on."""
        return next(self.model.parameters()).device

    def __call__(
        self, prompts: Sequence[Prompt], steps: Sequence[Sequence[str]], **columns: Any
    ) -> list[list[float]]:
        """One score in [0, 1] per step per completion; ``columns`` are accepted and ignored."""
        if len(prompts) != len(steps):
            raise ValueError(f"{self.name}: {len(prompts)} prompts but {len(steps)} step lists")
        encoded = [
            (self._encode if self.encoding == "tokens" else self._encode_text)(i, p, s) if s else _Encoded()
            for i, (p, s) in enumerate(zip(prompts, steps, strict=True))
        ]
        self._note_truncation(encoded)

        read: list[list[float]] = [[] for _ in encoded]
        to_score = sorted(
            (i for i, e in enumerate(encoded) if e.positions), key=lambda i: -len(encoded[i].ids)
        )
        for start in range(0, len(to_score), self.batch_size):
            batch = to_score[start : start + self.batch_size]
            for i, sample_scores in zip(batch, self._score_batch([encoded[i] for i in batch]), strict=True):
                read[i] = sample_scores

        # Steps beyond the context repeat the last score read.
        scores = [r + r[-1:] * (len(s) - len(r)) for r, s in zip(read, steps, strict=True)]
        return validate_step_scores(scores, steps, self.name)

    def _encode(self, index: int, prompt: Prompt, steps: Sequence[str]) -> _Encoded:
        """Token ids of question + steps with a separator after each step, truncated to ``max_length``."""
        prefix = self._prefix(index, prompt)
        encoded = _Encoded(ids=self.tokenizer(prefix, add_special_tokens=True)["input_ids"])
        limit = self.max_length
        for j, step in enumerate(
            map(str.strip, steps)
        ):  # the segmenters keep each step's newline: not the card's
            text = step if j == 0 else self.step_joiner + step
            piece = self.tokenizer.encode(text, add_special_tokens=False) + [self.separator_id]
            if limit is not None and len(encoded.ids) + len(piece) > limit:
                if j > 0:
                    encoded.num_cut += (
                        len(steps) - j
                    )  # with a first step cut short, every step counts (as `text`)
                    break
                piece = piece[: limit - len(encoded.ids) - 1] + [self.separator_id]
                encoded.num_cut = 1
            encoded.ids += piece
            encoded.positions.append(len(encoded.ids) - 1)
        return encoded

    def _prefix(self, index: int, prompt: Prompt) -> str:
        """The template's text before the steps, with the question; refused when it leaves no room for steps."""
        prefix = self.template[: -len("{steps}")].replace("{question}", question_text(prompt))
        length = len(self.tokenizer(prefix, add_special_tokens=True)["input_ids"])
        if self.max_length is not None and length >= self.max_length:
            raise ValueError(
                f"{self.name}: sample {index}: the question part is {length} tokens but the PRM "
                f"context is {self.max_length}; no room left for steps (raise max_length or shorten the template)"
            )
        return prefix

    def _encode_text(self, index: int, prompt: Prompt, steps: Sequence[str]) -> _Encoded:
        """Encoding ``text``: the whole input string tokenised once; each step is read at the token covering
        the last character of its separator. Truncation as in ``tokens``."""
        text = self._prefix(index, prompt)
        ends = []
        for j, step in enumerate(map(str.strip, steps)):
            text += (step if j == 0 else self.step_joiner + step) + self.step_separator
            ends.append(len(text))
        tokens = self.tokenizer(text, add_special_tokens=True, return_offsets_mapping=True)
        ids, owners = tokens["input_ids"], char_owners(tokens["offset_mapping"], len(text))
        positions = [owners[end - 1] for end in ends]
        if any(b <= a for a, b in zip([-1, *positions], positions, strict=False)):
            raise ValueError(
                f"{self.name}: sample {index}: the step separator {self.step_separator!r} is not a token of its "
                f"own in the tokenised text (token positions {positions}); check step_separator and format"
            )
        limit = self.max_length
        if limit is None or len(ids) <= limit:
            return _Encoded(ids=list(ids), positions=positions)
        kept = [p for p in positions if p < limit]
        if kept:
            return _Encoded(ids=list(ids[: kept[-1] + 1]), positions=kept, num_cut=len(steps) - len(kept))
        return _Encoded(ids=[*ids[: limit - 1], ids[positions[0]]], positions=[limit - 1], num_cut=len(steps))

    @torch.no_grad()
    def _score_batch(self, batch: list[_Encoded]) -> list[list[float]]:
        """Run the PRM on one right-padded batch and read the step scores at the separator positions."""
        width = max(len(e.ids) for e in batch)
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, e in enumerate(batch):
            input_ids[row, : len(e.ids)] = torch.tensor(e.ids)
            attention_mask[row, : len(e.ids)] = 1
        kwargs: dict[str, Any] = {"use_cache": False} if hasattr(self.model.config, "use_cache") else {}
        outputs = self.model(
            input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device), **kwargs
        )
        logits = outputs.logits if hasattr(outputs, "logits") else outputs[0]

        results = []
        for row, e in enumerate(batch):
            at_steps = logits[row, e.positions].float()  # (steps, num_labels or vocab)
            if self.style == "causal_lm":
                probs = at_steps[:, self.label_ids].softmax(-1)[:, 0]  # P(good) / (P(good) + P(bad))
            else:
                probs = at_steps.softmax(-1)[:, self.positive_label]
            results.append(probs.tolist())
        return results

    def _note_truncation(self, encoded: list[_Encoded]) -> None:
        """Count steps that did not fit the context; warn the first time it happens."""
        cut = sum(e.num_cut for e in encoded)
        self.num_truncated_steps += cut
        if cut and not self._warned_truncation:
            self._warned_truncation = True
            samples = sum(1 for e in encoded if e.num_cut)
            logger.warning(
                "%s: %d steps in %d samples did not fit the PRM context of %s tokens; steps beyond it "
                "get the score of the last scored step (warned once; see num_truncated_steps)",
                self.name,
                cut,
                samples,
                self.max_length,
            )

    def __repr__(self) -> str:
        return (
            f"PRMScorer({self.model_id!r}, style={self.style!r}, step_separator={self.step_separator!r}, "
            f"encoding={self.encoding!r})"
        )
