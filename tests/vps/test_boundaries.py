"""GRPO-VPS segmentation: token entropies, adaptive entropy boundaries, segment indices."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.vps.boundaries import (
    DEFAULT_ENTROPY_TOLERANCE,
    ENTROPY_FLOOR,
    answer_marker_token,
    boundaries_from_spans,
    entropy_levels,
    segment_index_from_boundaries,
    select_boundaries,
    spans_from_boundaries,
    token_entropies,
)

# --------------------------------------------------------------------------------------------
# token_entropies


def test_entropy_of_uniform_logits_is_log_v():
    logits = torch.full((2, 3, 7), 5.0, dtype=torch.bfloat16)
    ent = token_entropies(logits, temperature=1.0)
    assert ent.shape == (2, 3) and ent.dtype == torch.float32
    torch.testing.assert_close(ent, torch.full((2, 3), math.log(7)))


def test_entropy_of_peaked_logits_matches_hand_computation():
    # p = softmax([10, 0, 0]) → H = -Σ p log p
    logits = torch.tensor([[[10.0, 0.0, 0.0]]])
    p = torch.softmax(logits[0, 0].double(), -1)
    expected = float(-(p * p.log()).sum())
    assert token_entropies(logits, 1.0).item() == pytest.approx(expected, abs=1e-6)  # fp32
    assert expected < 1e-3  # nearly one-hot


def test_entropy_is_stable_for_huge_and_masked_logits():
    logits = torch.tensor([[[1e4, 1e4, float("-inf"), -1e4]]])
    assert token_entropies(logits, 1.0).item() == pytest.approx(math.log(2), rel=1e-6)


def test_temperature_scales_logits():
    logits = torch.randn(2, 4, 11, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(token_entropies(logits, 2.0), token_entropies(logits / 2.0, 1.0))
    assert (token_entropies(logits, 3.0) > token_entropies(logits, 1.0)).all()  # hotter = flatter


def test_entropy_chunking_does_not_change_the_result():
    logits = torch.randn(3, 5, 9, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(token_entropies(logits, 0.7, chunk_size=2), token_entropies(logits, 0.7))


def test_entropy_rejects_bad_temperature():
    with pytest.raises(ValueError):
        token_entropies(torch.zeros(1, 1, 2), 0.0)


# --------------------------------------------------------------------------------------------
# select_boundaries


def spikes(n: int, at: dict[int, float]) -> torch.Tensor:
    """(n,) small entropies with spikes at the given positions."""
    ent = torch.full((n,), 0.1)
    for pos, value in at.items():
        ent[pos] = value
    return ent


def check_constraints(cuts, n, max_segments, min_len, protect_from):
    assert cuts == sorted(set(cuts))
    assert len(cuts) <= max(max_segments - 1, 0)
    edges = [-1, *cuts, n - 1] if cuts else []  # without cuts the completion may be short
    assert all(b - a >= min_len for a, b in zip(edges, edges[1:], strict=False)), (cuts, n)
    assert all(c < n - 1 for c in cuts)
    if protect_from is not None:
        assert all(c < protect_from for c in cuts)


def test_picks_highest_entropy_spikes():
    ent = spikes(30, {5: 3.0, 12: 2.0, 20: 2.5, 25: 1.0})
    assert select_boundaries(ent, max_segments=4, quantile=0.8, min_segment_tokens=4) == [5, 12, 20]


def test_at_most_k_minus_one_boundaries_by_descending_entropy():
    ent = spikes(40, {5: 3.0, 12: 2.0, 20: 2.5, 28: 2.8})
    assert select_boundaries(ent, max_segments=3, quantile=0.5, min_segment_tokens=4) == [5, 28]
    assert select_boundaries(ent, max_segments=1, quantile=0.5) == []


def test_min_segment_length_blocks_close_cuts_and_ends():
    ent = spikes(30, {10: 3.0, 12: 2.9, 1: 5.0, 27: 5.0})
    # q=0.88 keeps only the spikes; 1 leaves a first segment of 2 tokens, 27 a last one of 2,
    # 12 is 2 away from 10
    assert select_boundaries(ent, max_segments=4, quantile=0.88, min_segment_tokens=4) == [10]


def test_never_cuts_at_or_after_protect_from_nor_last_token():
    ent = spikes(30, {8: 1.0, 20: 3.0, 29: 9.0})  # q=0.92 keeps only the spikes
    assert select_boundaries(ent, quantile=0.92, min_segment_tokens=1, protect_from=20) == [8]
    assert select_boundaries(ent, quantile=0.92, min_segment_tokens=1, protect_from=21) == [8, 20]
    assert 29 not in select_boundaries(ent, quantile=0.0, min_segment_tokens=1)


def test_quantile_filters_candidates():
    ent = torch.arange(20, dtype=torch.float32)  # rising entropy: the quantile keeps the tail
    cuts = select_boundaries(ent, max_segments=4, quantile=0.9, min_segment_tokens=2, protect_from=14)
    assert cuts == []  # every candidate (>= 17.1) lies at or after protect_from
    cuts = select_boundaries(ent, max_segments=4, quantile=0.5, min_segment_tokens=2)
    assert cuts and all(ent[c] >= torch.quantile(ent, 0.5) for c in cuts)
    assert cuts == [13, 15, 17]


def test_ties_prefer_earlier_positions():
    ent = spikes(30, {6: 2.0, 8: 2.0, 10: 2.0})
    assert select_boundaries(ent, max_segments=2, quantile=0.9, min_segment_tokens=4) == [6]


def test_snaps_to_the_nearest_allowed_position_at_or_before():
    ent = spikes(30, {9: 3.0, 19: 2.0})
    cuts = select_boundaries(ent, quantile=0.95, min_segment_tokens=3, snap_positions=[4, 7, 17, 21])
    assert cuts == [7, 17]


def test_snapping_drops_cuts_that_become_illegal():
    ent = spikes(30, {9: 3.0, 11: 2.0})
    # both snap to 7 → the second is a duplicate; 9 → nothing at or before 1 is legal
    assert select_boundaries(ent, quantile=0.95, min_segment_tokens=3, snap_positions=[7]) == [7]
    assert select_boundaries(ent, quantile=0.95, min_segment_tokens=3, snap_positions=[1, 25]) == []


def test_jitter_is_deterministic_given_the_generator_and_keeps_constraints():
    ent = spikes(60, {10: 3.0, 25: 2.8, 40: 2.6})
    args = dict(max_segments=4, quantile=0.96, min_segment_tokens=5, protect_from=50, jitter=3)
    runs = [select_boundaries(ent, **args, generator=torch.Generator().manual_seed(7)) for _ in range(2)]
    assert runs[0] == runs[1]
    seen = set()
    for seed in range(20):
        cuts = select_boundaries(ent, **args, generator=torch.Generator().manual_seed(seed))
        check_constraints(cuts, 60, 4, 5, 50)
        assert len(cuts) == 3 and all(abs(c - o) <= 3 for c, o in zip(cuts, [10, 25, 40], strict=True))
        seen.add(tuple(cuts))
    assert len(seen) > 1  # it does move


def test_short_completions_get_no_boundaries():
    assert select_boundaries(torch.tensor([0.1, 5.0, 0.1, 0.2, 0.3]), min_segment_tokens=4) == []
    assert select_boundaries(torch.tensor([]), min_segment_tokens=1) == []
    assert select_boundaries(torch.tensor([1.0]), min_segment_tokens=1) == []


def test_bad_arguments_raise():
    ent = torch.ones(10)
    for kwargs in ({"max_segments": 0}, {"min_segment_tokens": 0}, {"quantile": 1.5}, {"jitter": -1}):
        with pytest.raises(ValueError):
            select_boundaries(ent, **kwargs)
    with pytest.raises(ValueError):
        select_boundaries(torch.ones(2, 5))


# --------------------------------------------------------------------------------------------
# stability: boundaries are a function of the trajectory, not of float noise


def realistic_entropies(generator: torch.Generator, n: int) -> torch.Tensor:
    """(n,) entropies like a trained policy's: mostly near-certain tokens, a few uncertain ones."""
    low = torch.exp(torch.randn(n, generator=generator) - 3.0)  # ~0.05 nats, log-normal
    high = torch.rand(n, generator=generator) * 2.0
    return torch.where(torch.rand(n, generator=generator) < 0.15, high, low)


def perturbed(entropies: torch.Tensor, generator: torch.Generator, size: float = 1e-6) -> torch.Tensor:
    """``entropies`` moved by float noise of about ``size``: relative for large values, absolute near 0."""
    noise = (torch.rand(entropies.shape, generator=generator, dtype=torch.float64) * 2 - 1) * size
    return (entropies.double() * (1 + noise) + noise * 1e-2).float()


def test_boundaries_do_not_move_under_entropy_noise():
    """1e-6 of noise (more than the last-bit differences between batch shapes or CPUs) moves no cut."""
    generator = torch.Generator().manual_seed(0)
    moved = 0
    for _ in range(300):
        n = int(torch.randint(16, 160, (1,), generator=generator))
        entropies = realistic_entropies(generator, n)
        kwargs = dict(max_segments=4, quantile=0.8, min_segment_tokens=4, protect_from=n - 6)
        reference = select_boundaries(entropies, **kwargs)
        assert reference, "the test needs cuts"
        moved += select_boundaries(perturbed(entropies, generator), **kwargs) != reference
    assert moved == 0


def test_near_uniform_entropies_tie_and_cut_at_the_earliest_legal_positions():
    """A random model's entropies are all within 1e-3 of log V: they tie, noise or not (the 1-vs-2-process case)."""
    generator = torch.Generator().manual_seed(1)
    entropies = 5.5605 + 2e-3 * torch.rand(60, generator=generator)
    kwargs = dict(max_segments=4, quantile=0.8, min_segment_tokens=2)
    assert select_boundaries(entropies, **kwargs) == [1, 3, 5]
    assert select_boundaries(perturbed(entropies, generator), **kwargs) == [1, 3, 5]
    # without the tolerance the same noise reorders the near-ties: the test above can fail
    raw = [
        select_boundaries(perturbed(entropies, generator, 1e-4), **kwargs, tolerance=0.0) for _ in range(5)
    ]
    assert len({tuple(cuts) for cuts in raw}) > 1


def test_tolerance_still_cuts_at_clear_entropy_spikes():
    entropies = spikes(40, {7: 1.00, 19: 1.50, 30: 0.90})
    assert select_boundaries(entropies, quantile=0.9, min_segment_tokens=3) == [7, 19, 30]
    # 1.000 and 1.005 tie (same 1% cell): the earlier token wins, whichever is larger by a hair
    entropies = spikes(40, {7: 1.005, 19: 1.000})
    assert entropies[7] > entropies[19]
    assert select_boundaries(entropies, max_segments=2, quantile=0.9, min_segment_tokens=3) == [7]
    entropies = spikes(40, {7: 1.000, 19: 1.005})
    assert select_boundaries(entropies, max_segments=2, quantile=0.9, min_segment_tokens=3) == [7]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=50), st.sampled_from([0.0, 0.01, 0.1]))
def test_entropy_levels_are_monotone(values, tolerance):
    entropies = torch.tensor(values, dtype=torch.float64)
    levels = entropy_levels(entropies, tolerance)
    order = torch.argsort(entropies)
    assert bool((levels[order][1:] >= levels[order][:-1]).all())
    if tolerance == 0:
        assert torch.equal(levels, entropies)


def test_entropy_levels_cells_and_floor():
    levels = entropy_levels(
        torch.tensor([0.0, 1e-9, ENTROPY_FLOOR / 2, 1.0, 1.005, 1.02, float("nan")]), 0.01
    )
    assert levels[0] == levels[1] == levels[2]  # below the floor: one cell
    assert levels[3] == levels[4] < levels[5]  # 1.000 and 1.005 share a 1% cell; 1.02 does not
    assert math.isnan(levels[6])
    assert DEFAULT_ENTROPY_TOLERANCE == 0.01
    with pytest.raises(ValueError, match="tolerance"):
        entropy_levels(torch.ones(3), -0.1)


@st.composite
def boundary_cases(draw):
    n = draw(st.integers(0, 60))
    entropies = draw(st.lists(st.integers(0, 6).map(lambda v: v / 2), min_size=n, max_size=n))
    max_segments = draw(st.integers(1, 6))
    quantile = draw(st.sampled_from([0.0, 0.3, 0.5, 0.8, 0.95, 1.0]))
    min_len = draw(st.integers(1, 8))
    protect_from = draw(st.none() | st.integers(0, max(n, 0)))
    snap = draw(st.none() | st.lists(st.integers(0, max(n - 1, 0)), max_size=12))
    jitter = draw(st.integers(0, 4))
    seed = draw(st.integers(0, 2**16))
    return n, entropies, max_segments, quantile, min_len, protect_from, snap, jitter, seed


@settings(max_examples=100, deadline=None)
@given(boundary_cases())
def test_boundaries_respect_every_constraint(case):
    n, entropies, max_segments, quantile, min_len, protect_from, snap, jitter, seed = case
    ent = torch.tensor(entropies, dtype=torch.float32)
    cuts = select_boundaries(
        ent, max_segments, quantile, min_len, protect_from, snap, jitter, torch.Generator().manual_seed(seed)
    )
    check_constraints(cuts, n, max_segments, min_len, protect_from)
    if jitter == 0 and snap is not None:
        assert set(cuts) <= set(snap)
    if jitter == 0 and snap is None and n:
        threshold = torch.quantile(ent.double(), quantile)
        assert all(float(ent[c]) >= float(threshold) for c in cuts)


# --------------------------------------------------------------------------------------------
# spans, answer start, segment index


def test_boundaries_from_spans():
    assert boundaries_from_spans([(0, 4), (4, 9), (9, 12)]) == [3, 8]
    assert boundaries_from_spans([(0, 5)]) == []
    assert boundaries_from_spans([]) == []


def test_spans_from_boundaries():
    assert spans_from_boundaries([3, 8], 12) == [(0, 4), (4, 9), (9, 12)]
    assert spans_from_boundaries([], 5) == [(0, 5)]
    assert spans_from_boundaries([], 0) == []


@given(st.integers(2, 40).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 2)))))
def test_spans_from_boundaries_inverts_boundaries_from_spans(case):
    n, cuts = case
    spans = spans_from_boundaries(sorted(cuts), n)
    assert spans[0][0] == 0 and spans[-1][1] == n and all(a < b for a, b in spans)
    assert all(prev[1] == nxt[0] for prev, nxt in zip(spans, spans[1:], strict=False))
    assert boundaries_from_spans(spans) == sorted(cuts)


def test_answer_marker_token_is_the_token_holding_the_markers_first_character():
    offsets = [(0, 3), (3, 5), (5, 9), (9, 11), (11, 11)]  # "abc", "d<", "answ", "er", EOS (empty)
    assert answer_marker_token("abcd<answer", offsets, "<answer>") is None
    assert answer_marker_token("abcd<answer>", [(0, 3), (3, 5), (5, 12)], "<answer>") == 1
    assert answer_marker_token("<answer><answer>", [(0, 8), (8, 16)], "<answer>") == 0  # the first one
    with pytest.raises(ValueError):
        answer_marker_token("x", [(0, 1)], "")


@pytest.mark.parametrize(
    "completion",
    [
        "<reasoning>\n3 plus 4 makes 7.\n</reasoning><answer>7</answer>",  # '><' merges the tags
        "<reasoning>\n3 plus 4 makes 7.\n</reasoning>\n<answer>\n7\n</answer>",  # '>\n'
        "<reasoning>\n3 plus 4 makes 7.\n</reasoning>\n\n<answer>7</answer>",
        "3 plus 4 makes 7. <answer>7</answer>",  # ' <'
        "<reasoning>\n3 plus 4 makes 7.\n</reasoning>\n<answer>7</answer>",
    ],
)
def test_the_answer_is_found_however_qwens_tokenizer_merges_the_tag(qwen_tokenizer, completion):
    """Searched as the ids of "<answer>" alone, the tag was missed in 4 of these 5 layouts (a review,
    2026-12-07), and VPS cut inside the model's own answer, scoring a gold answer it had already written."""
    from psgrpo.ps.segmentation import token_offsets

    ids = qwen_tokenizer(completion, add_special_tokens=False)["input_ids"]
    text, offsets = token_offsets(qwen_tokenizer, ids)
    token = answer_marker_token(text, offsets, "<answer>")
    start, end = offsets[token]
    assert start <= completion.index("<answer>") < end  # the token holding its "<"
    assert "<answer>" not in qwen_tokenizer.decode(ids[:token])


def test_segment_index_hand_example_and_padding():
    seg = segment_index_from_boundaries([[1, 3], [], [0]], lengths=[6, 3, 2], T=7)
    expected = torch.tensor(
        [
            [0, 0, 1, 1, 2, 2, -1],
            [0, 0, 0, -1, -1, -1, -1],
            [0, 1, -1, -1, -1, -1, -1],
        ]
    )
    assert seg.dtype == torch.long
    assert torch.equal(seg, expected)


def test_segment_index_rejects_bad_boundaries():
    with pytest.raises(ValueError):
        segment_index_from_boundaries([[3, 1]], [6], 6)  # not increasing
    with pytest.raises(ValueError):
        segment_index_from_boundaries([[5]], [6], 6)  # at the last token: empty last segment
    with pytest.raises(ValueError):
        segment_index_from_boundaries([[1]], [8], 6)  # longer than T


def test_segments_from_selected_boundaries_round_trip():
    ent = spikes(30, {5: 3.0, 12: 2.0, 20: 2.5})
    cuts = select_boundaries(ent, min_segment_tokens=4)
    seg = segment_index_from_boundaries([cuts], [30], 32)[0]
    assert seg[:30].tolist() == sorted(seg[:30].tolist()) and int(seg.max()) == len(cuts)
    assert [t for t in range(29) if seg[t + 1] != seg[t]] == cuts  # the probe follows token b
