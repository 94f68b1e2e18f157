"""``method='tree'`` in ProcessGRPOTrainer: a one-level tree is outcome GRPO exactly; a real tree trains with the
credit of its values; ``psgrpo train --method tree`` runs. Its option checks are in test_options.py (fast)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from trainer_helpers import assert_same_logs, length_reward, record_batches, save_tiny_model, tiny_run_args
from transformers import AutoModelForCausalLM

from psgrpo.commands.cli import main
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.trainer import ProcessGRPOTrainer
from psgrpo.tree.values import tree_strides

pytestmark = pytest.mark.slow  # each test runs tree training steps: `make test-fast` skips it

REWARDS = [correctness_reward, format_reward, length_reward]


def _run(args, tokenizer, model_dir, dataset):
    torch.manual_seed(0)
    trainer = ProcessGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=REWARDS,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    batches = record_batches(trainer)
    trainer.train()
    return batches, trainer


def test_one_level_tree_is_grpo_exactly(tmp_path, char_tokenizer):
    """branching [G] (one root per leaf), the default w = 0, λ = 1: completions, A_i, every logged metric and the
    weights after two steps equal --method grpo's with the same seed."""
    dataset = make_arith_dataset("train", n=16)
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    common = dict(max_steps=2, max_completion_length=16, learning_rate=1e-2, beta=0.04, bf16=False)
    runs = {
        method: _run(
            ProcessGRPOConfig(
                **tiny_run_args(tmp_path, output_dir=str(tmp_path / method), **common), **extra
            ),
            char_tokenizer,
            model_dir,
            dataset,
        )
        for method, extra in (
            ("grpo", {"method": "grpo"}),
            ("tree", {"method": "tree", "tree_branching": [4]}),
        )
    }
    (ref_batches, ref), (our_batches, ours) = runs["grpo"], runs["tree"]
    assert not ours.token_credit, "a one-level tree gives one value per row: TRL gets its own 1-D A_i"
    for theirs, our in zip(ref_batches, our_batches, strict=True):
        assert torch.equal(our["completion_ids"], theirs["completion_ids"])
        assert theirs["advantages"].abs().sum() > 0, "the comparison needs non-zero advantages"
        assert torch.equal(our["advantages"], theirs["advantages"])
    assert_same_logs(ours.state.log_history, ref.state.log_history, own=("psgrpo/", "tree/"))
    theirs = dict(ref.model.named_parameters())
    for name, value in ours.model.named_parameters():
        assert torch.equal(value, theirs[name]), name


@pytest.mark.parametrize("boundaries", ["tokens", "lines", "entropy"])
def test_tree_training_step_gives_each_segment_its_value_gain(tmp_path, char_tokenizer, boundaries):
    """[2, 2], 4-token segments (or cut back to a line end): leaves share their root's tokens, and the tokens of
    segment k get ΔV_k / σ."""
    args = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, max_completion_length=16, learning_rate=1e-2, bf16=False),
        method="tree",
        tree_branching=[2, 2],
        tree_segment_tokens=4,
        tree_boundaries=boundaries,
    )
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    batches, trainer = _run(args, char_tokenizer, model_dir, make_arith_dataset("train", n=8))
    assert trainer.token_credit
    out, credit = batches[0], trainer.last_credit
    ids, mask = out["completion_ids"], out["completion_mask"]
    leaves = [row[: int(m.sum())].tolist() for row, m in zip(ids, mask, strict=True)]
    ends = [row_ends[0] for row_ends in credit.process.segment_ends]  # one inner end per leaf
    for row, (leaf, end) in enumerate(zip(leaves, ends, strict=True)):
        sibling = row ^ 1
        assert leaf[:end] == leaves[sibling][:end] and ends[sibling] == end  # siblings share their root
        if boundaries == "tokens":
            assert end == min(4, len(leaf))
        elif boundaries == "entropy":  # before the highest-entropy token of positions 2, 3, or uncut if ended
            assert end in (2, 3) or end == len(leaf) < 4
        else:
            root = char_tokenizer.decode(leaf[:end])
            assert end <= 4 and (root.endswith("\n") or end == min(4, len(leaf)) and "\n" not in root)
    rewards = credit.process.path_values[:, -1]
    for row in range(len(leaves)):
        first = row - row % 4
        values = credit.process.path_values[row]
        for level, size in enumerate(tree_strides([2, 2])):
            start = first + (row - first) // size * size
            assert values[level + 1].item() == pytest.approx(rewards[start : start + size].mean().item())
        std = rewards[first : first + 4].std().item()
        for t in range(len(leaves[row])):
            level = int(t >= ends[row])
            gain = (values[level + 1] - values[level]).item() / (std + 1e-4)
            assert out["advantages"][row, t].item() == pytest.approx(gain, abs=1e-5)
        assert (out["advantages"][row, len(leaves[row]) :] == 0).all()
    log = trainer.state.log_history[0]
    # ≤ 1: a cut root saves fewer tokens (with entropy cuts at 2 of 4 tokens, 8 + 4 × 14 = 64 = 4 leaves × 16)
    assert 0 < log["tree/token_ratio"] <= 1 and log["tree/tokens_generated"] > 0
    assert math.isfinite(log["loss"]) and log["tree/depth"] == 2


def test_segment_entropies_are_the_policys_at_each_new_token(tmp_path, char_tokenizer):
    """``_segment_entropies`` on rows of different context and segment lengths equals a plain forward of each row
    alone: the entropy of softmax(logits / temperature) predicting each segment token."""
    args = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, max_completion_length=16, bf16=False, temperature=0.7),
        method="tree",
        tree_branching=[2, 2],
        tree_segment_tokens=4,
        tree_boundaries="entropy",
    )
    model_dir = save_tiny_model(tmp_path / "init", char_tokenizer)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = ProcessGRPOTrainer(
        model=model, reward_funcs=REWARDS, args=args, train_dataset=make_arith_dataset("train", n=8),
        processing_class=char_tokenizer,
    )  # fmt: skip
    encode = char_tokenizer.encode
    contexts = [encode("Q: 3 + 4 = ?\n"), encode("Q: 12 - 5 = ?\nA")]
    segments = [encode("Step 1:"), encode("12")]
    measured = trainer._segment_entropies(contexts, segments)
    model.eval()
    for context, segment, row in zip(contexts, segments, measured, strict=True):
        with torch.no_grad():
            logits = model(torch.tensor([context + segment])).logits[0, len(context) - 1 : -1] / 0.7
        expected = -(logits.log_softmax(-1).exp() * logits.log_softmax(-1)).sum(-1)
        assert len(row) == len(segment)
        assert torch.allclose(torch.tensor(row), expected, atol=1e-4), (row, expected)


def test_psgrpo_train_method_tree_on_the_embedded_default(tmp_path):
    """Two steps of `psgrpo train --method tree` on the embedded demo (G = 8: the default tree 2 2 2; ~12 s)."""
    out = tmp_path / "tree"
    main(
        [
            "train", "--method", "tree", "--output_dir", str(out), "--max_steps", "2",
            "--per_device_train_batch_size", "16", "--eval_before_after", "false", "--report_to", "none",
            "--save_strategy", "no", "--logging_steps", "1",
        ]
    )  # fmt: skip
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(0 < r["tree/token_ratio"] < 1 and r["tree/depth"] == 3 for r in steps)
    assert json.loads((out / "report.json").read_text())["method"] == "tree"


GSM8K_ROWS = [
    {
        "question": "Betty is saving money for a new wallet which costs $100. Betty has only half of the money she "
        "needs. Her parents decided to give her $15 for that purpose, and her grandparents twice as much as her "
        "parents. How much more money does Betty need to buy the wallet?",
        "answer": "In the beginning, Betty has only 100 / 2 = $<<100/2=50>>50.\nBetty's grandparents gave her 15 * 2 = "
        "$<<15*2=30>>30.\nThis means, Betty needs 100 - 50 - 30 - 15 = $<<100-50-30-15=5>>5 more.\n#### 5",
    },
    {
        "question": "James writes a 3-page letter to 2 different friends twice a week. How many pages does he "
        "write a year?",
        "answer": "He writes each friend 3*2=<<3*2=6>>6 pages a week\nSo he writes 6*2=<<6*2=12>>12 pages every week\n"
        "That means he writes 12*52=<<12*52=624>>624 pages a year\n#### 624",
    },
]


@pytest.mark.slow
def test_psgrpo_train_method_tree_on_the_gsm8k_recipe(tmp_path, qwen_tokenizer):
    """The GSM8K recipe's code path (chat template, Qwen's tokenizer, β > 0, G = 4: tree 2 2) on a tiny Qwen2."""
    from psgrpo.loading import RECIPES_DIR
    from psgrpo.tiny.model import build_tiny_model
    from psgrpo.tiny.qwen_tokenizer import QWEN2_5_VOCAB_SIZE

    data_dir = tmp_path / "gsm8k"
    data_dir.mkdir()
    for split in ("train", "test"):
        (data_dir / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GSM8K_ROWS * 4))
    model_dir = tmp_path / "tiny-qwen2"
    build_tiny_model(
        qwen_tokenizer, vocab_size=QWEN2_5_VOCAB_SIZE, hidden_size=32, num_layers=2, intermediate_size=64
    ).save_pretrained(model_dir)
    qwen_tokenizer.save_pretrained(model_dir)
    out = tmp_path / "out"
    main(
        [
            "train", "--config", str(RECIPES_DIR / "gsm8k_qwen2.5_0.5b.yaml"), "--method", "tree",
            "--model_name_or_path", str(model_dir), "--dataset", str(data_dir), "--use_cpu", "true",
            "--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "4",  # one group of G = 4
            "--max_completion_length", "12", "--eval_before_after", "false", "--report_to", "none",
            "--save_strategy", "no", "--logging_steps", "1",
        ]
    )  # fmt: skip
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "loss" in r]
    assert len(steps) == 2 and all(math.isfinite(r["loss"]) and r["tree/depth"] == 2 for r in steps)
    assert all(0 < r["tree/token_ratio"] <= 1 for r in steps)


def test_lines_branch_between_the_embedded_models_step_lines(tmp_path):
    """The warm-started model writes one ``Step N:`` line at a time: with ``tree_boundaries='lines'`` every root
    ends at a line end (not mid-equation, as a fixed S would cut it), and the tokens after it get the level-1 gain."""
    from psgrpo.loading import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("embedded:arith")
    args = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, max_completion_length=96, per_device_train_batch_size=8, temperature=1.0),
        method="tree",
        tree_branching=[2, 2],
        tree_segment_tokens=24,
        tree_boundaries="lines",
    )
    trainer = ProcessGRPOTrainer(
        model=model, args=args, train_dataset=make_arith_dataset("train", n=8), processing_class=tokenizer
    )
    batches = record_batches(trainer)
    trainer.train()
    out, credit = batches[0], trainer.last_credit.process
    ends = [row[0] for row in credit.segment_ends]
    lengths = out["completion_mask"].sum(1).tolist()
    roots = [tokenizer.decode(out["completion_ids"][row, :end].tolist()) for row, end in enumerate(ends)]
    assert all(root.endswith("\n") for root in roots), roots
    assert any(end < min(24, n) for end, n in zip(ends, lengths, strict=True)), "no root was cut back"
    gains = credit.segment_advantages
    for row, (end, n) in enumerate(zip(ends, lengths, strict=True)):
        assert torch.allclose(out["advantages"][row, :end], gains[row, 0].expand(end))
        assert torch.allclose(out["advantages"][row, end:n], gains[row, 1].expand(n - end))
