"""Memory bank: best-entry rule, LRU bound, rescue planning, new-entry selection, correctness."""

from __future__ import annotations

import json

import pytest

from psgrpo.techniques.memory_bank import (
    BankEntry,
    MemoryBank,
    is_correct,
    plan_rescues,
    prompt_key,
    select_new_entries,
)


def _entry(reward=2.8, length=3, text="<answer>4</answer>"):
    return BankEntry(list(range(length)), [-0.5] * length, reward, text)


def test_entry_rank():
    assert _entry(2.8, 5).better_than(_entry(2.0, 2))  # higher reward wins even if longer
    assert _entry(2.8, 2).better_than(_entry(2.8, 5))  # tie → shorter
    assert not _entry(2.8, 5).better_than(_entry(2.8, 5))  # equal is not better
    assert _entry().better_than(None)
    with pytest.raises(ValueError, match="one log-prob per token"):
        BankEntry([1, 2], [-0.1], 1.0, "x")


def test_offer_keeps_best_and_evicts_least_recently_used():
    bank = MemoryBank(capacity=2)
    assert bank.offer("a", _entry(2.0))
    assert not bank.offer("a", _entry(1.0))  # worse: kept the old one
    assert bank.peek("a").reward == 2.0
    assert bank.offer("a", _entry(2.0, length=1))  # same reward, shorter
    bank.offer("b", _entry())
    bank.use("a")  # a is now the most recently used
    bank.offer("c", _entry())
    assert "b" not in bank and "a" in bank and "c" in bank and len(bank) == 2
    with pytest.raises(ValueError, match="memory_bank_size must be at least 1"):
        MemoryBank(0)


def test_state_round_trips_through_json():
    bank = MemoryBank(capacity=3)
    bank.offer("x", _entry(2.0, 2, "one"))
    bank.offer("y", _entry(2.8, 4, [{"role": "assistant", "content": "two"}]))
    restored = MemoryBank(capacity=3)
    restored.load_state_dict(json.loads(json.dumps(bank.state_dict())))
    assert restored.state_dict() == bank.state_dict()
    small = MemoryBank(capacity=1)
    small.load_state_dict(bank.state_dict())
    assert list(small.state_dict()["entries"][0][:1]) == ["y"]  # oldest dropped to fit


def test_plan_rescues_replaces_the_last_member_of_all_wrong_banked_groups():
    bank = MemoryBank(capacity=10)
    bank.offer("p1", _entry())
    bank.offer("p3", _entry())
    keys = ["p1"] * 3 + ["p2"] * 3 + ["p3"] * 3
    correct = [False, False, False, False, False, False, False, True, False]
    assert plan_rescues(keys, correct, 3, bank) == {2: "p1"}  # p2 not banked, p3 has a correct one
    with pytest.raises(ValueError, match="whole groups of 3"):
        plan_rescues(keys[:-1], correct[:-1], 3, bank)


def test_select_new_entries_best_per_prompt_that_beats_the_bank():
    bank = MemoryBank(capacity=10)
    bank.offer("b", BankEntry([1, 2], [-1.0, -1.0], 2.8, "banked"))
    keys = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    correct = [True, True, False, True, True, True, False, False, True]
    rewards = [2.0, 2.8, 0.0, 2.8, 2.8, 2.0, 0.0, 0.0, 2.8]
    lengths = [5, 9, 3, 2, 4, 1, 3, 3, 7]
    # a: row 1 (higher reward); b: nothing beats the banked (2.8, length 2); c: row 8, but it is excluded
    assert select_new_entries(keys, correct, rewards, lengths, bank, exclude={8}) == [1]
    lengths[3] = 1
    assert select_new_entries(keys, correct, rewards, lengths, bank) == [1, 3, 8]


def test_prompt_key_and_correctness():
    assert prompt_key("Q: 1+1?") == "Q: 1+1?"
    chat = [{"role": "user", "content": "Q"}]
    assert (
        prompt_key(chat) == json.dumps(chat, sort_keys=True) == prompt_key([{"content": "Q", "role": "user"}])
    )
    assert is_correct("<reasoning>x</reasoning><answer>12</answer>", "12")
    assert is_correct([{"role": "assistant", "content": "<answer>12</answer>"}], 12)
    assert not is_correct("<answer>12.1</answer>", "12")  # close is not correct
    assert not is_correct("no answer", "12")
