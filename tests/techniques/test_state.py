"""Technique state in checkpoint directories."""

from __future__ import annotations

import json
import logging

import torch

from psgrpo.techniques.memory_bank import BankEntry, MemoryBank
from psgrpo.techniques.reward_norm import RunningRewardStats
from psgrpo.techniques.state import STATE_FILE, load_technique_state, save_technique_state


def test_save_and_load(tmp_path, caplog):
    bank = MemoryBank(4)
    bank.offer("q", BankEntry([5, 1], [-0.2, -0.1], 2.8, "<answer>3</answer>"))
    stats = RunningRewardStats(0.9)
    stats.update(torch.tensor([0.0, 2.0]))
    save_technique_state({"memory_bank": bank, "reward_norm": stats}, tmp_path / "checkpoint-7")
    saved = json.loads((tmp_path / "checkpoint-7" / STATE_FILE).read_text())
    assert set(saved) == {"memory_bank", "reward_norm"}

    new_bank, new_stats = MemoryBank(4), RunningRewardStats(0.9)
    load_technique_state({"memory_bank": new_bank, "reward_norm": new_stats}, tmp_path / "checkpoint-7")
    assert new_bank.state_dict() == bank.state_dict() and new_stats == stats

    with caplog.at_level(logging.WARNING):
        load_technique_state({"memory_bank": MemoryBank(4)}, tmp_path / "checkpoint-8")
    assert "no saved memory_bank state" in caplog.text
