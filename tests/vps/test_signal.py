"""Tests for psgrpo.vps.signal: the probe strategy chosen once in ``__init__``, truncated rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from psgrpo.vps.signal import VpsSignal, truncated_rows


def _signal(char_tokenizer, boundaries: str, probe: str) -> VpsSignal:
    config = SimpleNamespace(
        vps_boundaries=boundaries, vps_probe=probe, vps_answer_marker="<answer>", vps_snap_to_whitespace=False
    )
    return VpsSignal(config, char_tokenizer, accelerator=None, eos_token_ids=[0], temperature=1.0)


@pytest.mark.parametrize(
    ("boundaries", "probe", "strategy"),
    [
        ("entropy", "answer", "probe_answer_cached"),
        ("markers", "answer", "probe_answer_packed"),
        ("markers", "gold_suffix", "probe_gold_suffix"),
    ],
)
def test_the_probe_strategy_is_chosen_from_the_options(char_tokenizer, boundaries, probe, strategy):
    signal = _signal(char_tokenizer, boundaries, probe)
    assert signal.probe == getattr(signal, strategy)


def test_an_unsupported_combination_is_refused_when_the_signal_is_built(char_tokenizer):
    with pytest.raises(
        ValueError, match="vps_boundaries='entropy' cannot be combined with vps_probe='gold_suffix'"
    ):
        _signal(char_tokenizer, "entropy", "gold_suffix")


def test_truncated_rows_are_those_without_eos_and_the_empty_ones():
    eos = 9
    ids = torch.tensor([[4, 5, eos, 0], [4, 5, 6, 7], [0, 0, 0, 0], [eos, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0]])
    assert truncated_rows(ids, mask, [eos, 3]).tolist() == [False, True, True, False]
