"""Optional vLLM backend of held-out evaluation (``psgrpo eval --backend vllm``).

vLLM is not a dependency of psgrpo (it needs a CUDA machine); install it with
``pip install -e '.[vllm]'`` in psgrpo's folder. Prompts arrive as token ids, built by the same code
as the ``hf`` backend (chat template included), so both backends see identical prompts::

    texts, lengths = generate_with_vllm("outputs/demo", prompt_ids, num_samples=8, do_sample=True,
                                        temperature=0.7, seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

VLLM_INSTALL = "pip install -e '.[vllm]'"


def import_vllm() -> ModuleType:
    """The ``vllm`` module, or an :class:`ImportError` that says how to install it."""
    try:
        import vllm
    except ImportError as err:
        raise ImportError(
            f"backend 'vllm' needs the vllm package, which is not installed: install it with `{VLLM_INSTALL}` "
            "in psgrpo's folder (on a machine with a CUDA GPU), or evaluate with the default backend 'hf' "
            "(transformers generate)"
        ) from err
    return vllm


def sampling_params_kwargs(
    num_samples: int,
    max_new_tokens: int,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` matching the ``hf`` backend's decoding options.

    Greedy decoding is ``temperature=0``; ``top_k`` / ``top_p`` left as ``None`` keep vLLM's
    defaults (no truncation), as with ``transformers``' ``generate``.
    """
    kwargs: dict[str, Any] = {"n": num_samples, "max_tokens": max_new_tokens}
    if not do_sample:
        kwargs["temperature"] = 0.0
        return kwargs
    kwargs["temperature"] = temperature
    if top_k is not None:
        kwargs["top_k"] = top_k
    if top_p is not None:
        kwargs["top_p"] = top_p
    if seed is not None:
        kwargs["seed"] = seed
    return kwargs


def generate_with_vllm(
    model_name_or_path: str,
    prompt_ids: Sequence[Sequence[int]],
    num_samples: int = 1,
    max_new_tokens: int = 256,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    show_progress: bool = True,
    llm_kwargs: dict[str, Any] | None = None,
) -> tuple[list[str], list[int]]:
    """Generate ``num_samples`` completions per prompt with ``vllm.LLM(...).generate``.

    Args:
        model_name_or_path: checkpoint directory or hub id that vLLM loads.
        prompt_ids: token ids of each prompt (P prompts).
        llm_kwargs: extra ``vllm.LLM`` arguments (``gpu_memory_utilization``, ``dtype``,
            ``tensor_parallel_size`` ...).

    Returns:
        (texts, lengths): P·num_samples decoded completions, prompt-major (prompt p's samples at
        ``p*num_samples ... p*num_samples + num_samples - 1``), and their token counts (the token
        ids vLLM returns, EOS included).
    """
    vllm = import_vllm()
    engine_kwargs = {
        "model": model_name_or_path,
        **({"seed": seed} if seed is not None else {}),
        **(llm_kwargs or {}),
    }
    llm = vllm.LLM(**engine_kwargs)
    params = vllm.SamplingParams(
        **sampling_params_kwargs(num_samples, max_new_tokens, do_sample, temperature, top_k, top_p, seed)
    )
    requests = [{"prompt_token_ids": list(ids)} for ids in prompt_ids]
    outputs = llm.generate(requests, sampling_params=params, use_tqdm=show_progress)
    texts: list[str] = []
    lengths: list[int] = []
    for index, request in enumerate(outputs):
        if len(request.outputs) != num_samples:
            raise RuntimeError(
                f"vLLM returned {len(request.outputs)} completions for prompt {index}, expected {num_samples}"
            )
        for completion in request.outputs:
            texts.append(completion.text)
            lengths.append(len(completion.token_ids))
    return texts, lengths
