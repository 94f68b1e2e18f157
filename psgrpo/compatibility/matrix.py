"""The compatibility matrix: every TRL GRPO option psgrpo knows of, and what each method does with it.

:data:`TRL_OPTIONS` is the table; :func:`cell` decides each (option, method) cell from the rules in
:mod:`psgrpo.compatibility` (:func:`~psgrpo.compatibility.all_refusals`); :func:`render_table` writes the
markdown that docs/compatibility.md embeds (``python -m psgrpo.compatibility [--write PAGE]``), and
tests/test_compatibility.py runs every row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal

from psgrpo.compatibility import all_refusals
from psgrpo.methods import Refusal, config_class, get_method, method_names

Status = Literal["supported", "refused", "not tested on CPU"]

TOKEN_PATH = "A_t (B, T) reaches TRL's loss unchanged"
"""How most options work with token credit: TRL's token-level code is correct for (B, T) advantages."""


@dataclass(frozen=True)
class TrlOption:
    """One row of the matrix: a GRPO option (or the combination TRL's own test runs).

    Attributes:
        name: the row's title in docs/compatibility.md.
        config: the ``GRPOConfig`` fields the row sets.
        source: the test of TRL's tests/test_grpo_trainer.py that exercises it, or the ``GRPOConfig`` field.
        token_credit: how ``ps`` and ``vps`` work with it, when supported.
        setup: what else the matrix test varies besides the config (``eval``, ``iterable``,
            ``unscorable``, ``generate``, ``peft``); None for a plain run.
        gpu: for an option that cannot run on this CPU-only suite, what it needs and what to expect;
            its cells read "not tested on CPU".
        notes: per method, how it works with the option where that differs from ``token_credit``
            (e.g. ``{"tree": "…"}``).
    """

    name: str
    config: dict[str, Any]
    source: str
    token_credit: str = TOKEN_PATH
    setup: str | None = None
    gpu: str | None = None
    notes: dict[str, str] = field(default_factory=dict)


GSPO_TOKEN = (
    "GSPO-token: ratio s_i·π_θ(o_t)/sg[π_θ(o_t)], value s_i (clipped per sequence), gradient per token "
    "(`psgrpo/loss_hooks.py`)"
)
_OFF_POLICY = {"num_iterations": 2}
"""Two passes over each batch: the second sees ratios ≠ 1, so clipping, the off-policy mask and VESPO's weight act
(on-policy TRL uses the current log-probs as the old ones, and every ratio is exactly 1)."""
_SEQUENCE = {**_OFF_POLICY, "importance_sampling_level": "sequence"}
_GSPO = {**_SEQUENCE, "loss_type": "grpo", "epsilon": 3e-4, "epsilon_high": 4e-4}
"""GSPO as its paper sets it: sequence ratios clipped to [1 − 3e-4, 1 + 4e-4] (so clipping happens here)."""
_GSPO_NAME = (
    "GSPO (`importance_sampling_level='sequence'`, `loss_type='grpo'`, ε = 3e-4 / 4e-4, `num_iterations=2`)"
)
_SMALL_BATCH = {"per_device_train_batch_size": 4}

TRL_OPTIONS: tuple[TrlOption, ...] = (
    TrlOption("TRL defaults (`loss_type='dapo'`, token-level ratio)", {}, "test_train"),
    *(
        TrlOption(
            f"`loss_type='{loss}'`, `num_iterations=2`",
            {**_OFF_POLICY, "loss_type": loss},
            "test_train_loss_types",
        )
        for loss in ("grpo", "bnpo", "dr_grpo", "cispo", "sapo")
    ),
    TrlOption(
        "`loss_type='luspo'` (with GSPO's sequence ratio and clip range, as LUSPO needs), `num_iterations=2`",
        {**_GSPO, "loss_type": "luspo"},
        "test_train_loss_types",
        token_credit=f"{GSPO_TOKEN}; the per-sequence sum then weights each token by 1, as LUSPO does",
    ),
    TrlOption(
        "`loss_type='vespo'`, `num_iterations=2`",
        {**_OFF_POLICY, "loss_type": "vespo"},
        "test_train_loss_types",
        token_credit="φ(w_i) picks (k, λ) from the sign of the sequence's mean token advantage, so φ is one "
        "weight per sequence as published; the loss is −φ_i·A_t·log π_θ(o_t)",
    ),
    TrlOption(
        _GSPO_NAME,
        _GSPO,
        "test_train_sequence_importance_sampling",
        token_credit=GSPO_TOKEN,
    ),
    *(
        TrlOption(
            f"`importance_sampling_level='sequence'` + `loss_type='{loss}'`, `num_iterations=2`",
            {**_SEQUENCE, "loss_type": loss},
            "test_train_sequence_importance_sampling, "
            "test_warning_raised_sequence_level_with_token_summed_loss",
            token_credit=GSPO_TOKEN,
        )
        for loss in ("dapo", "cispo", "sapo")
    ),
    TrlOption(
        "GSPO + `off_policy_mask_threshold=1e-6`",
        {**_GSPO, "off_policy_mask_threshold": 1e-6},
        "test_train_sequence_importance_sampling, test_train_with_off_policy_mask",
        token_credit=f"{GSPO_TOKEN}; the mask reads the same mean KL as TRL's sequence branch, drops whole rows",
    ),
    TrlOption(
        "GSPO + `beta=0.04` (KL, bias-corrected by the ratio)",
        {**_GSPO, "beta": 0.04},
        "test_train_sequence_importance_sampling, test_train_beta_non_zero",
        token_credit=f"{GSPO_TOKEN}; the KL term is weighted by s_{{i,t}}: TRL's s_i in value, a per-token gradient",
    ),
    TrlOption(
        "`epsilon_high=0.28` (DAPO clip-higher), `num_iterations=2`",
        {**_OFF_POLICY, "epsilon_high": 0.28},
        "GRPOConfig.epsilon_high",
    ),
    TrlOption(
        "`delta=2.0` (two-sided clipping), `num_iterations=2`",
        {**_OFF_POLICY, "delta": 2.0},
        "test_train_delta_clipping",
    ),
    TrlOption(
        "`scale_rewards='batch'`",
        {"scale_rewards": "batch"},
        "test_train_scale_rewards",
        token_credit="ps: step scores centred per group, divided by the batch's step-score std (as A_i); "
        "vps: ΔC as usual",
        notes={"tree": "tree: ΔV divided by the batch's reward std, as A_i"},
    ),
    TrlOption(
        "`scale_rewards='none'`",
        {"scale_rewards": "none"},
        "test_train_scale_rewards",
        notes={"tree": "tree: ΔV stays in reward units like A_i, so the two share a scale"},
    ),
    TrlOption(
        "`multi_objective_aggregation='normalize_then_sum'`",
        {"multi_objective_aggregation": "normalize_then_sum"},
        "test_train_normalize_then_sum_aggregation",
        token_credit="A_i is batch-normalised, so ps divides step scores by the batch's step-score std",
        notes={
            "tree": "tree: V from the per-function group-normalised rewards TRL sums, ΔV divided by their batch std"
        },
    ),
    TrlOption(
        "`reward_weights=[1.0, 0.5, 2.0]`",
        {"reward_weights": [1.0, 0.5, 2.0]},
        "test_train_multiple_reward_funcs_with_weights",
    ),
    TrlOption(
        "reward functions returning `None` (unscorable completions get A_i = 0)",
        {},
        "test_train_multiple_reward_funcs_with_None_output",
        token_credit="A_i = 0 as in TRL; the process term still credits the steps (it does not use the rewards)",
        setup="unscorable",
        notes={"tree": "tree: unscorable leaves are left out of every V and their rows get 0, as A_i"},
    ),
    TrlOption("`num_iterations=2`", _OFF_POLICY, "test_train_multiple_iterations"),
    TrlOption(
        "`steps_per_generation=2`",
        {**_SMALL_BATCH, "steps_per_generation": 2},
        "GRPOConfig.steps_per_generation",
    ),
    TrlOption(
        "`gradient_accumulation_steps=2` (`num_generations` > per-device batch)",
        {**_SMALL_BATCH, "gradient_accumulation_steps": 2},
        "test_train_num_generations_larger_than_batch_size",
    ),
    TrlOption(
        "`mask_truncated_completions=True`",
        {"mask_truncated_completions": True},
        "test_train_with_mask_truncated_completions",
    ),
    TrlOption("`top_entropy_quantile=0.2`", {"top_entropy_quantile": 0.2}, "test_train_with_entropy_filter"),
    TrlOption(
        "`off_policy_mask_threshold` (`num_iterations=2`, threshold 1e-6 so that it bites)",
        {**_OFF_POLICY, "off_policy_mask_threshold": 1e-6},
        "test_train_with_off_policy_mask",
        token_credit="the sequence is kept when its mean token advantage is ≥ 0 or its mean KL is small; "
        "otherwise the whole row is dropped",
    ),
    TrlOption("`beta=0.04` (KL, bias-corrected)", {"beta": 0.04}, "test_train_beta_non_zero"),
    TrlOption(
        "`beta=0.04`, `use_bias_correction_kl=False`",
        {"beta": 0.04, "use_bias_correction_kl": False},
        "test_train_with_bias_correction_kl",
    ),
    TrlOption(
        "`sync_ref_model=True` (`beta=0.04`, every step)",
        {"beta": 0.04, "sync_ref_model": True, "ref_model_sync_steps": 1},
        "test_train_with_sync_ref_model",
    ),
    TrlOption("`entropy_coef=0.1`", {"entropy_coef": 0.1}, "test_train_with_static_entropy"),
    TrlOption(
        "`use_adaptive_entropy=True` (`gradient_accumulation_steps=2`)",
        {
            **_SMALL_BATCH,
            "gradient_accumulation_steps": 2,
            "use_adaptive_entropy": True,
            "entropy_coef": 0.01,
            "entropy_target": 15.0,
        },
        "test_train_with_adaptive_entropy_gradient_accumulation",
    ),
    TrlOption("`pad_to_multiple_of=64`", {"pad_to_multiple_of": 64}, "test_train_with_pad_to_multiple_of"),
    TrlOption(
        "`cast_lm_head_to_fp32=True`", {"cast_lm_head_to_fp32": True}, "test_train_with_cast_lm_head_to_fp32"
    ),
    TrlOption(
        "`gradient_checkpointing=True`",
        {"gradient_checkpointing": True},
        "test_train_peft_with_gradient_checkpointing",
    ),
    TrlOption("`temperature=0.7`", {"temperature": 0.7}, "GRPOConfig.temperature"),
    TrlOption(
        "evaluation (`eval_strategy='steps'`, `num_generations_eval=2`)",
        {
            "eval_strategy": "steps",
            "eval_steps": 1,
            "num_generations_eval": 2,
            "per_device_eval_batch_size": 4,
        },
        "test_train_with_eval, test_train_with_num_generations_eval",
        setup="eval",
        notes={"tree": "tree: evaluation samples independently (a one-level tree, A_t = (w + λ)·A_i)"},
    ),
    TrlOption("iterable train dataset", {}, "test_train_with_iterable_dataset", setup="iterable"),
    TrlOption(
        "`generation_kwargs` (real generation runs; its output is then replaced by the fixed completions)",
        {"generation_kwargs": {"top_k": 5, "repetition_penalty": 1.1}},
        "test_train_with_generation_kwargs",
        setup="generate",
        notes={
            "tree": "tree: the real generation is tree sampling, one TRL generate() per level with these kwargs"
        },
    ),
    TrlOption("LoRA (`peft_config`)", {}, "test_train_peft_config", setup="peft"),
    TrlOption(
        "vLLM (`use_vllm=True`, `vllm_importance_sampling_correction`, every `vllm_importance_sampling_mode`)",
        {"use_vllm": True},
        "test_train_vllm_importance_sampling_correction",
        gpu="needs vLLM and CUDA. Expected: supported for all methods; the vLLM IS ratio multiplies the per-token "
        "loss after the hooks, GSPO-token and the off-policy mask read vLLM's sampling log-probs as TRL does; "
        "probes and step scorers run on the training model; tree: one vLLM call per level on prompts + prefixes "
        "(max_tokens set per level, every process sending as many rows), each leaf's sampling log-probs its "
        "segments' joined (checked on CPU against a scripted stand-in for TRL's vLLM generation only)",
    ),
    TrlOption(
        "`use_liger_kernel=True`",
        {"use_liger_kernel": True},
        "test_train_loss_types[liger], test_train_with_off_policy_mask_with_liger",
        gpu="needs liger-kernel (Triton, CUDA). Expected: supported for all methods; in trl 1.16 it only swaps "
        "layer kernels (no fused loss), so the loss is `_compute_loss` with psgrpo's hooks",
    ),
    TrlOption(
        "tools / `environment_factory` / `rollout_func` (multi-turn, `tool_mask`)",
        {},
        "test_train_with_tools, test_train_with_environment_factory",
        gpu="needs a tool-calling chat model. Expected: grpo supported; ps/vps run, tool-output tokens "
        "(tool_mask 0) get no gradient, but steps and probe cuts may fall inside tool output (not verified); "
        "the memory bank refuses them; tree refuses them when the trainer is built (its leaves must be one "
        "sampled tree, not multi-turn rollouts)",
    ),
    TrlOption(
        "vision-language models (images)",
        {},
        "test_train_vlm*",
        gpu="psgrpo's tasks and signals are text-only. Expected: grpo supported (TRL's path); ps/vps untested; "
        "tree refuses them when the trainer is built",
    ),
)
"""Every row of the matrix (docs/compatibility.md)."""

OUTSIDE_THE_LOSS: tuple[tuple[str, str], ...] = (
    (
        "generation: `top_k`, `top_p`, `min_p`, `repetition_penalty`, `cache_implementation`, "
        "`chat_template_kwargs`, `use_transformers_paged`, continuous batching (the `generation_kwargs` row runs "
        "TRL's real generation for them)",
        "test_train_with_additional_generation_kwargs, test_train_with_chat_template_kwargs, "
        "test_train_with_transformers_continuous_batching",
    ),
    (
        "reward sources: reward models, async and mixed reward functions, `reward_processing_classes`, extra "
        "dataset columns, metrics logged by reward functions (they change the rewards, not how A_i or the process "
        "term reach the loss)",
        "test_train_different_reward_model, test_train_sync_and_async_reward_funcs, "
        "test_train_multiple_mixed_reward_funcs, test_train_reward_func_*",
    ),
    (
        "data and logging: conversational datasets, `shuffle_dataset`, dataloader workers, `eval_on_start`, "
        "`log_completions`",
        "test_train_dataset_format, test_train_multiple_dataloader_workers, test_train_eval_on_start",
    ),
    (
        "model loading: `model_init_kwargs`, `disable_dropout`, `trust_remote_code`, `ds3_gather_for_generation`, "
        "a `PeftModel` passed in, `router_aux_loss_coef` (MoE; its auxiliary loss is added after the policy loss)",
        "test_train_peft_model, test_train_moe_peft_model, test_trust_remote_code",
    ),
)
"""TRL options that never reach advantages, ratios or masks: listed on the page, not run by the matrix."""


def _namespace(option: TrlOption, method: str) -> Any:
    """The config's defaults with the row's fields and the method, without building a config."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(config_class()):  # the options of methods registered from outside too
        if f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            values[f.name] = f.default_factory()
    return SimpleNamespace(**{**values, **option.config, "method": method})


def refusal_for(option: TrlOption, method: str) -> Refusal | None:
    """The rule that refuses ``option`` with ``method`` at default settings, or None."""
    config = _namespace(option, method)
    return next((r for r in all_refusals() if r.applies(config)), None)


@dataclass(frozen=True)
class Cell:
    status: Status
    how: str = field(default="")


def cell(option: TrlOption, method: str) -> Cell:
    """What the matrix asserts (and the page says) for ``option`` with ``method``.

    A refusal is decided when the config is built, so it holds (and is tested) even for a GPU row."""
    refusal = refusal_for(option, method)
    if refusal is not None:
        return Cell("refused", refusal.summary)
    if option.gpu is not None:
        return Cell("not tested on CPU", option.gpu)
    if get_method(method).signal is None:
        return Cell("supported", "TRL's own path (1-D A_i)")
    return Cell("supported", option.notes.get(method, option.token_credit))


def render_table() -> str:
    """The matrix as a markdown table (embedded in docs/compatibility.md)."""
    methods = method_names()
    credit = [m for m in methods if get_method(m).signal is not None]  # the methods with a process signal
    lines = [
        "| # | option | exercised by (TRL test or field) | "
        + " | ".join(methods)
        + f" | how, with token credit ({', '.join(credit)}); or what to expect |",
        "|---|---|---|" + "---|" * len(methods) + "---|",
    ]
    for number, option in enumerate(TRL_OPTIONS, start=1):
        cells = [cell(option, method) for method in methods]
        hows = dict.fromkeys(
            c.how for m, c in zip(methods, cells, strict=True) if m in credit
        )  # each text once
        lines.append(
            f"| {number} | {option.name} | {option.source} | "
            + " | ".join(c.status for c in cells)
            + f" | {'; '.join(hows)} |"
        )
    lines += ["", "Not in the matrix, because they never reach advantages, ratios or masks:", ""]
    lines += [f"- {what}; TRL tests: {tests}" for what, tests in OUTSIDE_THE_LOSS]
    return "\n".join(lines) + "\n"


MATRIX_BEGIN, MATRIX_END = "<!-- matrix: begin -->\n", "<!-- matrix: end -->"
"""The markers around the rendered table in docs/compatibility.md."""


def embed_table(page: str) -> str:
    """``page`` (docs/compatibility.md's text) with the current :func:`render_table` between its markers."""
    if MATRIX_BEGIN not in page or MATRIX_END not in page:
        raise ValueError(f"the page lost its markers {MATRIX_BEGIN.strip()!r} / {MATRIX_END!r}")
    before, rest = page.split(MATRIX_BEGIN, 1)
    after = rest.split(MATRIX_END, 1)[1]
    return before + MATRIX_BEGIN + render_table() + MATRIX_END + after
