"""The loss hooks for token advantages: GSPO-token, the sequence-level off-policy mask, one VESPO weight per sequence."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from trainer_helpers import FIXED_COMPLETIONS, tiny_run_args
from trl import GRPOConfig, GRPOTrainer

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.loss_hooks import gspo_token_old_logps, row_advantages, sequence_advantages
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer


@st.composite
def token_batches(draw, constant_rows: bool = False):
    """(advantages (B, T), mask (B, T)) with right-padded masks; some rows may be empty."""
    rows, width = draw(st.integers(1, 5)), draw(st.integers(1, 7))
    lengths = draw(st.lists(st.integers(0, width), min_size=rows, max_size=rows))
    mask = torch.tensor([[1.0] * n + [0.0] * (width - n) for n in lengths])
    values = st.floats(-5, 5, allow_nan=False, width=32)
    if constant_rows:
        per_row = torch.tensor(draw(st.lists(values, min_size=rows, max_size=rows)))
        return per_row.unsqueeze(1) * mask, mask, per_row
    flat = draw(st.lists(values, min_size=rows * width, max_size=rows * width))
    return torch.tensor(flat).view(rows, width) * mask, mask


@given(token_batches())
def test_sequence_advantage_is_the_masked_row_mean(batch):
    advantages, mask = batch
    out = sequence_advantages(advantages, mask)
    assert out.shape == (advantages.shape[0], 1)
    for i in range(advantages.shape[0]):
        n = int(mask[i].sum())
        expected = advantages[i, :n].double().mean().item() if n else 0.0
        assert out[i, 0].item() == pytest.approx(expected, abs=1e-5)


def test_sequence_advantage_leaves_trl_shapes_alone():
    flat = torch.tensor([0.5, -1.0])
    assert sequence_advantages(flat, torch.ones(2, 3)).tolist() == [[0.5], [-1.0]]
    column = flat.unsqueeze(1)
    assert sequence_advantages(column, torch.ones(2, 3)) is column


@given(token_batches(constant_rows=True))
def test_row_advantages_recover_the_row_value(batch):
    advantages, mask, per_row = batch
    empty = torch.full((mask.shape[0],), 7.0)
    out = row_advantages(advantages, mask, empty)
    expected = torch.where(mask.bool().any(1), per_row, empty)
    assert torch.equal(out, expected)


def test_row_advantages_refuse_a_varying_row():
    advantages = torch.tensor([[1.0, 1.0, 0.0], [2.0, 3.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match="row 1: the token advantages vary"):
        row_advantages(advantages, mask, torch.zeros(2))


@settings(deadline=None)
@given(token_batches(), st.floats(-2, 2, allow_nan=False))
def test_gspo_token_old_logps_give_the_sequence_ratio_on_every_token(batch, shift):
    logps, mask = batch
    old = logps - shift * torch.linspace(0, 1, logps.shape[1])  # a log-ratio that varies along the row
    new_old = gspo_token_old_logps(logps, old, mask)
    log_s = sequence_advantages(logps - old, mask)  # TRL's sequence log-ratio: the masked mean
    torch.testing.assert_close((logps - new_old) * mask, log_s * mask, rtol=1e-5, atol=1e-5)
    assert torch.equal(gspo_token_old_logps(logps, None, mask), logps)  # on-policy: ratio 1


# ---- off-policy mask and VESPO weight: decided per sequence ----------------------------------


def _mixed_rows() -> dict[str, torch.Tensor]:
    """Three sequences of four tokens: rows 0 and 1 far off-policy, row 2 on-policy; mixed-sign credit."""
    advantages = torch.tensor([[1.0, -3.0, 1.0, 0.0], [-1.0, 3.0, 0.5, 0.5], [-2.0, -2.0, 1.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    logps = torch.full((3, 4), -1.0)
    sampling = torch.tensor([[0.0] * 4, [0.0] * 4, [-1.0] * 4])  # mean KL 1.0, 1.0, 0.0
    return {"advantages": advantages, "mask": mask, "logps": logps, "sampling": sampling}


def test_off_policy_mask_drops_whole_sequences():
    x = _mixed_rows()
    kwargs = dict(per_token_logps=x["logps"], sampling_per_token_logps=x["sampling"], mask=x["mask"])
    stock = GRPOTrainer.get_off_policy_mask(advantages=x["advantages"], off_policy_threshold=0.5, **kwargs)
    assert stock.shape == (3, 4) and stock[0].tolist() == [1.0, 0.0, 1.0, 1.0]  # TRL alone: per token
    ours = ProcessGRPOTrainer.get_off_policy_mask(
        advantages=x["advantages"], off_policy_threshold=0.5, **kwargs
    )
    # row 0: mean A < 0 and far off-policy → dropped whole; row 1: mean A > 0 → kept; row 2: on-policy → kept
    assert ours.tolist() == [[0.0], [1.0], [1.0]]
    row_mean = sequence_advantages(x["advantages"], x["mask"])
    assert torch.equal(
        ours, GRPOTrainer.get_off_policy_mask(advantages=row_mean, off_policy_threshold=0.5, **kwargs)
    )


def test_vespo_weight_is_one_per_sequence():
    x = _mixed_rows()
    log_ratio = torch.tensor([[0.1, -0.2, 0.05, 0.0]] * 3)
    kwargs = dict(log_ratio_per_token=log_ratio, mask=x["mask"], importance_sampling_ratio=None)
    stock = GRPOTrainer.get_gamma_weights(advantages=x["advantages"], **kwargs)
    assert stock.shape == (3, 4) and stock[0, 0] != stock[0, 1]  # TRL alone: the "sequence" weight varies
    ours = ProcessGRPOTrainer.get_gamma_weights(advantages=x["advantages"], **kwargs)
    assert ours.shape == (3, 1)
    row_mean = sequence_advantages(x["advantages"], x["mask"])
    torch.testing.assert_close(
        ours, GRPOTrainer.get_gamma_weights(advantages=row_mean, **kwargs), rtol=0, atol=0
    )


# ---- GSPO-token through the real loss ----------------------------------------------------------


@pytest.fixture(scope="module")
def gspo(tmp_path_factory, char_tokenizer):
    """psgrpo's trainer and stock TRL's with GSPO settings and the same tiny model, plus one batch."""
    tmp = tmp_path_factory.mktemp("gspo")
    fields = tiny_run_args(
        tmp, importance_sampling_level="sequence", loss_type="grpo", bf16=False, gradient_checkpointing=False
    )
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    common = dict(
        reward_funcs=[lambda completions, **_: [0.0] * len(completions)], processing_class=char_tokenizer
    )
    dataset = make_arith_dataset("train", n=4)
    ours = ProcessGRPOTrainer(model=model, args=ProcessGRPOConfig(**fields), train_dataset=dataset, **common)
    stock = GRPOTrainer(
        model=copy.deepcopy(model), args=GRPOConfig(**fields), train_dataset=dataset, **common
    )
    for trainer in (ours, stock):
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train; the loss reads it

    prompts = [char_tokenizer(p, add_special_tokens=False)["input_ids"][-12:] for p in dataset["prompt"][:4]]
    completions = [
        char_tokenizer(c, add_special_tokens=False)["input_ids"][:30] for c in FIXED_COMPLETIONS[:4]
    ]
    width = max(len(c) for c in completions)
    completion_ids = torch.tensor([c + [0] * (width - len(c)) for c in completions])
    completion_mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in completions])
    with torch.no_grad():
        batch = {"prompt_ids": torch.tensor(prompts), "prompt_mask": torch.ones(4, 12, dtype=torch.long)}
        input_ids = torch.cat([batch["prompt_ids"], completion_ids], 1)
        logps = ours._get_per_token_logps_and_entropies(
            ours.model, input_ids, torch.cat([batch["prompt_mask"], completion_mask], 1), width
        )[0]
    generator = torch.Generator().manual_seed(0)
    old = logps + 0.3 * torch.randn(logps.shape, generator=generator)  # off-policy: ratios ≠ 1, some clipped
    token_advantages = torch.randn(4, width, generator=generator) * completion_mask
    batch.update(
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        old_per_token_logps=old,
        num_items_in_batch=completion_mask.sum(),
    )
    return ours, stock, batch, token_advantages


def _logps(trainer, batch) -> torch.Tensor:
    """(B, T) log π_θ of the batch's completion tokens under ``trainer.model``."""
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    width = batch["completion_ids"].shape[1]
    return trainer._get_per_token_logps_and_entropies(trainer.model, input_ids, attention, width)[0]


def _assert_equals_stock_gspo(ours, stock, batch, row_mean: torch.Tensor) -> None:
    """psgrpo's loss with (B, 1) ``row_mean`` broadcast to (B, T) equals stock TRL's with it as (B,)."""
    loss, grad = _loss_and_gradient(ours, {**batch, "advantages": row_mean * batch["completion_mask"]})
    stock_loss, stock_grad = _loss_and_gradient(stock, {**batch, "advantages": row_mean.squeeze(1)})
    assert loss == pytest.approx(stock_loss, rel=1e-5, abs=1e-7)
    torch.testing.assert_close(grad, stock_grad, rtol=1e-4, atol=1e-7)


def _loss_and_gradient(trainer, inputs) -> tuple[float, torch.Tensor]:
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    return loss.item(), torch.cat([p.grad.flatten() for p in trainer.model.parameters()])


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "bnpo", "luspo", "sapo", "cispo"])
def test_gspo_token_equals_gspo_for_row_constant_advantages(gspo, loss_type):
    """GSPO-token's defining property: with A_t = A_i it is GSPO, in loss and gradient (TRL's own GSPO here)."""
    ours, stock, batch, token_advantages = gspo
    ours.loss_type = stock.loss_type = loss_type
    _assert_equals_stock_gspo(
        ours, stock, batch, sequence_advantages(token_advantages, batch["completion_mask"])
    )


def test_gspo_token_equals_gspo_with_the_off_policy_mask(gspo):
    """The mask reads TRL's mean KL through GSPO-token's old log-probs: the same rows are dropped as in TRL's GSPO."""
    ours, stock, batch, token_advantages = gspo
    ours.loss_type = stock.loss_type = "grpo"
    mask = batch["completion_mask"]
    row_mean = sequence_advantages(token_advantages, mask)
    with torch.no_grad():
        kl = sequence_advantages(batch["old_per_token_logps"] - _logps(ours, batch), mask).squeeze(
            1
        )  # mean KL
    threshold = kl.median().item()  # some rows above it: those with a negative advantage are dropped
    assert bool(((kl > threshold) & (row_mean.squeeze(1) < 0)).any()), "the case needs a dropped row"
    try:
        ours.off_policy_mask_threshold = stock.off_policy_mask_threshold = threshold
        _assert_equals_stock_gspo(ours, stock, batch, row_mean)
    finally:
        ours.off_policy_mask_threshold = stock.off_policy_mask_threshold = None


def test_gspo_token_keeps_the_token_credit(gspo):
    ours, stock, batch, token_advantages = gspo
    ours.loss_type = stock.loss_type = "grpo"
    mask = batch["completion_mask"]
    row_mean = sequence_advantages(token_advantages, mask) * mask
    _, token = _loss_and_gradient(ours, {**batch, "advantages": token_advantages})
    _, mean = _loss_and_gradient(ours, {**batch, "advantages": row_mean})
    assert ((token - mean).norm() / token.norm()).item() > 0.1
    # stock TRL's sequence ratio turns (B, T) credit into the row mean (the bug the hook fixes)
    _, stock_token = _loss_and_gradient(stock, {**batch, "advantages": token_advantages})
    _, stock_mean = _loss_and_gradient(stock, {**batch, "advantages": row_mean})
    assert ((stock_token - stock_mean).norm() / stock_token.norm()).item() < 1e-4


def test_gspo_token_matches_its_formula(gspo):
    """The loss of GSPO-token written out: −mean_i 1/|o_i| Σ_t min(s_it·A_t, clip(s_it, 1 ± ε)·A_t)."""
    ours, _, batch, token_advantages = gspo
    ours.loss_type = "grpo"
    mask = batch["completion_mask"].float()
    loss, grad = _loss_and_gradient(ours, {**batch, "advantages": token_advantages})

    ours.model.zero_grad(set_to_none=True)
    logps = _logps(ours, batch)
    log_s = ((logps - batch["old_per_token_logps"]) * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True)
    ratio = torch.exp(log_s.detach() + logps - logps.detach())
    clipped = ratio.clamp(1 - ours.epsilon_low, 1 + ours.epsilon_high)
    per_token = -torch.min(ratio * token_advantages, clipped * token_advantages)
    reference = ((per_token * mask).sum(1) / mask.sum(1)).mean()
    reference.backward()
    expected = torch.cat([p.grad.flatten() for p in ours.model.parameters()])
    assert loss == pytest.approx(reference.item(), rel=1e-5, abs=1e-7)
    torch.testing.assert_close(grad, expected, rtol=1e-4, atol=1e-7)


def test_gspo_token_leaves_the_batch_and_the_trainer_as_they_were(gspo):
    ours, _, batch, token_advantages = gspo
    inputs = {**batch, "advantages": token_advantages}
    old = inputs["old_per_token_logps"].clone()
    _loss_and_gradient(ours, inputs)
    assert torch.equal(inputs["old_per_token_logps"], old)  # reused by the next of num_iterations passes
    assert ours.importance_sampling_level == "sequence"
    assert "_get_per_token_logps_and_entropies" not in vars(ours)
