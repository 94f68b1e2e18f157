"""Held-out evaluation: batched generation, then accuracy, pass@k, format, steps and error types.

``evaluate_model`` is what the before/after report of ``psgrpo train`` calls; ``psgrpo eval``
calls :func:`evaluate_samples`, which also returns one record per sample. Both generate
``num_samples`` completions per prompt (one greedy completion by default; more need sampled
decoding) with ``transformers``' ``generate`` (backend ``hf``) or vLLM (backend ``vllm``), then
score them with the same answer extraction and correctness check as the training rewards
(metrics: :mod:`psgrpo.eval.metrics`; definitions: docs/evaluation.md)::

    result = evaluate_samples(model, tokenizer, dataset, num_samples=8, pass_k=[1, 8], do_sample=True)
    result.summary["pass@8"], result.samples[0]["error_type"]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from psgrpo.data.validation import (
    check_prompts_fit_context,
    iter_column,
    require_chat_template,
    short_repr,
    validate_columns,
    validate_gold_answers,
    validate_prompts,
)
from psgrpo.eval.metrics import CompletionGrade, check_pass_k, grade_completion, summarize
from psgrpo.ps.segmentation import TextSegmenter, get_segmenter
from psgrpo.vps.probes import model_max_positions

logger = logging.getLogger(__name__)

BACKENDS = ("hf", "vllm")
"""Generation backends: ``hf`` (``model.generate``, default) and ``vllm`` (optional extra)."""

EvalDataset = Dataset | Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]]
"""What the evaluation reads its ``prompt`` and ``answer`` columns from: a ``datasets.Dataset``, a list of row
dicts or a dict of columns (:mod:`psgrpo.data.validation`)."""

DATASET_NAME = "evaluation dataset"


def prompt_ids(
    tokenizer: PreTrainedTokenizerBase,
    prompt: str | list[dict[str, Any]],
    chat_template_kwargs: dict[str, Any] | None = None,
) -> list[int]:
    """Token ids of one prompt, as TRL's training tokenizes it: a plain prompt with the tokenizer's special
    tokens (a BOS, for tokenizers that add one: Llama, Gemma), a conversation through the chat template with the
    run's ``chat_template_kwargs`` (e.g. ``{"enable_thinking": False}``)."""
    if isinstance(prompt, str):
        return tokenizer(prompt)["input_ids"]
    return tokenizer.apply_chat_template(
        prompt, add_generation_prompt=True, tokenize=True, return_dict=True, **(chat_template_kwargs or {})
    )["input_ids"]


def stop_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """The ids that end a completion, as TRL's training stops: the tokenizer's EOS and every id the model's
    generation config declares (Qwen2.5-Instruct: ``<|im_end|>`` and ``<|endoftext|>``)."""
    declared = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = [] if declared is None else [declared] if isinstance(declared, int) else list(declared)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids = [tokenizer.eos_token_id, *ids]
    return ids


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
    num_samples: int = 1,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> tuple[list[str], list[int]]:
    """Generate ``num_samples`` completions per prompt in left-padded batches.

    A batch holds ``max(1, batch_size // num_samples)`` prompts, so about ``batch_size``
    sequences are generated at once.

    Returns:
        (texts, lengths): P·num_samples decoded completions (special tokens removed), prompt-major
        (prompt p's samples at ``p*num_samples ...``), and their token counts (up to and
        including EOS).
    """
    check_sampling(num_samples, do_sample)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    stops = stop_token_ids(model, tokenizer)
    texts: list[str] = []
    lengths: list[int] = []
    sampling: dict[str, Any] = {"do_sample": do_sample, "num_return_sequences": num_samples}
    if do_sample:
        sampling.update(temperature=temperature, top_k=top_k, top_p=top_p)
    prompts_per_batch = max(1, batch_size // num_samples)
    for start in tqdm(
        range(0, len(prompts), prompts_per_batch), desc="generate", disable=not show_progress, leave=False
    ):
        batch = [
            prompt_ids(tokenizer, p, chat_template_kwargs) for p in prompts[start : start + prompts_per_batch]
        ]
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
            eos_token_id=stops,
            **sampling,
        )
        for row in out[:, width:].tolist():
            n = next((i + 1 for i, token in enumerate(row) if token in stops), len(row))
            lengths.append(n)
            texts.append(tokenizer.decode(row[:n], skip_special_tokens=True))
    model.train(was_training)
    return texts, lengths


def check_sampling(num_samples: int, do_sample: bool) -> None:
    """Several samples per prompt need sampled decoding (greedy would repeat one completion).

    Raises:
        ValueError: ``num_samples < 1``, or ``num_samples > 1`` with greedy decoding.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}")
    if num_samples > 1 and not do_sample:
        raise ValueError(
            f"num_samples={num_samples} asks for several completions per prompt, which needs sampled "
            f"decoding: pass do_sample=True (CLI: --do_sample true, with --temperature / --top_p / --top_k); "
            f"greedy decoding would return {num_samples} copies of the same completion"
        )


@dataclass
class EvalResult:
    """What :func:`evaluate_samples` returns.

    Attributes:
        summary: the metrics of :func:`psgrpo.eval.metrics.summarize` (all floats).
        samples: one JSON-serialisable record per completion, prompt-major (see :func:`sample_record`).
    """

    summary: dict[str, float]
    samples: list[dict[str, Any]]


def sample_record(
    prompt_index: int,
    sample_index: int,
    prompt: Any,
    completion: str,
    gold: str,
    tokens: int,
    grade: CompletionGrade,
) -> dict[str, Any]:
    """One line of ``samples.jsonl``: where the sample comes from, its text and every verdict on it.

    ``step_verdicts`` has one entry per step: ``true`` (its equations hold), ``false`` (one fails)
    or ``null`` (no checkable equation).
    """
    return {
        "prompt_index": prompt_index,
        "sample_index": sample_index,
        "prompt": prompt,
        "completion": completion,
        "answer": grade.answer,
        "gold": gold,
        "correct": grade.correct,
        "error_type": grade.error_type,
        "format_ok": grade.format_ok,
        "tokens": tokens,
        "steps": grade.steps.n_steps,
        "steps_checked": grade.steps.n_checked,
        "steps_verified": grade.steps.n_verified,
        "step_complete": grade.steps.complete,
        "step_verdicts": list(grade.steps.verdicts),
    }


def score_samples(
    texts: Sequence[str],
    lengths: Sequence[int],
    golds: Sequence[str],
    num_samples: int = 1,
    pass_k: Sequence[int] = (),
    prompts: Sequence[Any] | None = None,
    segmenter: TextSegmenter | None = None,
) -> EvalResult:
    """Grade prompt-major completions (``num_samples`` per gold answer) into a summary and records.

    Args:
        texts, lengths: P·num_samples completions and their token counts, prompt-major.
        golds: the P gold answers.
        prompts: the P prompts, copied into the records (``None`` leaves them out).
        segmenter: how completions split into steps (default: ``markers``, ``Step N:``).
    """
    if len(texts) != len(lengths) or len(texts) != len(golds) * num_samples:
        raise ValueError(
            f"got {len(texts)} completions and {len(lengths)} lengths for {len(golds)} gold answers "
            f"with {num_samples} samples each"
        )
    grades: list[list[CompletionGrade]] = []
    tokens: list[list[int]] = []
    records: list[dict[str, Any]] = []
    for p, gold in enumerate(golds):
        rows = range(p * num_samples, (p + 1) * num_samples)
        grades.append([grade_completion(texts[i], gold, segmenter) for i in rows])
        tokens.append([lengths[i] for i in rows])
        prompt = None if prompts is None else prompts[p]
        records += [
            sample_record(p, s, prompt, texts[i], gold, lengths[i], grades[-1][s]) for s, i in enumerate(rows)
        ]
    return EvalResult(summarize(grades, tokens, pass_k), records)


def score_completions(texts: Sequence[str], lengths: Sequence[int], golds: Sequence[str]) -> dict[str, float]:
    """Metrics of one completion per gold answer (see :func:`psgrpo.eval.metrics.summarize` for the keys)."""
    return score_samples(texts, lengths, golds).summary


def check_model(model: Any, backend: str) -> None:
    """The model fits the backend: a loaded ``torch.nn.Module`` for ``hf``, a checkpoint path or hub id for ``vllm``.

    Raises:
        TypeError: it does not; the message says what to pass instead.
    """
    if backend == "vllm" and not isinstance(model, str):
        raise TypeError(
            "backend 'vllm' loads the model itself: pass its checkpoint path or hub id, not a "
            f"{type(model).__name__}"
        )
    if backend == "hf" and not isinstance(model, torch.nn.Module):
        loaded = (
            f"load_model_and_tokenizer({model!r})"
            if isinstance(model, str)
            else "load_model_and_tokenizer(path)"
        )
        raise TypeError(
            f"backend 'hf' generates with a loaded model (a torch.nn.Module), got {short_repr(model)} of type "
            f"{type(model).__name__}; load it first: `from psgrpo.loading import load_model_and_tokenizer; "
            f"model, tokenizer = {loaded}`, or pass backend='vllm', which loads a checkpoint path itself"
        )


def evaluation_rows(dataset: EvalDataset) -> tuple[list[Any], list[str]]:
    """The P prompts and P gold answers of ``dataset``, checked before anything is generated.

    Every prompt must be a non-empty string or a non-empty list of chat messages, every answer a non-empty
    string or a finite number (read as ``str(answer)``, as the correctness reward reads it).

    Raises:
        DatasetValidationError: the dataset is empty, lacks ``prompt`` / ``answer``, or a row's value is not
            one of the above; the message names the first bad row and field.
    """
    validate_columns(dataset, ["prompt", "answer"], DATASET_NAME)  # both named when one is missing
    validate_prompts(dataset, DATASET_NAME)
    validate_gold_answers(dataset, "answer", DATASET_NAME, numeric=False)
    prompts = list(iter_column(dataset, "prompt"))
    golds = [gold if isinstance(gold, str) else str(gold) for gold in iter_column(dataset, "answer")]
    return prompts, golds


def evaluate_samples(
    model: PreTrainedModel | str,
    tokenizer: PreTrainedTokenizerBase,
    dataset: EvalDataset,
    num_samples: int = 1,
    pass_k: Sequence[int] = (),
    max_new_tokens: int = 256,
    batch_size: int = 32,
    show_progress: bool = True,
    segmenter: str | TextSegmenter = "markers",
    segmenter_kwargs: dict[str, Any] | None = None,
    backend: str = "hf",
    seed: int | None = None,
    vllm_kwargs: dict[str, Any] | None = None,
    do_sample: bool = False,
    chat_template_kwargs: dict[str, Any] | None = None,
    check_context: bool = True,
    **generation_kwargs: Any,
) -> EvalResult:
    """Generate ``num_samples`` completions for every row of ``dataset`` (columns ``prompt``, ``answer``) and score them.

    Args:
        model: a loaded model (backend ``hf``), or a checkpoint path / hub id (backend ``vllm``).
        dataset: a ``datasets.Dataset``, a list of row dicts or a dict of columns (:data:`EvalDataset`), with
            ``prompt`` (text or chat messages) and ``answer`` (the gold answer, a string or a number).
        num_samples: completions per prompt; more than one needs ``do_sample=True``.
        pass_k: the k of the pass@k metrics, each at most ``num_samples``.
        batch_size: sequences per ``generate`` call (``hf``; prompts per call = batch_size // num_samples).
        segmenter, segmenter_kwargs: how completions split into steps for the step checks (a
            registered name of :mod:`psgrpo.ps.segmentation`, or a segmenter).
        backend: ``hf`` or ``vllm``.
        seed: seeds sampling (``torch.manual_seed`` for ``hf``, the engine and ``SamplingParams`` for
            ``vllm``); ``None`` leaves the random state alone.
        vllm_kwargs: extra ``vllm.LLM`` arguments.
        do_sample, generation_kwargs: decoding, ``temperature``, ``top_k``, ``top_p``.
        chat_template_kwargs: what training passes to the chat template for conversational prompts.
        check_context: check the prompts against the model's context first (``False``: a caller that
            checked them once already, as the held-out evaluation during training does on every process).

    Raises (all before any generation):
        ValueError: bad ``num_samples`` / ``pass_k`` / ``backend``, ``batch_size`` or ``max_new_tokens`` below 1.
        TypeError: ``model`` does not fit the backend (:func:`check_model`).
        DatasetValidationError: the dataset is empty, lacks ``prompt`` / ``answer``, or a row's prompt or
            answer is ``None``, empty or of another type (:func:`evaluation_rows`), or (backend ``hf``) a
            prompt fills the model's context; prompts that leave fewer than ``max_new_tokens`` positions
            are warned about (:func:`~psgrpo.data.validation.check_prompts_fit_context`).
        ImportError: backend ``vllm`` without vllm installed (says how to install it).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {list(BACKENDS)}")
    check_sampling(num_samples, do_sample)
    check_pass_k(pass_k, num_samples)
    for name, value in (("batch_size", batch_size), ("max_new_tokens", max_new_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    check_model(model, backend)
    prompts, golds = evaluation_rows(dataset)
    if any(isinstance(prompt, list) for prompt in prompts):
        require_chat_template(tokenizer, "evaluation dataset")
    if backend == "hf" and check_context:  # vLLM checks prompts against its own max_model_len
        tight = check_prompts_fit_context(
            dataset,
            DATASET_NAME,
            lambda prompt: len(prompt_ids(tokenizer, prompt, chat_template_kwargs)),
            model_max_positions(model),
            max_new_tokens,
            length_option="max_new_tokens",
        )
        if tight:
            logger.warning(tight)
    if isinstance(segmenter, str):
        segmenter = get_segmenter(segmenter, **(segmenter_kwargs or {}))
    if backend == "vllm":
        from psgrpo.eval.vllm_backend import generate_with_vllm

        texts, lengths = generate_with_vllm(
            model,
            [prompt_ids(tokenizer, p, chat_template_kwargs) for p in prompts],
            num_samples=num_samples,
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            seed=seed,
            show_progress=show_progress,
            llm_kwargs=vllm_kwargs,
            **generation_kwargs,
        )
    else:
        if seed is not None:
            torch.manual_seed(seed)
        texts, lengths = generate_completions(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            do_sample=do_sample,
            show_progress=show_progress,
            num_samples=num_samples,
            chat_template_kwargs=chat_template_kwargs,
            **generation_kwargs,
        )
    return score_samples(texts, lengths, golds, num_samples, pass_k, prompts, segmenter)


def evaluate_model(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    dataset: EvalDataset,
    max_new_tokens: int = 256,
    batch_size: int = 32,
    show_progress: bool = True,
    **generation_kwargs: Any,
) -> dict[str, float]:
    """The summary metrics of :func:`evaluate_samples` on ``dataset`` (columns ``prompt``, ``answer``).

    ``generation_kwargs`` are passed on (``do_sample``, ``temperature``, ``top_k``, ``top_p``,
    ``num_samples``, ``pass_k``, ``segmenter`` ...). Keys: ``accuracy`` (sample 0 of each prompt
    answers exactly the gold answer), ``format_rate`` (full format reward), ``answer_rate`` (a
    parsable answer), ``mean_tokens``, ``median_tokens``, ``n`` (prompts), ``pass@k`` for each
    requested k, ``step_complete_rate``, ``step_checked_rate``, ``error_type/<type>``,
    ``num_samples``, ``n_completions`` (see :func:`psgrpo.eval.metrics.summarize`).
    """
    return evaluate_samples(
        model,
        tokenizer,
        dataset,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        show_progress=show_progress,
        **generation_kwargs,
    ).summary
