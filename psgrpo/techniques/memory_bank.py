"""Memory bank of good trajectories: replay a prompt's best correct completion into an all-wrong group.

When every completion of a group is wrong, all rewards are (nearly) equal and GRPO learns nothing
from that prompt. The bank remembers, per prompt, the best correct completion seen so far (highest
summed reward; ties → shortest) together with its *behaviour* log-probabilities — the per-token
log-probs of the policy that sampled it. When a later group of that prompt has no correct
completion, its last member is replaced by the banked one before rewards are computed, so the group
gets a real baseline: the banked completion a positive advantage, the wrong ones negative ones.

The banked completion is off-policy. Its stored behaviour log-probs become its "old" log-probs in
TRL's clipped objective, so the ratio π_θ(o_t) / π_behaviour(o_t) in
``min(ratio · A, clip(ratio, 1 − ε, 1 + ε) · A)`` is the true per-token importance ratio, and PPO
clipping bounds how far a stale trajectory can push the policy (see docs/techniques.md).

The bank is an LRU map keyed by the prompt (its text, or its JSON for chat prompts), bounded to
``capacity`` entries; every rank holds an identical copy (all decisions use gathered data) and the
main process saves it in checkpoints (:mod:`psgrpo.techniques.state`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from psgrpo.rewards.functions import completion_text, extract_answer, grade_answer


def rank(reward: float, length: int) -> tuple[float, int]:
    """Sort key of a completion (larger is better): higher reward first, then shorter."""
    return (reward, -length)


@dataclass
class BankEntry:
    """One remembered completion.

    Attributes:
        completion_ids: its token ids (L,), up to and including EOS.
        logps: behaviour log-probabilities of those tokens (L,), at the sampling temperature.
        reward: its summed (weighted) outcome reward when it was sampled.
        completion: what TRL's reward functions receive: the decoded text, or a message list.
    """

    completion_ids: list[int]
    logps: list[float]
    reward: float
    completion: Any

    def __post_init__(self) -> None:
        if len(self.completion_ids) != len(self.logps):
            raise ValueError(
                f"a bank entry needs one log-prob per token: {len(self.completion_ids)} ids, {len(self.logps)} logps"
            )

    @property
    def rank(self) -> tuple[float, int]:
        return rank(self.reward, len(self.completion_ids))

    def better_than(self, other: BankEntry | None) -> bool:
        """Strictly higher reward, or the same reward and strictly shorter."""
        return other is None or self.rank > other.rank


class MemoryBank:
    """Best correct completion per prompt key, least-recently-used entries evicted beyond ``capacity``."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"memory_bank_size must be at least 1, got {capacity}")
        self.capacity = capacity
        self._entries: OrderedDict[str, BankEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def peek(self, key: str) -> BankEntry | None:
        """The entry for ``key`` without marking it used."""
        return self._entries.get(key)

    def use(self, key: str) -> BankEntry | None:
        """The entry for ``key``, marked most recently used (None when absent)."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def offer(self, key: str, entry: BankEntry) -> bool:
        """Store ``entry`` if it beats the current one for ``key``; evict the LRU entry when full.

        Returns True when stored. A stored or kept entry becomes the most recently used.
        """
        stored = entry.better_than(self._entries.get(key))
        if stored:
            self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return stored

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state; entries in LRU order (oldest first)."""
        return {"capacity": self.capacity, "entries": [[k, asdict(e)] for k, e in self._entries.items()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace the contents with a :meth:`state_dict` (the configured capacity wins)."""
        self._entries = OrderedDict((key, BankEntry(**entry)) for key, entry in state["entries"])
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def prompt_key(prompt: str | list[dict[str, Any]]) -> str:
    """Bank key of a prompt: the text itself, or a canonical JSON of a chat message list."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def plan_rescues(
    keys: Sequence[str], correct: Sequence[bool], num_generations: int, bank: MemoryBank
) -> dict[int, str]:
    """Rows (of the whole generation batch) to replace by a banked completion: ``{row: key}``.

    Rows come in groups of ``num_generations`` consecutive copies of one prompt. A group with no
    correct completion whose prompt is in the bank gets its last row replaced; the entry is marked used.
    """
    if len(keys) != len(correct) or len(keys) % num_generations:
        raise ValueError(
            f"need one key and one correctness flag per row and whole groups of {num_generations}; got "
            f"{len(keys)} keys, {len(correct)} flags"
        )
    rescues = {}
    for start in range(0, len(keys), num_generations):
        key = keys[start]
        if not any(correct[start : start + num_generations]) and bank.use(key) is not None:
            rescues[start + num_generations - 1] = key
    return rescues


def select_new_entries(
    keys: Sequence[str],
    correct: Sequence[bool],
    rewards: Sequence[float],
    lengths: Sequence[int],
    bank: MemoryBank,
    exclude: set[int] | frozenset[int] = frozenset(),
) -> list[int]:
    """Rows whose completion should enter the bank: per prompt, the best correct row that beats the bank.

    Best = highest reward, then shortest, then first. Rows in ``exclude`` (banked replays) never enter.
    """
    best: dict[str, int] = {}
    for row, key in enumerate(keys):
        if not correct[row] or row in exclude:
            continue
        current = best.get(key)
        if current is None or rank(rewards[row], lengths[row]) > rank(rewards[current], lengths[current]):
            best[key] = row
    chosen = [
        row
        for key, row in best.items()
        if (existing := bank.peek(key)) is None or rank(rewards[row], lengths[row]) > existing.rank
    ]
    return sorted(chosen)


def is_correct(completion: Any, gold: Any) -> bool:
    """True when the completion's extracted answer equals the gold answer exactly (not merely close)."""
    return grade_answer(extract_answer(completion_text(completion)), str(gold)) == "exact"
