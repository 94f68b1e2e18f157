"""A Hugging Face process reward model (PRM) as a step scorer: one score in [0, 1] per step.

Two PRM formats are supported (``style``):

``"token_classification"`` (Qwen2.5-Math-PRM, Math-Shepherd with a classification head): a model
whose output ``logits`` are ``(B, T, num_labels)``. Each step is followed by a separator token
and the step's score is ``softmax(logits)[positive_label]`` at that separator::

    Janet has 3 apples ... How many?\\n\\nStep 1: 3 + 2 = 5<extra_0>Step 2: 5 * 2 = 10<extra_0>
                                                      ^ score 1          ^ score 2

    PRMScorer("Qwen/Qwen2.5-Math-PRM-7B", style="token_classification", trust_remote_code=True,
              template="<|im_start|>user\\n{question}<|im_end|>\\n<|im_start|>assistant\\n{steps}")

``"causal_lm"`` (Math-Shepherd): a causal LM trained to predict a good or bad label token after a
step tag; the score is ``P(good) / (P(good) + P(bad))`` from the next-token distribution at the tag::

    Janet has 3 apples ... How many? Step 1: 3 + 2 = 5 ки\\nStep 2: 5 * 2 = 10 ки
                                                    ^ P("+") vs P("-")   ^ ...

    PRMScorer("peiyi9979/math-shepherd-mistral-7b-prm", style="causal_lm", template="{question} {steps}")

Inputs are built at token level: the text before ``{steps}`` in ``template`` (with the question
filled in) is tokenised once, then each step (preceded by ``step_joiner`` from the second step on)
is tokenised on its own and the separator id is appended, so the positions read are exact and
never searched for in re-tokenised text. Special tokens (e.g. a BOS) are added to the question
part only.

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
    AutoModelForCausalLM,
    AutoModelForTokenClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from psgrpo.distributed import replicated_loading
from psgrpo.ps.scorers.base import Prompt, question_text, validate_step_scores

logger = logging.getLogger(__name__)

Style = Literal["token_classification", "causal_lm"]

DEFAULT_SEPARATOR: dict[str, str] = {"token_classification": "<extra_0>", "causal_lm": " ки"}
"""Step separator (token classification) or step tag (causal LM) per style."""

DEFAULT_JOINER: dict[str, str] = {"token_classification": "", "causal_lm": "\n"}
"""Text put between one step's separator and the next step (Qwen PRM: none; Math-Shepherd: newline)."""


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
        **model_kwargs: Any,
    ) -> None:
        if style not in DEFAULT_SEPARATOR:
            raise ValueError(f"style must be one of {list(DEFAULT_SEPARATOR)}, got {style!r}")
        if not template.endswith("{steps}") or "{question}" not in template:
            raise ValueError(
                f"template must contain '{{question}}' and end with '{{steps}}' (text after the steps "
                f"does not change a causal PRM's scores), got {template!r}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.style = style
        self.model_id = (
            model if isinstance(model, str) else (getattr(model, "name_or_path", "") or type(model).__name__)
        )
        self.name = f"PRMScorer({self.model_id})"
        # Check the tokens before loading a (possibly large) model.
        self.tokenizer = _load_tokenizer(model, tokenizer, model_kwargs.get("trust_remote_code", False))
        self.step_separator = DEFAULT_SEPARATOR[style] if step_separator is None else step_separator
        self.step_joiner = DEFAULT_JOINER[style] if step_joiner is None else step_joiner
        self.separator_id = single_token_id(self.tokenizer, self.step_separator, "step separator")
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
            auto = AutoModelForCausalLM if style == "causal_lm" else AutoModelForTokenClassification
            dtype_kwargs = {} if dtype is None else {"dtype": dtype}
            with replicated_loading():  # a full copy per process, also under ZeRO-3 / FSDP
                model = auto.from_pretrained(model, **dtype_kwargs, **model_kwargs)
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
        self.max_length = max_length or getattr(self.model.config, "max_position_embeddings", None)
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
            self._encode(i, p, s) if s else _Encoded()
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
        prefix = self.template[: -len("{steps}")].replace("{question}", question_text(prompt))
        encoded = _Encoded(ids=self.tokenizer(prefix, add_special_tokens=True)["input_ids"])
        limit = self.max_length
        if limit is not None and len(encoded.ids) >= limit:
            raise ValueError(
                f"{self.name}: sample {index}: the question part is {len(encoded.ids)} tokens but the PRM "
                f"context is {limit}; no room left for steps (raise max_length or shorten the template)"
            )
        for j, step in enumerate(steps):
            text = step if j == 0 else self.step_joiner + step
            piece = self.tokenizer.encode(text, add_special_tokens=False) + [self.separator_id]
            if limit is not None and len(encoded.ids) + len(piece) > limit:
                if j > 0:
                    encoded.num_cut = len(steps) - j
                    break
                piece = piece[: limit - len(encoded.ids) - 1] + [self.separator_id]
                encoded.num_cut = 1
            encoded.ids += piece
            encoded.positions.append(len(encoded.ids) - 1)
        return encoded

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
        return f"PRMScorer({self.model_id!r}, style={self.style!r}, step_separator={self.step_separator!r})"
