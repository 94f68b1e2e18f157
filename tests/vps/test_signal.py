"""Tests for psgrpo.vps.signal: the probe strategy chosen once in ``__init__``, truncated rows."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from psgrpo.ps.segmentation import get_segmenter
from psgrpo.tiny.model import build_tiny_model
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


def test_gold_suffix_probes_run_on_the_rollouts_device_not_the_parameters(char_tokenizer):
    """With CPU-offloaded parameters (FSDP / ZeRO offload) the parameters say CPU while the rollout is on
    the GPU; here the first parameter says ``meta`` and the rollout is on the CPU."""
    config = SimpleNamespace(
        vps_boundaries="markers",
        vps_probe="gold_suffix",
        vps_answer_marker="<answer>",
        vps_snap_to_whitespace=False,
        vps_solution_column="solution",
        vps_probe_chunk_size=None,
        vps_max_segments=9,
    )
    signal = VpsSignal(
        config,
        char_tokenizer,
        accelerator=SimpleNamespace(num_processes=1),
        eos_token_ids=[char_tokenizer.eos_token_id],
        temperature=1.0,
        segmenter=get_segmenter("newline"),
    )
    encode = lambda text: char_tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompt = encode("Q: 2 + 3, times 2?\n")
    ids = [encode("2 + 3 = 5\n5 * 2 = 10\n<answer>10</answer>")]
    output = {
        "prompt_ids": torch.tensor([prompt]),
        "prompt_mask": torch.ones(1, len(prompt), dtype=torch.long),
    }
    inputs = [{"solution": "2 + 3 = 5\n5 * 2 = 10\n<answer>10</answer>"}]
    model = build_tiny_model(
        char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64
    ).eval()
    model.register_parameter("offloaded", torch.nn.Parameter(torch.empty(1, device="meta")))
    assert next(model.parameters()).device.type == "meta"
    probed = signal.probe_gold_suffix(model, output, inputs, ids, step=0)
    assert probed.boundaries == [[9, 20]]  # the ends of the two newline steps
    assert probed.probes.log_confidence.device.type == "cpu"
    assert torch.isfinite(probed.probes.log_confidence).all() and probed.probes.log_confidence.shape == (1, 3)
