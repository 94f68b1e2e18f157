"""The `vps` estimator (GRPO-VPS): Ã = A_i + α·ΔC_k per segment, modes, NaN safety, registry."""

from __future__ import annotations

import math

import pytest
import torch

from psgrpo.advantages import (
    ADVANTAGE_ESTIMATORS,
    confidence_progress,
    vps_token_advantages,
)
from psgrpo.vps.boundaries import segment_index_from_boundaries

NAN = float("nan")


def example():
    """Row 0: K=2 (boundaries 1, 3), 6 tokens; row 1: K=1 (boundary 2), 4 tokens; T = 7."""
    segment_index = segment_index_from_boundaries([[1, 3], [2]], [6, 4], 7)
    mask = (segment_index >= 0).long()
    confidence = torch.tensor([[0.2, 0.5, 0.4], [0.6, 0.1, NAN]])
    outcome = torch.tensor([1.0, -0.5])
    return dict(
        outcome_advantages=outcome, completion_mask=mask, confidence=confidence, segment_index=segment_index
    )


def test_hand_computed_example():
    adv = vps_token_advantages(**example(), alpha=1.2)
    # row 0: ΔC = (0.3, -0.1) → 1 + 0.36, 1 - 0.12, then A = 1 after the last boundary
    # row 1: ΔC_1 = -0.5 → -0.5 - 0.6, then -0.5
    expected = torch.tensor(
        [
            [1.36, 1.36, 0.88, 0.88, 1.0, 1.0, 0.0],
            [-1.1, -1.1, -1.1, -0.5, 0.0, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(adv, expected)


def test_alpha_zero_is_exactly_the_outcome_advantage():
    ex = example()
    adv = vps_token_advantages(**ex, alpha=0.0)
    assert torch.equal(adv, ex["outcome_advantages"].unsqueeze(1) * ex["completion_mask"].float())


def test_log_form():
    ex = example()
    adv = vps_token_advantages(**ex, alpha=1.0, log_form=True)
    d1, d2, e1 = math.log(0.5 / 0.2), math.log(0.4 / 0.5), max(math.log(0.1 / 0.6), -1.0)
    expected = torch.tensor(
        [
            [1 + min(d1, 1.0), 1 + min(d1, 1.0), 1 + d2, 1 + d2, 1.0, 1.0, 0.0],
            [-0.5 + e1, -0.5 + e1, -0.5 + e1, -0.5, 0.0, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(adv, expected)


def test_progress_is_clipped_to_unit_interval():
    c = torch.tensor([[-1.0, 2.0, 0.0], [1e-9, 1.0, 0.0]])
    torch.testing.assert_close(confidence_progress(c), torch.tensor([[1.0, -1.0], [1.0, -1.0]]))
    log = confidence_progress(c, log_form=True)  # clamped at 1e-6: log ratios are huge
    torch.testing.assert_close(log, torch.tensor([[1.0, -1.0], [1.0, -1.0]]))
    assert log.abs().max() <= 1.0


def test_zero_variance_keep_and_drop():
    ex = example()
    ex["outcome_advantages"] = torch.tensor([0.0, -0.5])
    has_var = torch.tensor([False, True])
    keep = vps_token_advantages(**ex, alpha=1.0, zero_variance="keep", group_has_variance=has_var)
    torch.testing.assert_close(keep[0], torch.tensor([0.3, 0.3, -0.1, -0.1, 0.0, 0.0, 0.0]))
    drop = vps_token_advantages(**ex, alpha=1.0, zero_variance="drop", group_has_variance=has_var)
    assert torch.equal(drop[0], torch.zeros(7))
    torch.testing.assert_close(drop[1], keep[1])


def test_truncated_modes():
    ex = example()
    truncated = torch.tensor([True, False])
    full = vps_token_advantages(**ex, alpha=1.0)
    outcome = vps_token_advantages(**ex, alpha=1.0, is_truncated=truncated, truncated="outcome")
    torch.testing.assert_close(outcome[0], torch.tensor([1.0, 1, 1, 1, 1, 1, 0]))
    keep = vps_token_advantages(**ex, alpha=1.0, is_truncated=truncated, truncated="keep")
    torch.testing.assert_close(keep, full)
    zero = vps_token_advantages(**ex, alpha=1.0, is_truncated=truncated, truncated="zero")
    assert torch.equal(zero[0], torch.zeros(7))
    for adv in (outcome, zero):
        torch.testing.assert_close(adv[1], full[1])


def test_non_finite_confidence_never_reaches_the_output():
    ex = example()
    ex["confidence"] = torch.tensor([[NAN, 0.5, float("inf")], [0.6, NAN, NAN]])
    adv = vps_token_advantages(**ex, alpha=1.2)
    assert torch.isfinite(adv).all()
    # every ΔC here is non-finite → 0 → plain outcome advantage
    torch.testing.assert_close(adv, vps_token_advantages(**ex, alpha=0.0))
    ex["confidence"] = torch.tensor([[0.2, 0.5, NAN], [0.6, 0.1, NAN]])
    adv = vps_token_advantages(**ex, alpha=1.0, log_form=True)
    assert torch.isfinite(adv).all() and adv[0, 2] == 1.0  # ΔC_2 = NaN → 0


def test_rows_without_boundaries_and_empty_rows_get_the_outcome():
    seg = segment_index_from_boundaries([[], []], [3, 0], 4)
    adv = vps_token_advantages(
        outcome_advantages=torch.tensor([0.7, 0.3]),
        completion_mask=(seg >= 0).long(),
        confidence=torch.tensor([[0.4], [NAN]]),
        segment_index=seg,
    )
    torch.testing.assert_close(adv, torch.tensor([[0.7, 0.7, 0.7, 0.0], [0.0, 0.0, 0.0, 0.0]]))


def test_bad_arguments_raise():
    ex = example()
    with pytest.raises(ValueError):
        vps_token_advantages(**ex, zero_variance="maybe")
    with pytest.raises(ValueError):
        vps_token_advantages(**ex, truncated="clip")
    ex["confidence"] = ex["confidence"][:, :2]  # row 0 has 3 segments → needs C_0..C_2
    with pytest.raises(ValueError):
        vps_token_advantages(**ex)


def test_registry_lookup():
    assert ADVANTAGE_ESTIMATORS.get("vps") is vps_token_advantages
    adv = ADVANTAGE_ESTIMATORS.get("vps")(**example(), unused_signal=object())
    assert adv.shape == (2, 7)
