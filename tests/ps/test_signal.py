"""PS-GRPO's step-score normalisation follows TRL's outcome scaling (``scale`` = group or batch std)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.ps.signal import normalize_step_scores

SCORE = st.integers(0, 20).map(lambda k: k / 20)  # verifier-like scores in [0, 1]


@st.composite
def grouped_scores(draw):
    """(scores of G·n completions, G): 1–4 steps each, some completions failed (None)."""
    generations, groups = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    rows = [draw(st.none() | st.lists(SCORE, min_size=1, max_size=4)) for _ in range(generations * groups)]
    return rows, generations


def _flat(rows):
    return [s for row in rows if row is not None for s in row]


@given(grouped_scores(), st.sampled_from(["group", "batch"]), st.floats(0.1, 10.0))
def test_normalised_scores_do_not_depend_on_the_score_scale(case, scale, factor):
    """Multiplying every step score by c leaves r̃ unchanged (up to the 1e-4 in the std): λ weighs unitless terms."""
    rows, generations = case
    scaled = [None if row is None else [factor * s for s in row] for row in rows]
    out = normalize_step_scores(rows, generations, eps=0.0, scale=scale)
    out_scaled = normalize_step_scores(scaled, generations, eps=0.0, scale=scale)
    assert _flat(out_scaled) == pytest.approx(_flat(out), rel=1e-6, abs=1e-6)


@given(grouped_scores())
def test_batch_scale_centres_per_group_and_divides_by_the_batch_std(case):
    rows, generations = case
    out = normalize_step_scores(rows, generations, scale="batch")
    batch_std = torch.tensor(_flat(rows), dtype=torch.float64)
    batch_std = batch_std.std().item() if batch_std.numel() > 1 else 0.0
    for start in range(0, len(rows), generations):
        group, normalised = rows[start : start + generations], out[start : start + generations]
        flat = _flat(group)
        no_spread = len(flat) < 2 or max(flat) == min(flat)
        mean = sum(flat) / len(flat) if flat else 0.0
        for row, values in zip(group, normalised, strict=True):
            if row is None:
                assert values is None
            elif no_spread:
                assert values == [0.0] * len(row)
            else:
                assert values == pytest.approx([(s - mean) / (batch_std + 1e-4) for s in row], rel=1e-9)


def test_one_group_batch_equals_group():
    rows = [[1.0, 0.0], [1.0], [0.5, 0.25]]
    assert normalize_step_scores(rows, 3, scale="batch") == normalize_step_scores(rows, 3, scale="group")


def test_unknown_scale_is_refused():
    with pytest.raises(ValueError, match="scale='token' is not allowed; choose one of 'group', 'batch'"):
        normalize_step_scores([[1.0], [0.0]], 2, scale="token")
