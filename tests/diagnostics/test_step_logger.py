"""psgrpo.diagnostics.step_logger: the diag/* metrics of a scored batch, by hand and from a real training step."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.diagnostics.step_logger import (
    StepDiagnostics,
    correctness_metrics,
    ps_segments,
    tree_segments,
    vps_segments,
)
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.metrics_log import read_metrics
from psgrpo.ps.segmentation import token_offsets
from psgrpo.ps.signal import PsCredit
from psgrpo.trainer import ProcessGRPOTrainer
from psgrpo.tree.signal import TreeCredit
from psgrpo.vps.signal import VpsCredit

WRONG = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 8\n</reasoning>\n<answer>8</answer>"
RIGHT = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"
NAMES = ["correctness_reward", "format_reward"]


def _step_end_tokens(tokenizer, text: str) -> list[int]:
    """Token indices of the newlines that end the two step lines."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    _, offsets = token_offsets(tokenizer, ids)
    newlines = [i for i, ch in enumerate(text) if ch == "\n"][1:3]
    return [next(t for t, (s, _) in enumerate(offsets) if s == n) for n in newlines]


def _output(tokenizer, texts):
    rows = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(map(len, rows))
    ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return {"completion_ids": ids, "completion_mask": mask}


def test_correctness_metrics_hand_computed():
    rewards = torch.tensor([[0.0, 0.8], [2.0, 0.8], [0.0, 0.8], [0.0, 0.6]])  # groups of 2
    metrics = correctness_metrics(rewards, NAMES, [1.0, 1.0], 2, "none", 2.0)
    assert metrics["all_equal_correct_frac"] == 0.5 == metrics["all_wrong_frac"]
    assert metrics["all_right_frac"] == 0.0
    # A_i parts: correctness −1, +1 then 0, 0; format 0, 0 then +0.1, −0.1 → 2 / 2.2 and 0.2 / 2.2
    assert metrics["reward_share/correctness_reward"] == pytest.approx(2 / 2.2)
    assert metrics["reward_share/format_reward"] == pytest.approx(0.2 / 2.2)


def test_vps_segments_label_each_cut_by_the_step_it_closes(char_tokenizer):
    ids = char_tokenizer(WRONG, add_special_tokens=False)["input_ids"]
    text, offsets = token_offsets(char_tokenizer, ids)
    cuts = _step_end_tokens(char_tokenizer, WRONG)
    pairs, places = vps_segments(text, offsets, cuts, [0.4, -0.3])
    assert pairs == [(0.4, False), (-0.3, True)]
    assert places == ["step_end", "step_end"]
    inside = [cuts[0] - 2]  # between the digits of "12"
    assert vps_segments(text, offsets, inside, [0.1])[1] == ["inside_number"]
    assert vps_segments(text, offsets, [2], [0.1])[0] == []  # "<reasoning>\nS": no result inside


def test_ps_segments_judge_each_step_and_skip_fallbacks():
    steps = ["Step 1: 7 + 5 = 12\n", "Step 2: 12 - 3 = 8\n", "</reasoning>\n<answer>8</answer>"]
    assert ps_segments(steps, [0.7, -1.2, 0.5]) == [(0.7, False), (-1.2, True)]
    assert ps_segments(steps, None) == []


def test_vps_batch_metrics(char_tokenizer):
    config = ProcessGRPOConfig(output_dir="unused", use_cpu=True, method="vps", report_to=[])
    diagnose = StepDiagnostics(config, char_tokenizer, NAMES, [1.0, 1.0])
    cuts = _step_end_tokens(char_tokenizer, WRONG)
    credit = VpsCredit(
        boundaries=[cuts, cuts],
        confidence=torch.tensor([[0.1, 0.5, 0.2], [0.1, 0.4, 0.9]]),  # ΔC: +0.4, −0.3 | +0.3, +0.5
        truncated=torch.tensor([False, False]),
    )
    rewards = torch.tensor([[0.0, 0.8], [2.0, 0.8]])
    metrics = diagnose(_output(char_tokenizer, [WRONG, RIGHT]), credit, rewards, 2)
    assert metrics["diag/process_auc"] == 1.0  # −0.3 below +0.4, +0.3, +0.5
    assert metrics["diag/signal_wrong_mean"] == pytest.approx(-0.3)
    assert metrics["diag/signal_correct_mean"] == pytest.approx(0.4)
    assert metrics["diag/labelled_segments"] == 4.0
    assert (
        metrics["diag/boundary_step_end_frac"] == 1.0 and metrics["diag/boundary_inside_number_frac"] == 0.0
    )
    assert metrics["diag/all_equal_correct_frac"] == 0.0 and metrics["diag/unnecessary_step_frac"] == 0.0
    assert metrics["diag/reward_share/correctness_reward"] == pytest.approx(1.0)


def test_log_form_changes_the_signal_not_the_labels(char_tokenizer):
    config = ProcessGRPOConfig(
        output_dir="unused", use_cpu=True, method="vps", vps_log_form=True, report_to=[]
    )
    cuts = _step_end_tokens(char_tokenizer, WRONG)
    credit = VpsCredit([cuts], torch.tensor([[0.1, 0.2, 0.1]]), torch.tensor([False]))
    metrics = StepDiagnostics(config, char_tokenizer, NAMES, [1.0, 1.0])(
        _output(char_tokenizer, [WRONG]), credit, torch.tensor([[0.0, 0.8]]), 1
    )
    assert metrics["diag/signal_wrong_mean"] == pytest.approx(-0.6931, abs=1e-4)  # log 0.1 − log 0.2
    assert metrics["diag/signal_correct_mean"] == pytest.approx(0.6931, abs=1e-4)


def test_ps_batch_metrics_and_grpo_has_no_signal(char_tokenizer):
    steps = ["Step 1: 7 + 5 = 12\n", "Step 2: 12 - 3 = 8\n", "</reasoning>\n<answer>8</answer>"]
    credit = PsCredit([steps], [[(0, 1)] * 3], [[1.0, 0.0, 0.5]], [[0.9, -1.1, 0.2]])
    ps = ProcessGRPOConfig(output_dir="unused", use_cpu=True, method="ps", report_to=[])
    metrics = StepDiagnostics(ps, char_tokenizer, NAMES, [1.0, 1.0])(
        _output(char_tokenizer, [WRONG]), credit, torch.tensor([[0.0, 0.8]]), 1
    )
    assert metrics["diag/labelled_segments"] == 2.0 and metrics["diag/process_auc"] == 1.0
    assert metrics["diag/all_wrong_frac"] == 1.0
    assert not any(k.startswith("diag/boundary_") for k in metrics)
    grpo = ProcessGRPOConfig(output_dir="unused", use_cpu=True, method="grpo", report_to=[])
    metrics = StepDiagnostics(grpo, char_tokenizer, NAMES, [1.0, 1.0])(
        _output(char_tokenizer, [WRONG]), None, torch.tensor([[0.0, 0.8]]), 1
    )
    assert "diag/process_auc" not in metrics and "diag/labelled_segments" not in metrics
    assert "diag/reward_share/correctness_reward" not in metrics  # every A_i is 0: NaN is left out


def test_tree_segments_label_the_s_token_runs(char_tokenizer):
    ids = char_tokenizer(WRONG, add_special_tokens=False)["input_ids"]
    text, offsets = token_offsets(char_tokenizer, ids)
    first_end, second_end = _step_end_tokens(char_tokenizer, WRONG)
    # S = the first step line's end + 1: segment 0 holds step 1 (right), segment 1 step 2 (wrong)
    pairs = tree_segments(text, offsets, [0.5, -0.7], [first_end + 1])
    assert pairs == [(0.5, False), (-0.7, True)]
    # three levels cut at the two step ends (as tree_boundaries='lines' cuts): step 1, step 2, the answer
    assert tree_segments(text, offsets, [0.5, -0.7, 0.2], [first_end + 1, second_end + 1]) == [
        (0.5, False),
        (-0.7, True),
    ]
    assert tree_segments(text, offsets, [0.3], []) == [(0.3, True)]  # one level: the whole completion


def test_tree_batch_metrics(char_tokenizer):
    config = ProcessGRPOConfig(output_dir="unused", use_cpu=True, method="tree", report_to=[])
    cut = _step_end_tokens(char_tokenizer, WRONG)[0] + 1
    gains = torch.tensor([[0.2, -0.9], [0.2, 0.9]])  # two leaves of one root: WRONG, then RIGHT
    credit = TreeCredit([2], torch.zeros(2, 3), gains, [[cut], [cut]])
    rewards = torch.tensor([[0.0, 0.8], [2.0, 0.8]])
    metrics = StepDiagnostics(config, char_tokenizer, NAMES, [1.0, 1.0])(
        _output(char_tokenizer, [WRONG, RIGHT]), credit, rewards, 2
    )
    assert metrics["diag/labelled_segments"] == 4.0
    assert metrics["diag/process_auc"] == 1.0  # −0.9 below 0.2, 0.2 and 0.9
    assert metrics["diag/signal_wrong_mean"] == pytest.approx(-0.9)
    assert not any(k.startswith("diag/boundary_") for k in metrics)


def test_a_training_step_logs_the_diagnostics(tmp_path):
    """The embedded checkpoint writes step lines, so the verifier labels its VPS segments."""
    model, tokenizer = load_model_and_tokenizer("embedded:arith")
    args = tiny_run_args(
        tmp_path,
        method="vps",
        diagnostics=True,
        max_completion_length=96,
        per_device_train_batch_size=16,
        temperature=1.0,
    )
    trainer = ProcessGRPOTrainer(
        model=model,
        args=ProcessGRPOConfig(**args),
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=tokenizer,
    )
    trainer.train()
    log = read_metrics(tmp_path / "out")[0]
    assert 0.0 <= log["diag/all_equal_correct_frac"] <= 1.0
    assert log["diag/all_equal_correct_frac"] == pytest.approx(
        log["diag/all_wrong_frac"] + log["diag/all_right_frac"]
    )
    assert log["diag/labelled_segments"] > 0
    places = [log[f"diag/boundary_{p}_frac"] for p in ("inside_number", "step_end", "line_end", "elsewhere")]
    assert sum(places) == pytest.approx(1.0)
    if "diag/process_auc" in log:  # needs a wrong and a right segment in the batch
        assert 0.0 <= log["diag/process_auc"] <= 1.0
