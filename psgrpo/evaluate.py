"""Held-out evaluation: batched generation and answer accuracy.

``evaluate_model`` is what ``psgrpo eval`` and the before/after report of ``psgrpo train``
call. It generates one completion per prompt (greedy by default), then scores it with the
same answer extraction and correctness check as the training rewards.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import torch
from datasets import Dataset
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from psgrpo.data.validation import validate_columns
from psgrpo.rewards import extract_answer, format_reward, grade_answer


def _prompt_ids(tokenizer: PreTrainedTokenizerBase, prompt: str | list[dict[str, Any]]) -> list[int]:
    """Token ids of one prompt; conversational prompts go through the chat template."""
    if isinstance(prompt, str):
        return tokenizer(prompt, add_special_tokens=False)["input_ids"]
    return tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=True)[
        "input_ids"
    ]


@torch.no_grad()
def generate_completions(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str | list[dict[str, Any]]],
    max_new_tokens: int = 256,
    batch_size: int = 32,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    show_progress: bool = True,
) -> tuple[list[str], list[int]]:
    """Generate one completion per prompt in left-padded batches.

    Returns:
        (texts, lengths): decoded completions (special tokens removed) and their token counts
        (up to and including EOS).
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    texts: list[str] = []
    lengths: list[int] = []
    sampling = {"do_sample": do_sample}
    if do_sample:
        sampling.update(temperature=temperature, top_k=top_k, top_p=top_p)
    for start in tqdm(
        range(0, len(prompts), batch_size), desc="generate", disable=not show_progress, leave=False
    ):
        batch = [_prompt_ids(tokenizer, p) for p in prompts[start : start + batch_size]]
        width = max(len(ids) for ids in batch)
        input_ids = torch.tensor([[pad_id] * (width - len(ids)) + ids for ids in batch], device=device)
        attention_mask = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=device
        )
        out = model.generate(
            input_ids=input_ids,
            attention_mask=attention_mask,
            max_new_tokens=max_new_tokens,
            pad_token_id=pad_id,
            eos_token_id=tokenizer.eos_token_id,
            **sampling,
        )
        for row in out[:, width:].tolist():
            n = row.index(tokenizer.eos_token_id) + 1 if tokenizer.eos_token_id in row else len(row)
            lengths.append(n)
            texts.append(tokenizer.decode(row[:n], skip_special_tokens=True))
    model.train(was_training)
    return texts, lengths


def evaluate_model(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    dataset: Dataset,
    max_new_tokens: int = 256,
    batch_size: int = 32,
    show_progress: bool = True,
    **generation_kwargs: Any,
) -> dict[str, float]:
    """Accuracy, format compliance and completion length on ``dataset`` (columns ``prompt``, ``answer``).

    Returns:
        ``accuracy`` (fraction whose extracted answer equals the gold answer exactly),
        ``format_rate`` (fraction earning the full format reward),
        ``answer_rate`` (fraction with a parsable answer), ``mean_tokens``, ``median_tokens``, ``n``.
    """
    validate_columns(dataset, ["prompt", "answer"], name="evaluation dataset")
    texts, lengths = generate_completions(
        model,
        tokenizer,
        list(dataset["prompt"]),
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        show_progress=show_progress,
        **generation_kwargs,
    )
    return score_completions(texts, lengths, list(dataset["answer"]))


def score_completions(texts: Sequence[str], lengths: Sequence[int], golds: Sequence[str]) -> dict[str, float]:
    """Metrics of completions against gold answers (see :func:`evaluate_model` for the keys)."""
    if not texts:
        raise ValueError("no completions to score: the evaluation split is empty")
    answers = [extract_answer(t) for t in texts]
    correct = [grade_answer(a, g, rel_tol=0.0) == "exact" for a, g in zip(answers, golds, strict=True)]
    formats = format_reward(list(texts))
    n = len(texts)
    return {
        "accuracy": sum(correct) / n,
        "format_rate": sum(f >= 0.8 - 1e-9 for f in formats) / n,
        "answer_rate": sum(a is not None for a in answers) / n,
        "mean_tokens": statistics.fmean(lengths),
        "median_tokens": float(statistics.median(lengths)),
        "n": float(n),
    }
