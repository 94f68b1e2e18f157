"""A policy that writes its arithmetic in LaTeX gets a step signal in PS-GRPO training: a real
training step of ``--method ps`` on the embedded tiny model, completions fixed (LaTeX, or the same
steps in plain text), the step scorer reading them."""

from __future__ import annotations

import pytest
from trainer_helpers import length_reward, tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

pytestmark = pytest.mark.slow  # runs a training step: `make test-fast` skips it

PLAIN = [
    "Step 1: 3 * $68 = $204\nStep 2: 204 + 6 = 210\n<answer>210</answer>",
    "Step 1: 3 * $68 = $214\nStep 2: 214 + 6 = 220\n<answer>220</answer>",
    "Step 1: 30/100 * 180 = 54\nStep 2: 180 - 54 = 126\n<answer>126</answer>",
    "Step 1: 30/100 * 180 = 54\nStep 2: 180 - 54 = 136\n<answer>136</answer>",
]
LATEX = [
    "Step 1: \\(3 \\times \\$68 = \\$204\\)\nStep 2: $204 + 6 = 210$\n<answer>\\boxed{210}</answer>",
    "Step 1: \\(3 \\times \\$68 = \\$214\\)\nStep 2: $$214 + 6 = 220$$\n<answer>\\boxed{220}</answer>",
    "Step 1: $\\frac{30}{100}\\cdot 180 = 54$\nStep 2: \\[ 180 \\text{ km} - 54 \\text{ km} = 126 \\]\n"
    "<answer>126</answer>",
    "Step 1: $\\dfrac{30}{100} \\cdot 180 = 54$\nStep 2: \\(180 - 54 = 136\\)\n<answer>136</answer>",
]


def _trainer_with(completions: list[str]) -> type[ProcessGRPOTrainer]:
    """A ProcessGRPOTrainer whose rollouts are ``completions`` (by member of the group): only
    generation is replaced; segmentation, the step scorer, advantages and the loss are the real code."""

    class Fixed(ProcessGRPOTrainer):
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, **kwargs):
            out = []
            for i in range(len(prompt_ids)):
                ids = self._tokenizer(completions[i % len(completions)], add_special_tokens=False)[
                    "input_ids"
                ]
                out.append([*ids, self._tokenizer.eos_token_id])
            return out, None

    return Fixed


def _run(tmp_path, tokenizer, completions: list[str]):
    args = tiny_run_args(
        tmp_path,
        method="ps",
        segmenter="newline",
        step_scorer="arithmetic",
        max_completion_length=160,
        per_device_train_batch_size=4,
    )
    trainer = _trainer_with(completions)(
        model=build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64),
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**args),
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=tokenizer,
    )
    trainer.train()
    return trainer.last_credit


def test_latex_completions_get_varying_step_scores_as_their_plain_text_does(tmp_path, char_tokenizer):
    latex = _run(tmp_path / "latex", char_tokenizer, LATEX)
    scores = [s for row in latex.process.raw_step_scores for s in row]
    assert len(set(scores)) > 1  # a step signal: right and wrong LaTeX steps score apart
    wrong_first = latex.process.raw_step_scores[1]
    right_first = latex.process.raw_step_scores[0]
    assert wrong_first[0] < right_first[0]  # \(3 \times \$68 = \$214\) is read, and fails
    plain = _run(tmp_path / "plain", char_tokenizer, PLAIN)
    assert latex.process.raw_step_scores == plain.process.raw_step_scores  # read as its plain text
    # the group-normalised step scores r̃ that enter the token advantages are not all 0
    assert any(abs(s) > 0 for row in latex.process.step_scores for s in row)
