"""TreeSignal's segment ends (psgrpo/tree/signal.py): every S tokens, or as tree sampling cut them (line ends, entropy peaks)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from psgrpo.tree.signal import TreeSignal


def _signal(boundaries: str, sampled):
    config = SimpleNamespace(tree_boundaries=boundaries, tree_segment_tokens=4)
    return TreeSignal(config, None, lambda: torch.zeros(0, 1), torch.ones(1), lambda: sampled)


def test_tokens_recompute_the_ends_from_s_and_ignore_what_sampling_kept():
    assert _signal("tokens", [[1], [1]]).segment_ends([10, 3], [2, 2]) == [[4], [3]]
    assert _signal("tokens", None).segment_ends([10, 9], [2, 2, 2]) == [[4, 8], [4, 8]]


@pytest.mark.parametrize("boundaries", ["lines", "entropy"])
def test_cuts_made_while_sampling_use_the_sampled_ends(boundaries):
    assert _signal(boundaries, [[3, 7], [2, 2]]).segment_ends([10, 2], [2, 2, 2]) == [[3, 7], [2, 2]]
    assert _signal(boundaries, None).segment_ends([10], [4]) == [[]]  # evaluation: one level, no sampled tree


@pytest.mark.parametrize("boundaries", ["lines", "entropy"])
def test_sampled_cuts_without_a_sampled_tree_are_an_error_not_a_silent_fallback(boundaries):
    with pytest.raises(
        RuntimeError, match="needs the segment ends tree sampling recorded for these 2 completions"
    ):
        _signal(boundaries, None).segment_ends([10, 9], [2, 2])
    with pytest.raises(RuntimeError, match=r"\(got 3\)"):
        _signal(boundaries, [[1], [1], [1]]).segment_ends([10, 9], [2, 2])
