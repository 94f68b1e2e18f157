"""The compatibility matrix: every TRL GRPO option of ``psgrpo.compatibility.matrix.TRL_OPTIONS`` × every method.

Each CPU-testable row runs with ``grpo``, ``ps`` and ``vps`` for two optimizer steps on the tiny
model, with fixed completions whose steps the verifier can check (so ``ps`` and ``vps`` have real
step credit). Each case has one of two outcomes, the one ``psgrpo.compatibility.matrix.cell`` gives:

- **supported**: ``grpo`` equals stock ``trl.GRPOTrainer`` exactly in the advantages TRL receives,
  every logged metric (loss included), the gradients of both steps and the final parameters; for
  ``ps`` and ``vps`` the token credit reaches the gradient: the gradient of the loss with the real
  (B, T) advantages differs from the one with each row's mean advantage;
- **refused**: building the config raises an error naming both options.

docs/compatibility.md embeds the same table (checked below).
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from trainer_helpers import (
    FIXED_COMPLETIONS,
    FixedRollouts,
    assert_same_logs,
    length_reward,
    record_batches,
    save_tiny_model,
    tiny_run_args,
)
from transformers import AutoModelForCausalLM, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from psgrpo.compatibility import all_refusals, check_trl_compatibility, has_token_credit, process_scale
from psgrpo.compatibility.matrix import TRL_OPTIONS, TrlOption, cell, embed_table, refusal_for
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.methods import BUILTIN_METHODS as METHODS
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.trainer import ProcessGRPOTrainer

DOCS = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"

BASE = dict(
    max_steps=2,
    per_device_train_batch_size=8,
    num_generations=4,
    max_completion_length=96,
    # SGD: the weights compare the gradients themselves; fp32 and no recomputation keep runs exact and short
    optim="sgd",
    # small enough that the trained model, where the token-credit check recomputes one loss, stays near the
    # states training saw (at 0.1 VESPO's weight φ(w_i) is ~0 for most sequences there, and the check is vacuous)
    learning_rate=0.02,
    bf16=False,
    gradient_checkpointing=False,
)

METHOD_CONFIG: dict[str, dict[str, Any]] = {
    "grpo": {"method": "grpo"},
    "ps": {"method": "ps", "segmenter": "newline"},
    # log form and a large α: on a random model C_k ~ 1e-6 and ΔC is small; the matrix is about where the
    # credit goes, not how much of it there is
    "vps": {"method": "vps", "vps_min_segment_tokens": 2, "vps_log_form": True, "vps_alpha": 10.0},
    # the fixed completions as the leaves of a [2, 2] tree; tree sampling itself: tests/tree/
    "tree": {"method": "tree", "tree_branching": [2, 2], "tree_segment_tokens": 16},
}

HOOKED_HELPERS = ("get_off_policy_mask", "get_gamma_weights")
"""TRL's static helpers psgrpo/loss_hooks.py wraps (with ``_compute_loss``)."""

MIN_RELATIVE_DIFFERENCE = 1e-3
"""Token credit reaches the gradient when ‖g(A_t) − g(row mean of A_t)‖ / ‖g(A_t)‖ exceeds this. A ratio
that collapses the credit (TRL's GSPO on (B, T) advantages) gives ~1e-7, float noise."""

CASES = [
    pytest.param(option, method, id=f"{number}-{method}")
    for number, option in enumerate(TRL_OPTIONS, start=1)
    if option.gpu is None
    for method in METHODS
]


# ---- fast checks: the table, the rules, the page ------------------------------------------


def _config(**fields: Any) -> SimpleNamespace:
    defaults = dict(
        method="ps",
        advantage_estimator=None,
        ps_lambda=1.0,
        vps_alpha=1.2,
        scale_rewards="group",
        multi_objective_aggregation="sum_then_normalize",
        reward_norm_momentum=None,
    )
    return SimpleNamespace(**{**defaults, **fields})


def test_token_credit_needs_a_process_term():
    assert not has_token_credit(_config(method="grpo"))
    assert has_token_credit(_config(method="ps")) and has_token_credit(_config(method="vps"))
    assert not has_token_credit(_config(method="ps", ps_lambda=0.0))
    assert not has_token_credit(_config(method="vps", vps_alpha=0.0))
    assert has_token_credit(_config(method="ps", ps_lambda=0.0, advantage_estimator="my_estimator"))
    assert not has_token_credit(_config(method="vps", advantage_estimator="grpo"))


def test_process_scale_follows_the_outcome_scale():
    assert process_scale(_config()) == "group"
    assert process_scale(_config(scale_rewards="batch")) == "batch"
    assert process_scale(_config(multi_objective_aggregation="normalize_then_sum")) == "batch"
    assert process_scale(_config(scale_rewards="none", reward_norm_momentum=0.9)) == "batch"


@pytest.mark.parametrize("method", ["ps", "vps"])
def test_scale_rewards_none_is_refused_with_token_credit_only(method):
    with pytest.raises(ValueError, match=r"scale_rewards='none' cannot be combined with method=") as err:
        check_trl_compatibility(_config(method=method, scale_rewards="none"))
    assert "scale_rewards='batch'" in str(err.value) and "reward_norm_momentum" in str(err.value)
    check_trl_compatibility(_config(method="grpo", scale_rewards="none"))
    check_trl_compatibility(_config(method=method, scale_rewards="none", ps_lambda=0.0, vps_alpha=0.0))
    check_trl_compatibility(_config(method=method, scale_rewards="none", reward_norm_momentum=0.99))
    check_trl_compatibility(
        _config(method=method, scale_rewards="none", multi_objective_aggregation="normalize_then_sum")
    )


def test_refusal_at_construction_names_both_options(tmp_path):
    with pytest.raises(ValueError, match=r"scale_rewards='none'.*method='vps' \(vps_alpha=1.2\)"):
        ProcessGRPOConfig(**tiny_run_args(tmp_path), method="vps", scale_rewards="none")


def test_every_cell_is_supported_refused_or_marked_for_a_gpu():
    assert len(TRL_OPTIONS) == len({o.name for o in TRL_OPTIONS}), "row names must be unique"
    for option in TRL_OPTIONS:
        statuses = {cell(option, method).status for method in METHODS}
        if option.gpu is None:
            assert statuses <= {"supported", "refused"}, option.name
            assert cell(option, "grpo").status == "supported", "grpo supports every TRL option"
        else:  # a refusal is decided when the config is built, so it holds on a GPU row too
            assert statuses <= {"not tested on CPU", "refused"}, option.name
    refused = {(o.name, m) for o in TRL_OPTIONS for m in METHODS if cell(o, m).status == "refused"}
    assert refused == {("`scale_rewards='none'`", "ps"), ("`scale_rewards='none'`", "vps")}


def test_docs_page_embeds_the_current_table():
    page = DOCS.read_text()
    assert embed_table(page) == page, (
        "docs/compatibility.md is stale: run `python -m psgrpo.compatibility --write docs/compatibility.md`"
    )
    with pytest.raises(ValueError, match="lost its markers"):
        embed_table(page.replace("<!-- matrix: end -->", ""))


# ---- the matrix ------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _fast_tiny_runs():
    """Speed only. Each ``Trainer.train`` runs a full ``gc.collect``: freezing the heap the imports built makes it
    cheap. One thread: the tiny model's ops are too small to share, and on a busy machine a second thread's
    synchronisation cost several times the work (measured 0.6 s vs 4 s CPU per run)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def datasets() -> dict[str, Any]:
    """Prompts with one-digit answers: the random model's probe confidence C_k then stays above the 1e-6 floor
    of vps_log_form (two-digit answers can fall below it, and ΔC would be 0)."""
    train = make_arith_dataset("train", n=200).filter(lambda row: len(row["answer"]) == 1).select(range(16))
    return {"train": train, "eval": make_arith_dataset("test", n=2)}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, char_tokenizer) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("compat") / "init", char_tokenizer)


def _skipping(reward: Callable, skip: Callable[[str], bool]) -> Callable:
    """``reward`` returning None (skipped) for the completions ``skip`` picks."""

    def wrapped(completions, **kwargs):
        scores = reward(completions, **kwargs)
        return [None if skip(c) else r for c, r in zip(completions, scores, strict=True)]

    wrapped.__name__ = reward.__name__
    return wrapped


def _unscorable_rewards() -> list[Callable]:
    """TRL's 'reward functions returning None': every function skips one completion (unscorable), one skips more."""

    def unscorable(completion: str) -> bool:
        return completion == FIXED_COMPLETIONS[5]

    return [
        _skipping(correctness_reward, unscorable),
        _skipping(format_reward, unscorable),
        _skipping(length_reward, lambda c: unscorable(c) or "2 + 2" in c),
    ]


class _Gradients(TrainerCallback):
    """Every parameter's gradient just before each optimizer step."""

    def __init__(self) -> None:
        self.steps: list[dict[str, torch.Tensor]] = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.steps.append(
            {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
        )


def _train(
    trainer_cls: type,
    args: Any,
    option: TrlOption,
    tokenizer,
    model_dir: Path,
    datasets: dict[str, Any],
    token_shaped: bool = False,
) -> SimpleNamespace:
    """Two optimizer steps of ``trainer_cls`` (stock TRL or psgrpo, with fixed rollouts) under ``option``'s setup.

    ``token_shaped``: psgrpo as it was before the 1-D hand-over and the loss hooks: (B, T) advantages even
    without a process term, into TRL's own loss; to show what the metric comparison catches.
    """
    setup = option.setup
    dataset = datasets["train"]
    kwargs: dict[str, Any] = {}
    if setup == "iterable":
        dataset = dataset.to_iterable_dataset()
    if setup == "eval":
        kwargs["eval_dataset"] = datasets["eval"]
    if setup == "peft":
        from peft import LoraConfig

        kwargs["peft_config"] = LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
        )
    rewards = (
        _unscorable_rewards() if setup == "unscorable" else [correctness_reward, format_reward, length_reward]
    )
    members: dict[str, Any] = {"generate_first": setup == "generate"}
    if token_shaped:
        members.update({name: vars(GRPOTrainer)[name] for name in ("_compute_loss", *HOOKED_HELPERS)})
    cls = type(trainer_cls.__name__, (FixedRollouts, trainer_cls), members)
    torch.manual_seed(0)
    trainer = cls(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=rewards,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        **kwargs,
    )
    if token_shaped:
        trainer.token_credit = True
    gradients = _Gradients()
    trainer.add_callback(gradients)
    batches = record_batches(trainer)
    loss_inputs: list[dict[str, Any]] = []
    compute_loss = trainer.compute_loss

    def recording_compute_loss(model, inputs, *a, **k):
        loss_inputs.append(dict(inputs))
        return compute_loss(model, inputs, *a, **k)

    trainer.compute_loss = recording_compute_loss
    trainer.train()
    assert len(gradients.steps) == 2, "two optimizer steps"
    return SimpleNamespace(
        trainer=trainer,
        compute_loss=compute_loss,
        batches=batches,
        loss_inputs=loss_inputs,
        gradients=gradients.steps,
        logs=trainer.state.log_history,
        params={n: p.detach().clone() for n, p in trainer.model.named_parameters()},
    )


def _assert_same_as_trl(ours: SimpleNamespace, ref: SimpleNamespace, method: str = "grpo") -> None:
    for our, theirs in zip(ours.batches, ref.batches, strict=True):
        assert our["advantages"].dim() == 1, "without a process term TRL gets the 1-D A_i"
        torch.testing.assert_close(our["advantages"], theirs["advantages"], rtol=0, atol=0)
    assert any(b["advantages"].abs().sum() > 0 for b in ref.batches), (
        "the comparison needs non-zero advantages"
    )
    assert_same_logs(ours.logs, ref.logs, own=("psgrpo/", f"{method}/"))
    for step, (our, theirs) in enumerate(zip(ours.gradients, ref.gradients, strict=True)):
        assert our.keys() == theirs.keys()
        for name, grad in theirs.items():
            torch.testing.assert_close(
                our[name], grad, rtol=0, atol=0, msg=f"step {step + 1} gradient of {name}"
            )
    for name, value in ref.params.items():
        torch.testing.assert_close(ours.params[name], value, rtol=0, atol=0, msg=name)


def _gradient(run: SimpleNamespace, inputs: dict[str, Any]) -> torch.Tensor:
    model = run.trainer.model
    model.train()
    model.zero_grad(set_to_none=True)
    run.compute_loss(model, inputs).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def _row_means(inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, 1) each row's mean token advantage, and (B,) how far its tokens stray from it."""
    advantages, mask = inputs["advantages"], inputs["completion_mask"].to(inputs["advantages"].dtype)
    assert advantages.dim() == 2, "ps/vps hand TRL token advantages (B, T)"
    row_mean = (advantages * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1.0)
    return row_mean, ((advantages - row_mean) * mask).abs().amax(dim=1)


def _assert_token_credit_reaches_the_gradient(run: SimpleNamespace) -> float:
    """Returns ‖g(A_t) − g(row mean)‖ / ‖g(A_t)‖ (reported as ``relative_gradient_difference`` in --junitxml)."""
    # the micro-batch with the most rows whose advantages vary along the completion
    inputs = max(run.loss_inputs, key=lambda x: int((_row_means(x)[1] > 1e-3).sum()))
    row_mean, spread = _row_means(inputs)
    assert (spread > 1e-3).any(), "the case needs rows whose advantages vary along the completion"
    mask = inputs["completion_mask"].to(row_mean.dtype)
    real = _gradient(run, inputs)
    mean = _gradient(run, {**inputs, "advantages": row_mean * mask})
    relative = ((real - mean).norm() / real.norm()).item()
    assert relative > MIN_RELATIVE_DIFFERENCE, (
        f"the token credit does not reach the gradient: it equals the row-mean gradient to {relative:.2e}"
    )
    return relative


def _runs(option, method_config, model_dir, datasets, tmp_path, tokenizer, stock: bool):
    """psgrpo's run of ``option`` with ``method_config``, and stock TRL's (or None)."""
    fields = {**tiny_run_args(tmp_path, output_dir=str(tmp_path / "ours")), **BASE, **option.config}
    args = ProcessGRPOConfig(**fields, **method_config)
    ours = _train(ProcessGRPOTrainer, args, option, tokenizer, model_dir, datasets)
    if not stock:
        return ours, None
    stock_args = GRPOConfig(**{**fields, "output_dir": str(tmp_path / "trl")})
    return ours, _train(GRPOTrainer, stock_args, option, tokenizer, model_dir, datasets)


@pytest.mark.slow
@pytest.mark.parametrize(("option", "method"), CASES)
def test_option_with_method(
    option: TrlOption, method: str, model_dir, datasets, tmp_path, char_tokenizer, record_property
):
    fields = {**tiny_run_args(tmp_path, output_dir=str(tmp_path / "ours")), **BASE, **option.config}
    expected = cell(option, method).status
    if expected == "refused":
        refusal = refusal_for(option, method)
        with pytest.raises(ValueError) as err:
            ProcessGRPOConfig(**fields, **METHOD_CONFIG[method])
        assert all(re.search(rf"\b{name}\b", str(err.value)) for name in refusal.options), str(err.value)
        assert str(err.value) == refusal.message(_config(**option.config, **METHOD_CONFIG[method]))
        return
    assert expected == "supported"
    ours, ref = _runs(
        option, METHOD_CONFIG[method], model_dir, datasets, tmp_path, char_tokenizer, method == "grpo"
    )
    assert all(math.isfinite(log["loss"]) for log in ours.logs if "loss" in log)
    if method == "grpo":
        _assert_same_as_trl(ours, ref)
    else:
        record_property("relative_gradient_difference", _assert_token_credit_reaches_the_gradient(ours))


@pytest.mark.slow
@pytest.mark.parametrize("method_config", [{"ps_lambda": 0.0}, {"vps_alpha": 0.0}], ids=["ps", "vps"])
def test_a_process_weight_of_0_is_stock_trl(method_config, model_dir, datasets, tmp_path, char_tokenizer):
    """ps_lambda=0 / vps_alpha=0: no process term, so TRL gets the 1-D A_i, and GSPO is stock TRL's GSPO exactly."""
    gspo = next(o for o in TRL_OPTIONS if o.name.startswith("GSPO ("))
    method = "ps" if "ps_lambda" in method_config else "vps"
    config = {**METHOD_CONFIG[method], **method_config}
    ours, ref = _runs(gspo, config, model_dir, datasets, tmp_path, char_tokenizer, stock=True)
    _assert_same_as_trl(ours, ref, method)


def test_refusals_name_two_options():
    for refusal in all_refusals():
        assert len(refusal.options) == 2


@pytest.mark.slow
@pytest.mark.parametrize(
    ("row", "keys"),
    [
        ("GSPO (", ("clip_ratio/low_mean", "clip_ratio/high_mean")),
        ("`loss_type='vespo'`", ("vespo/phi_seq_mean",)),
    ],
    ids=["gspo", "vespo"],
)
def test_grpo_metrics_would_differ_with_token_shaped_advantages(
    row, keys, model_dir, datasets, tmp_path, char_tokenizer
):
    """The metric comparison is not vacuous: A_i broadcast to (B, T) into TRL's own loss (psgrpo before the 1-D
    hand-over) trains like stock TRL but logs other clip ratios / VESPO weights (averaged per token instead of per
    sequence); test_option_with_method shows the 1-D hand-over logs stock TRL's values exactly."""
    option = next(o for o in TRL_OPTIONS if row in o.name)
    fields = {**tiny_run_args(tmp_path, output_dir=str(tmp_path / "ours")), **BASE, **option.config}
    args = ProcessGRPOConfig(**fields, method="grpo")
    shaped = _train(ProcessGRPOTrainer, args, option, char_tokenizer, model_dir, datasets, token_shaped=True)
    stock_args = GRPOConfig(**{**fields, "output_dir": str(tmp_path / "trl")})
    ref = _train(GRPOTrainer, stock_args, option, char_tokenizer, model_dir, datasets)
    assert all(b["advantages"].dim() == 2 for b in shaped.batches)
    for name, value in ref.params.items():  # the same training, up to the order of float sums
        torch.testing.assert_close(shaped.params[name], value, msg=name)
    logged = [
        (log[k], theirs[k])
        for log, theirs in zip(shaped.logs, ref.logs, strict=True)
        for k in keys
        if k in theirs
    ]
    assert logged, f"stock TRL logged none of {keys}"
    assert any(ours != theirs for ours, theirs in logged), (
        f"{keys} agree: the case does not exercise the metrics"
    )
