"""The techniques inside real ProcessGRPOTrainer runs (tiny models, 1–4 CPU steps each)."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import length_reward, record_batches, tiny_run_args
from transformers import AutoModelForCausalLM, TrainerCallback
from trl.trainer.utils import add_fused_lm_head

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.metrics_log import read_metrics
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.techniques.curriculum import CurriculumRepeatSampler
from psgrpo.techniques.memory_bank import BankEntry, is_correct, prompt_key
from psgrpo.techniques.reward_norm import EPS, group_advantages, weighted_rewards
from psgrpo.techniques.state import STATE_FILE
from psgrpo.trainer import ProcessGRPOTrainer

pytestmark = pytest.mark.slow  # trains the tiny model for a few steps per test: `make test-fast` skips it

REWARDS = [correctness_reward, format_reward, length_reward]


def _trainer(tmp_path, model, tokenizer, dataset=None, rewards=REWARDS, **overrides):
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, **overrides))
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=dataset if dataset is not None else make_arith_dataset("train", n=8),
        processing_class=tokenizer,
    )


class _LearningRates(TrainerCallback):
    def __init__(self):
        self.lrs = []

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        self.lrs.append(optimizer.param_groups[0]["lr"])


# ---- KL schedule -------------------------------------------------------------------------


def test_kl_schedule_changes_beta_every_step(tmp_path, tiny_model, char_tokenizer):
    tiny_model.save_pretrained(tmp_path / "init")  # beta > 0: TRL builds the reference model from this path
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "init")
    trainer = _trainer(
        tmp_path, model, char_tokenizer, max_steps=3, beta=0.04, kl_schedule="linear", max_completion_length=8
    )
    trainer.train()
    records = [r for r in read_metrics(trainer.args.output_dir) if "loss" in r]
    assert [r["beta"] for r in records] == pytest.approx([0.04, 0.04 * 2 / 3, 0.04 / 3])
    assert all("kl" in r for r in records)
    assert trainer.beta == pytest.approx(0.04 / 3)


# ---- running reward normalisation ---------------------------------------------------------


def test_group_advantages_match_trl(tmp_path, tiny_model, char_tokenizer):
    """Reward normalisation rebuilds TRL's advantages with group_advantages: identical on a real batch."""
    trainer = _trainer(tmp_path, tiny_model, char_tokenizer)
    batches = record_batches(trainer)
    trainer.train()
    rewards = weighted_rewards(trainer.step_record.rewards_per_func, trainer.reward_weights)
    expected = group_advantages(rewards, 4, "group")
    assert expected.abs().sum() > 0
    out = batches[0]
    torch.testing.assert_close(out["advantages"], expected)  # grpo: TRL's own 1-D A_i


def test_reward_normalisation_is_applied(tmp_path, tiny_model, char_tokenizer):
    trainer = _trainer(tmp_path, tiny_model, char_tokenizer, reward_norm_momentum=0.9, scale_rewards="none")
    batches = record_batches(trainer)
    trainer.train()
    rewards = weighted_rewards(trainer.step_record.rewards_per_func, trainer.reward_weights)
    stats = trainer.reward_normalizer
    assert stats.updates == 1
    assert stats.mean == pytest.approx(rewards.mean().item())
    assert stats.std == pytest.approx(rewards.std(unbiased=False).item(), rel=1e-5)
    centred = rewards - rewards.view(-1, 4).mean(1).repeat_interleave(4)
    expected = centred / (stats.std + EPS)
    out = batches[0]
    torch.testing.assert_close(out["advantages"], expected)  # grpo: TRL's own 1-D A_i
    record = read_metrics(trainer.args.output_dir)[0]
    assert record["reward_norm/std"] == pytest.approx(stats.std)


# ---- curriculum --------------------------------------------------------------------------


def test_curriculum_draws_easy_prompts_first(tmp_path, tiny_model, char_tokenizer):
    dataset = make_arith_dataset("train", n=40)
    trainer = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        dataset=dataset,
        curriculum="linear",
        curriculum_start_fraction=0.25,
        curriculum_steps=10,
        max_completion_length=8,
    )
    assert isinstance(trainer._get_train_sampler(), CurriculumRepeatSampler)
    seen = []
    original = trainer._generate_and_score_completions

    def spy(inputs):
        seen.extend(x["difficulty"] for x in inputs)
        return original(inputs)

    trainer._generate_and_score_completions = spy
    trainer.train()
    easiest_quarter = sorted(dataset["difficulty"])[9]
    assert len(seen) == 8 and max(seen) <= easiest_quarter < max(dataset["difficulty"])


def test_curriculum_without_difficulty_column(tmp_path, tiny_model, char_tokenizer):
    dataset = make_arith_dataset("train", n=8).remove_columns("difficulty")
    with pytest.raises(ValueError, match=r"needs a numeric 'difficulty' column .*dataset\.map"):
        _trainer(tmp_path, tiny_model, char_tokenizer, dataset=dataset, curriculum="linear")


# ---- flat learning-rate warm-up ------------------------------------------------------------


def test_flat_warmup_learning_rates(tmp_path, tiny_model, char_tokenizer):
    trainer = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        max_steps=4,
        learning_rate=5e-6,
        warmup_lr=1e-6,
        warmup_steps=2,
        lr_scheduler_type="constant",
        max_completion_length=8,
    )
    recorder = _LearningRates()
    trainer.add_callback(recorder)
    trainer.train()
    assert recorder.lrs == pytest.approx([1e-6, 1e-6, 5e-6, 5e-6])


# ---- memory bank -------------------------------------------------------------------------


def _fill_bank(trainer, dataset, tokenizer, logp=-0.25):
    """One short correct completion per prompt, as if sampled earlier with per-token log-prob ``logp``."""
    for row in dataset:
        text = f"<answer>{row['answer']}</answer>"
        ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        trainer.memory_bank.offer(prompt_key(row["prompt"]), BankEntry(ids, [logp] * len(ids), 2.4, text))


@pytest.mark.parametrize("method", ["grpo", "ps", "vps"])
def test_all_wrong_group_gets_the_banked_completion(tmp_path, tiny_model, char_tokenizer, method):
    """TRL re-scores the replayed completion (PS step scores and VPS probes see it too); old log-probs = stored."""
    dataset = make_arith_dataset("train", n=8)
    trainer = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        dataset=dataset,
        rewards=REWARDS[:2],
        memory_bank=True,
        method=method,
    )
    _fill_bank(trainer, dataset, char_tokenizer)
    batches = record_batches(trainer)
    trainer.train()
    out = batches[0]
    mask, advantages = out["completion_mask"].bool(), out["advantages"]
    for group in range(2):  # 8 rows = 2 prompts × 4; the untrained model gets everything wrong
        banked = group * 4 + 3
        length = int(mask[banked].sum())
        entry = trainer.memory_bank.peek(prompt_key(trainer.step_record.inputs[banked]["prompt"]))
        assert out["completion_ids"][banked, :length].tolist() == entry.completion_ids
        # its old log-probs are the stored behaviour ones: TRL's ratio is π_θ / π_behaviour
        assert out["old_per_token_logps"][banked, :length].tolist() == pytest.approx([-0.25] * length)
        assert trainer.step_record.rewards_per_func[banked, 0] == 2.0  # TRL re-scored it: correct
        if method == "grpo":  # outcome credit (TRL's 1-D A_i): the only positive advantage of its group
            assert advantages[banked] > 0
            for wrong in range(group * 4, banked):
                assert advantages[wrong] < 0
    record = read_metrics(trainer.args.output_dir)[0]
    assert record["memory/groups_rescued"] == 2 and record["memory/bank_size"] == 8


def test_memory_bank_survives_checkpoint_and_resume(tmp_path, tiny_model, char_tokenizer):
    dataset = make_arith_dataset("train", n=8)
    first = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        dataset=dataset,
        memory_bank=True,
        save_strategy="steps",
        save_steps=1,
    )
    _fill_bank(first, dataset, char_tokenizer)
    first.train()
    checkpoint = tmp_path / "out" / "checkpoint-1"
    assert (checkpoint / STATE_FILE).is_file()
    second = _trainer(
        tmp_path,
        AutoModelForCausalLM.from_pretrained(checkpoint),
        char_tokenizer,
        dataset=dataset,
        memory_bank=True,
        max_steps=2,
    )
    assert len(second.memory_bank) == 0
    second.train(resume_from_checkpoint=str(checkpoint))
    saved, resumed = first.memory_bank.state_dict(), second.memory_bank.state_dict()
    assert dict(resumed["entries"]) == dict(saved["entries"])  # same entries (their LRU order moved on)
    step2 = [r for r in read_metrics(second.args.output_dir) if r["step"] == 2 and "loss" in r]
    assert step2[0]["memory/groups_rescued"] == 2  # the resumed bank rescued the new batch's groups


def test_correct_completions_enter_the_bank_with_behaviour_logps(tmp_path):
    """The warm-started model solves some prompts; their best correct completions are banked with π_old log-probs."""
    model, tokenizer = load_model_and_tokenizer(None)
    initial, _ = load_model_and_tokenizer(None)  # the behaviour policy: the weights before the update
    dataset = make_arith_dataset("train", n=16)
    trainer = _trainer(
        tmp_path,
        model,
        tokenizer,
        dataset=dataset,
        rewards=[correctness_reward, format_reward],
        memory_bank=True,
        per_device_train_batch_size=16,
        max_completion_length=96,
        learning_rate=1e-4,
    )
    add_fused_lm_head(initial, temperature=trainer.temperature)  # as TRL patches the policy
    batches = record_batches(trainer)
    trainer.train()
    out, bank = batches[0], trainer.memory_bank
    assert len(bank) > 0, "the warm-started model should solve at least one of 4 prompts in 4 tries"
    golds = {prompt_key(x["prompt"]): x["answer"] for x in dataset}
    with torch.no_grad():  # TRL's own log-probs (fused LM head, its autocast), on the same padded batch
        expected, _, _ = trainer._get_per_token_logps_and_entropies(
            initial,
            torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1),
            torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1),
            out["completion_ids"].size(1),
            batch_size=16,
        )
    for key, entry in bank.state_dict()["entries"]:
        assert is_correct(entry["completion"], golds[key])
        n = len(entry["completion_ids"])
        row = next(
            i for i, ids in enumerate(out["completion_ids"].tolist()) if ids[:n] == entry["completion_ids"]
        )
        torch.testing.assert_close(torch.tensor(entry["logps"]), expected[row, :n], rtol=0, atol=1e-6)
