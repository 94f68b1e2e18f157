"""The input formats of the process reward models people use, for :class:`~psgrpo.ps.scorers.prm.PRMScorer`.

``format`` (:data:`PRM_FORMATS`) sets ``style``, the separator, the joiner, the
template and the encoding of the PRMs people use, as their model cards and trainers feed them
(a format fills the arguments left at their defaults; any other value wins):

- ``"qwen2.5-math-prm"`` (Qwen2.5-Math-PRM-7B/72B, Qwen2.5-Math-7B-PRM800K; model card): the chat
  ``system`` "Please reason step by step, and put your final answer within \\boxed{}.", ``user`` the
  question, ``assistant`` the steps joined and ended by ``<extra_0>``; the score of a step is the
  softmax probability of class 1 of the two-class head at its ``<extra_0>``. The checkpoint is
  remote code (``Qwen2ForProcessRewardModel``, an ``auto_map`` entry for ``AutoModel`` only): it
  loads with ``AutoModel`` and ``trust_remote_code=True``, which must be given (read the code
  first); without it transformers would load a plain token classifier with a random head, so that
  is refused.
- ``"math-shepherd"`` (peiyi9979/math-shepherd-mistral-7b-prm; model card): ``"{question} {steps}"``,
  each step followed by `` ки`` and the next one by a newline; the score is the softmax over the
  logits of the ``+`` and ``-`` tokens at the tag, probability of ``+``.
- ``"trl"``: a token-classification PRM trained by TRL's ``PRMTrainer`` (``AutoModelForTokenClassification``,
  label 1 = correct): question tokens, then each step's tokens followed by the separator's tokens
  (``"\\n"``, TRL's default ``step_separator``), score = softmax probability of label 1 there.

Every convention here is the one of the model's card or trainer code (the Qwen2.5-Math-PRM and
Math-Shepherd model cards' scoring snippets; TRL's ``PRMTrainer.tokenize_row``); tests/ps/scorers/test_prm.py
checks each against that computation on a tiny random model of the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from transformers import AutoModel, AutoModelForCausalLM, AutoModelForTokenClassification, PretrainedConfig

Encoding = Literal["tokens", "text"]
"""How the input is tokenised: step by step with the separator id appended, or as one string (module docstring)."""

QWEN_PRM_TEMPLATE = (
    "<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
    "<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n{steps}"
)
"""Qwen2.5-Math-PRM's input (its model card's chat messages through Qwen's chat template); the
``<|im_end|>`` after the last step does not change a causal model's earlier outputs."""

PRM_FORMATS: dict[str, dict[str, Any]] = {
    "qwen2.5-math-prm": {
        "style": "token_classification",
        "step_separator": "<extra_0>",
        "step_joiner": "",
        "template": QWEN_PRM_TEMPLATE,
        "positive_label": 1,
        "encoding": "text",
    },
    "math-shepherd": {
        "style": "causal_lm",
        "step_separator": " ки",
        "step_joiner": "\n",
        "template": "{question} {steps}",
        "good_token": "+",
        "bad_token": "-",
        "encoding": "text",
    },
    "trl": {
        "style": "token_classification",
        "step_separator": "\n",
        "step_joiner": "",
        "template": "{question}{steps}",
        "positive_label": 1,
        "encoding": "tokens",
    },
}
"""``format`` name → the settings of that PRM family (module docstring); explicit arguments override them."""

BUILT_IN_DEFAULTS: dict[str, Any] = {
    "style": "token_classification",
    "step_separator": None,
    "step_joiner": None,
    "good_token": "+",
    "bad_token": "-",
    "positive_label": 1,
    "template": "{question}\n\n{steps}",
    "encoding": "",
}
"""PRMScorer's defaults of the settings a format gives (separator and joiner ``None``: per style;
encoding ``""``: ``"tokens"``). An argument left at its default takes the format's value; any other
value wins over the format."""


DEFAULT_SEPARATOR: dict[str, str] = {"token_classification": "<extra_0>", "causal_lm": " ки"}
"""Step separator (token classification) or step tag (causal LM) per style."""

DEFAULT_JOINER: dict[str, str] = {"token_classification": "", "causal_lm": "\n"}
"""Text put between one step's separator and the next step (Qwen PRM: none; Math-Shepherd: newline)."""


def prm_settings(
    format: str = "",
    batch_size: int = 8,
    max_length: int | None = None,
    **given: Any,
) -> dict[str, Any]:
    """The settings a :class:`~psgrpo.ps.scorers.prm.PRMScorer` is built with, checked: ``given`` (the keys of
    :data:`BUILT_IN_DEFAULTS`) over ``format``'s over the built-in defaults, an argument left at its default taking
    the format's value.

    Pure (no model, no tokenizer), so ``psgrpo train`` and ``psgrpo score-steps`` run it on
    ``step_scorer_kwargs`` before anything loads. Raises ``ValueError`` naming the setting.
    """
    if format and format not in PRM_FORMATS:
        raise ValueError(f"format must be one of {list(PRM_FORMATS)}, got {format!r}")
    chosen = {key: value for key, value in given.items() if value != BUILT_IN_DEFAULTS.get(key)}
    settings = {**BUILT_IN_DEFAULTS, **PRM_FORMATS.get(format, {}), **chosen}
    settings["encoding"] = settings["encoding"] or "tokens"
    if settings["encoding"] not in ("tokens", "text"):
        raise ValueError(f"encoding must be 'tokens' or 'text', got {settings['encoding']!r}")
    if settings["style"] not in DEFAULT_SEPARATOR:
        raise ValueError(f"style must be one of {list(DEFAULT_SEPARATOR)}, got {settings['style']!r}")
    template = settings["template"]
    if not isinstance(template, str) or not template.endswith("{steps}") or "{question}" not in template:
        raise ValueError(
            f"template must contain '{{question}}' and end with '{{steps}}' (text after the steps "
            f"does not change a causal PRM's scores), got {template!r}"
        )
    for key in ("step_separator", "step_joiner"):
        if settings[key] is not None and not isinstance(settings[key], str):
            raise ValueError(f"{key} must be a string, got {settings[key]!r}")
    for key, value, low in (("batch_size", batch_size, 1), ("positive_label", settings["positive_label"], 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{key} must be an integer >= {low}, got {value!r}")
    if max_length is not None and (
        isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2
    ):
        raise ValueError(f"max_length must be an integer >= 2 (tokens) or left unset, got {max_length!r}")
    return settings


HEADS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "token_classification": (
        "token-classification head",
        ("ForTokenClassification",),
        'A PRM that scores with next-token logits (Math-Shepherd) takes "style": "causal_lm" (or "format": '
        '"math-shepherd"); otherwise give a PRM trained with a token-classification head (TRL\'s PRMTrainer, '
        '"format": "trl")',
    ),
    "causal_lm": (
        "language-model head",
        ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration"),
        'A token-classification PRM takes "style": "token_classification" (the default)',
    ),
}
"""``style`` → (the head it reads, the endings of the ``architectures`` names that have that head, the advice
when a checkpoint lacks it)."""


def check_prm_architecture(path: str, style: str, config: dict[str, Any]) -> None:
    """Refuse a PRM checkpoint whose saved ``architectures`` lack the head ``style`` reads.

    ``AutoModelForTokenClassification`` loads a causal LM (and ``AutoModelForCausalLM`` a token classifier)
    without a word but a load report: the head it needs is then random weights, and every step score noise.
    ``config`` is the checkpoint's ``config.json`` as a dict (no weights are read). A config without
    ``architectures``, or with an ``auto_map`` (remote code decides the class), is left to the load itself
    (:class:`~psgrpo.ps.scorers.prm.PRMScorer` refuses a model whose weights miss keys).

    Raises:
        ValueError: naming the checkpoint, its architecture and the setting to change.
    """
    architectures = [str(name) for name in config.get("architectures") or []]
    if not architectures or config.get("auto_map") or style not in HEADS:
        return
    head, endings, advice = HEADS[style]
    if any(name.endswith(endings) for name in architectures):
        return
    raise ValueError(
        f"PRM {path} is a {', '.join(architectures)} checkpoint, which has no {head}: read as style {style!r}, "
        f"its step scores would come from a randomly initialised head. {advice}"
    )


def check_no_missing_weights(path: str, style: str, missing_keys: Sequence[str]) -> None:
    """Refuse a loaded PRM that lacks saved weights (``from_pretrained``'s ``missing_keys``): transformers filled
    them with random values, so its scores would be noise (a base model without its head, a head of
    another name). Catches what :func:`check_prm_architecture` cannot see before the load.

    Raises:
        ValueError: naming the checkpoint and up to four of the missing weights.
    """
    if not missing_keys:
        return
    keys = sorted(missing_keys)
    listed = ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
    raise ValueError(
        f"PRM {path} loaded as style {style!r} lacks saved weights ({listed}), which would be random: "
        f"its step scores would be noise. {HEADS[style][2] if style in HEADS else ''}".rstrip()
    )


def auto_class(path: str, style: str, trust_remote_code: bool) -> Any:
    """The Auto class that loads the PRM at ``path``: a causal LM, a token classifier, or a remote-code
    model registered only for ``AutoModel`` (Qwen2.5-Math-PRM), which needs ``trust_remote_code``."""
    if style == "causal_lm":
        check_prm_architecture(path, style, PretrainedConfig.get_config_dict(path)[0])
        return AutoModelForCausalLM
    config, _ = PretrainedConfig.get_config_dict(path)
    auto_map = config.get("auto_map") or {}
    if "AutoModelForTokenClassification" in auto_map or "AutoModel" not in auto_map:
        check_prm_architecture(path, style, config)
        return AutoModelForTokenClassification
    if not trust_remote_code:
        raise ValueError(
            f"PRM {path} is remote code ({auto_map['AutoModel']}, loaded with AutoModel, as Qwen2.5-Math-PRM): "
            "its score head exists only in that code, and without it transformers would load a token classifier "
            'with a random head. Read the code, then pass "trust_remote_code": true in step_scorer_kwargs'
        )
    return AutoModel


def char_owners(offsets: Sequence[Sequence[int]], length: int) -> list[int]:
    """For each character of a text, the index of the last token whose offsets cover it (-1: none)."""
    owners = [-1] * length
    for index, (start, end) in enumerate(offsets):
        for char in range(start, min(end, length)):
            owners[char] = index
    return owners
