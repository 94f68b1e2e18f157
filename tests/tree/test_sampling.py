"""Tree sampling (psgrpo/tree/sampling.py) against a scripted generator: topology, budgets, copies, token counts."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.credit import StepRecord
from psgrpo.methods import get_method
from psgrpo.tree.sampling import TreeSamplingMixin, entropy_cut

EOS = 99


class ScriptedGeneration:
    """Stands in for ``GRPOTrainer._generate_single_turn``: each row gets fresh, unique tokens up to the budget.

    ``stop`` maps (call number, row) to a row that ends early: two tokens then EOS. With ``use_vllm`` it plays
    TRL's vLLM path: the budget is the vLLM generation's ``max_completion_length`` (the ``max_tokens`` it
    sends) and every token comes with a log-prob (:func:`logprob`).
    """

    use_vllm = False

    def __init__(self, stop: set[tuple[int, int]] = frozenset()) -> None:
        self.stop, self.calls, self.next_token, self.num_generations_seen = stop, [], 100, []

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        if self.use_vllm:
            budget = self.vllm_generation.max_completion_length
        else:
            budget = self.generation_config.max_new_tokens
        call = len(self.calls)
        self.calls.append(([list(p) for p in prompt_ids], budget))
        self.num_generations_seen.append(num_generations)
        completions = []
        for row in range(len(prompt_ids)):
            length = 2 if (call, row) in self.stop else budget
            tokens = list(range(self.next_token, self.next_token + length))
            self.next_token += length
            completions.append([*tokens, EOS] if (call, row) in self.stop else tokens)
        return completions, ([[logprob(t) for t in c] for c in completions] if self.use_vllm else None)


def logprob(token: int) -> float:
    """The scripted vLLM's sampling log-prob of a token."""
    return -token / 1000


class NewlineEveryFourth:
    """A tokenizer stand-in for ``tree_boundaries='lines'``: token ids divisible by 4 decode to a newline."""

    @staticmethod
    def decode(ids: list[int]) -> str:
        return "".join("\n" if i % 4 == 0 else "x" for i in ids)


class Sampler(TreeSamplingMixin, ScriptedGeneration):
    def __init__(
        self,
        branching,
        segment,
        limit=10,
        training=True,
        method="tree",
        stop=frozenset(),
        boundaries="tokens",
    ):
        super().__init__(stop)
        self.args = SimpleNamespace(
            method=method, tree_branching=branching, tree_segment_tokens=segment, tree_boundaries=boundaries
        )
        self.method_spec = get_method(method)
        self._tokenizer = NewlineEveryFourth()
        self.model = SimpleNamespace(training=training)
        self.max_completion_length = limit
        self.eos_token_ids = [EOS]
        self.generation_config = SimpleNamespace(max_new_tokens=limit)
        self.generation_kwargs = {"max_new_tokens": limit}
        self.accelerator = SimpleNamespace(
            num_processes=1, device=torch.device("cpu"), gather=lambda t: t, process_index=0
        )
        self._metrics = defaultdict(lambda: defaultdict(list))
        self.step_record = StepRecord(inputs=[])

    def sample(self, prompts: list[list[int]], num_generations: int):
        return self._generate_single_turn(prompts, None, {}, num_generations)


PROMPT_A = [1, 2, 3]  # e.g. "Q: 7 + 5 = ?" tokenised
PROMPT_B = [4, 5]


def test_leaves_share_their_ancestors_tokens_and_each_level_is_one_call():
    sampler = Sampler([2, 2], segment=3, limit=10)
    leaves, logprobs = sampler.sample([PROMPT_A] * 4 + [PROMPT_B] * 4, 4)
    assert logprobs is None and len(leaves) == 8
    for group in (leaves[:4], leaves[4:]):
        assert group[0][:3] == group[1][:3] and group[2][:3] == group[3][:3]  # siblings share their root
        assert group[0][:3] != group[2][:3]  # two roots
        assert len({tuple(leaf[3:]) for leaf in group}) == 4  # every leaf continues on its own
        assert all(len(leaf) == 10 for leaf in group)  # 3 + the last level's 10 − 3
    (roots, root_budget), (continued, last_budget) = sampler.calls
    assert (root_budget, last_budget) == (3, 7)
    assert roots == [PROMPT_A, PROMPT_A, PROMPT_B, PROMPT_B]
    assert (
        continued
        == [PROMPT_A + leaves[0][:3]] * 2
        + [PROMPT_A + leaves[2][:3]] * 2
        + [PROMPT_B + leaves[4][:3]] * 2
        + [PROMPT_B + leaves[6][:3]] * 2
    )
    # generated per group: 2 roots × 3 + 4 continuations × 7 = 34, against 4 leaves × 10 = 40
    assert sampler._metrics["train"]["tree/tokens_generated"] == [34.0]
    assert sampler._metrics["train"]["tree/token_ratio"] == [pytest.approx(34 / 40)]
    # the generation limit is TRL's again afterwards
    assert (
        sampler.generation_config.max_new_tokens == 10 and sampler.generation_kwargs["max_new_tokens"] == 10
    )


def test_a_node_that_ended_is_copied_not_continued():
    """Root 1 of the first call stops with EOS: its two leaves are that root, and only 2 rows continue."""
    sampler = Sampler([2, 2], segment=3, limit=10, stop={(0, 1)})
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    assert leaves[2] == leaves[3] and leaves[2][-1] == EOS and len(leaves[2]) == 3
    assert len(sampler.calls[1][0]) == 2  # only the open root's children are generated
    assert sampler._metrics["train"]["tree/tokens_generated"] == [3 + 3 + 2 * 7]


def test_three_levels_depth_first():
    sampler = Sampler([2, 2, 2], segment=2, limit=7)
    leaves, _ = sampler.sample([PROMPT_A] * 8, 8)
    for j in range(8):
        for k in range(8):
            shared = 0 if j // 4 != k // 4 else 2 if j // 2 != k // 2 else 4 if j != k else 7
            assert leaves[j][:shared] == leaves[k][:shared]
            if shared < 7:
                assert leaves[j][shared : shared + 1] != leaves[k][shared : shared + 1]
    assert [budget for _, budget in sampler.calls] == [2, 2, 3]


def test_every_s_tokens_the_ends_are_recorded():
    sampler = Sampler([2, 2, 2], segment=4, limit=12, stop={(1, 3)})
    sampler.sample([PROMPT_A] * 8, 8)
    ends = sampler.step_record.segment_ends
    assert ends[:6] == [[4, 8]] * 6 and ends[6:] == [[4, 7]] * 2  # level-1 node 3 ended after 2 tokens + EOS


def test_lines_cut_each_inner_node_back_to_its_last_line_end():
    """S = 6 new tokens per inner node, cut after the last id divisible by 4 among them; the rest is discarded but
    counted; the last level gets each leaf's own budget (limit − its prefix), from one call."""
    sampler = Sampler([2, 2], segment=6, limit=12, boundaries="lines")
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    (_, root_budget), (continued, last_budget) = sampler.calls
    assert root_budget == 6
    # roots generated 100..105 and 106..111: the last newline ids are 104 and 108
    assert leaves[0][:5] == leaves[1][:5] == [100, 101, 102, 103, 104]
    assert leaves[2][:3] == leaves[3][:3] == [106, 107, 108]
    assert continued[0] == PROMPT_A + [100, 101, 102, 103, 104] and continued[2] == PROMPT_A + [106, 107, 108]
    assert last_budget == 12 - 3  # the shortest prefix sets the call's budget
    assert [len(leaf) for leaf in leaves] == [12, 12, 12, 12]  # each leaf cut to its own budget
    assert sampler.step_record.segment_ends == [[5], [5], [3], [3]]
    assert sampler._metrics["train"]["tree/tokens_generated"] == [12 + 4 * 9]  # discarded tokens counted


def test_lines_keep_a_segment_with_no_line_end():
    sampler = Sampler([2, 2], segment=3, limit=8, boundaries="lines")
    sampler.next_token = 101
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    assert leaves[0][:3] == [101, 102, 103]  # no id divisible by 4: the S tokens stay
    assert leaves[2][:2] == [104, 121]  # 104, 105, 106 cut after 104; its children continue from there
    assert [len(leaf) for leaf in leaves] == [8] * 4
    assert sampler.step_record.segment_ends == [[3], [3], [1], [1]]


@given(st.lists(st.floats(0.0, 10.0), max_size=40))
def test_entropy_cut_keeps_at_least_half_and_forks_at_the_highest_entropy(entropies):
    keep = entropy_cut(entropies)
    size = len(entropies)
    if size < 2:
        assert keep == size
        return
    assert (size + 1) // 2 <= keep <= size - 1
    window = entropies[(size + 1) // 2 :]
    assert entropies[keep] == max(window) and entropies.index(max(window), (size + 1) // 2) == keep


class EntropySampler(Sampler):
    """Scripted entropies: token id t is sampled at entropy ``t % 7`` (so the cut is known in advance)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, boundaries="entropy", **kwargs)
        self.measured = []

    def _segment_entropies(self, contexts, segments):
        self.measured.append(([list(c) for c in contexts], [list(t) for t in segments]))
        return [[float(t % 7) for t in segment] for segment in segments]


def test_entropy_cuts_each_inner_node_before_its_highest_entropy_token():
    """S = 6: roots 100..105 and 106..111; in the second half (positions 3..5) the entropies are 103 % 7 = 5,
    104 % 7 = 6, 105 % 7 = 0 and 109 % 7 = 4, 110 % 7 = 5, 111 % 7 = 6: cut before 104 and before 111."""
    sampler = EntropySampler([2, 2], segment=6, limit=12)
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    assert leaves[0][:4] == leaves[1][:4] == [100, 101, 102, 103] and leaves[0][4] != 104
    assert leaves[2][:5] == leaves[3][:5] == [106, 107, 108, 109, 110] and leaves[2][5] != 111
    assert sampler.step_record.segment_ends == [[4], [4], [5], [5]]
    # one measurement, of the inner level only, with each root's prompt as context
    assert sampler.measured == [([PROMPT_A, PROMPT_A], [list(range(100, 106)), list(range(106, 112))])]
    assert [len(leaf) for leaf in leaves] == [12] * 4
    assert sampler._metrics["train"]["tree/tokens_generated"] == [12 + 4 * 8]  # discarded tokens counted


def test_entropy_leaves_an_ended_node_uncut_and_still_measures_once():
    """Root 1 stops with EOS after two tokens: it is not cut and not measured; the open root is."""
    sampler = EntropySampler([2, 2], segment=6, limit=12, stop={(0, 1)})
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    assert leaves[2] == leaves[3] == [106, 107, EOS]
    assert [segments for _, segments in sampler.measured] == [[list(range(100, 106))]]
    assert sampler.step_record.segment_ends[2:] == [[3], [3]]


@pytest.mark.parametrize(
    "sampler",
    [
        Sampler([4], segment=None),  # one level: G independent samples
        Sampler([2, 2], segment=3, training=False),  # evaluation
        Sampler([2, 2], segment=3, method="grpo"),
    ],
    ids=["one-level", "eval", "grpo"],
)
def test_trls_own_sampling_where_there_is_no_tree(sampler):
    leaves, _ = sampler.sample([PROMPT_A] * 4, 4)
    assert sampler.calls == [([PROMPT_A] * 4, 10)] and all(len(leaf) == 10 for leaf in leaves)
    assert "tree/token_ratio" not in sampler._metrics["train"]


def test_a_group_must_be_whole_and_share_one_prompt():
    with pytest.raises(ValueError, match="not whole groups of 4"):
        Sampler([2, 2], segment=3).sample([PROMPT_A] * 6, 4)
    with pytest.raises(ValueError, match="rows of a group to share a prompt"):
        Sampler([2, 2], segment=3).sample([PROMPT_A] * 3 + [PROMPT_B], 4)


class ScriptedVllm:
    """Stands in for TRL's ``VLLMGeneration``: ``max_completion_length`` is the ``max_tokens`` it would send."""

    def __init__(self, limit: int) -> None:
        self.max_completion_length = limit


def other_process_has(sampler: Sampler, rows: int) -> None:
    """A second process whose calls have ``rows`` open rows (what ``max_over_processes`` gathers)."""
    sampler.accelerator.num_processes = 2
    sampler.accelerator.gather = lambda t: (
        torch.cat([t, torch.full_like(t, rows)]) if t.dtype == torch.long else t
    )


def vllm_sampler(*args, **kwargs) -> Sampler:
    sampler = Sampler(*args, **kwargs)
    sampler.use_vllm = True
    sampler.vllm_generation = ScriptedVllm(sampler.max_completion_length)
    del sampler.generation_config, sampler.generation_kwargs  # TRL builds neither on its vLLM path
    return sampler


def test_vllm_path_sets_max_tokens_per_level_and_joins_each_leafs_log_probs():
    sampler = vllm_sampler([2, 2], segment=3, limit=10, stop={(1, 0)})
    leaves, logprobs = sampler.sample([PROMPT_A] * 4, 4)
    assert [budget for _, budget in sampler.calls] == [3, 7]  # the vLLM limit, per level
    assert sampler.num_generations_seen == [
        1,
        1,
    ]  # every row its own prompt (the server samples n per prompt)
    assert logprobs == [[logprob(t) for t in leaf] for leaf in leaves]  # segments joined, cut with the tokens
    assert leaves[0][-1] == EOS and len(leaves[0]) == 6 and all(len(leaf) == 10 for leaf in leaves[1:])
    assert sampler.vllm_generation.max_completion_length == 10  # TRL's limit again afterwards


def test_vllm_path_sends_as_many_rows_as_the_busiest_process():
    """TRL's vLLM generation hands each process an equal share of the gathered rows: stand-ins fill the gap."""
    sampler = vllm_sampler([2, 2], segment=3, limit=10)
    other_process_has(sampler, 6)
    leaves, logprobs = sampler.sample([PROMPT_A] * 4, 4)
    assert [len(prompts) for prompts, _ in sampler.calls] == [6, 6]
    assert [budget for _, budget in sampler.calls] == [6, 7]  # the other process's budget is larger
    assert [len(leaf) for leaf in leaves] == [10] * 4  # stand-ins dropped, each node cut to its own budget
    assert leaves[0][:3] == leaves[1][:3] and logprobs == [[logprob(t) for t in leaf] for leaf in leaves]


def test_the_transformers_path_returns_no_log_probs_and_pads_no_rows():
    sampler = Sampler([2, 2], segment=3, limit=10)
    other_process_has(sampler, 6)
    leaves, logprobs = sampler.sample([PROMPT_A] * 4, 4)
    assert logprobs is None and [len(prompts) for prompts, _ in sampler.calls] == [2, 4]
