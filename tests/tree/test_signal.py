"""TreeSignal's segment ends (psgrpo/tree/signal.py): every S tokens, or as tree sampling cut them at line ends."""

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


def test_lines_use_the_sampled_ends():
    assert _signal("lines", [[3, 7], [2, 2]]).segment_ends([10, 2], [2, 2, 2]) == [[3, 7], [2, 2]]
    assert _signal("lines", None).segment_ends([10], [4]) == [[]]  # evaluation: one level, no sampled tree


def test_lines_without_a_sampled_tree_is_an_error_not_a_silent_fallback():
    with pytest.raises(
        RuntimeError, match="needs the segment ends tree sampling recorded for these 2 completions"
    ):
        _signal("lines", None).segment_ends([10, 9], [2, 2])
    with pytest.raises(RuntimeError, match=r"\(got 3\)"):
        _signal("lines", [[1], [1], [1]]).segment_ends([10, 9], [2, 2])
