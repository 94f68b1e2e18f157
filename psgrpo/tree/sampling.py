"""Tree sampling: a group's G completions as the leaves of a tree whose shared prefixes are generated once.

For ``--tree_branching b_0 … b_{D−1}`` (product G) and ``--tree_segment_tokens S``, each prompt gets
b_0 roots of at most S tokens; every node of level k < D − 1 then gets b_{k+1} children, each
continuing prompt + the node's tokens for at most S more (the last level: up to
``max_completion_length`` in all, or EOS). A node that ended (EOS, or fewer than S tokens: another
stop rule) is not continued: its children are copies of it. The leaves, in depth-first order
(:mod:`psgrpo.tree.values`), are returned to TRL as ordinary completions: token lists cut after
the first EOS, exactly what ``GRPOTrainer._generate_single_turn`` returns, so TRL pads them,
masks them, scores them and computes their log-probabilities as it does its own.

Each level is one call of TRL's own ``_generate_single_turn`` (the transformers path: its
unwrapping, precision, generation config and EOS handling) on prompts + prefixes, with
``max_new_tokens`` set for the level. Tokens generated per group, against the G·(mean leaf
length) independent sampling would generate, are logged as ``tree/tokens_generated`` and
``tree/token_ratio``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from psgrpo.distributed import max_over_processes


@dataclass
class Node:
    """A node of a prompt's tree: its prompt's row in the batch, its completion tokens so far, and whether it ended."""

    prompt_row: int
    tokens: list[int]
    ended: bool = False


@contextmanager
def max_new_tokens(trainer: Any, n: int) -> Iterator[None]:
    """TRL's generation config (and the kwargs it writes into the model's) limited to ``n`` new tokens."""
    config, kwargs = trainer.generation_config, trainer.generation_kwargs
    previous = config.max_new_tokens, kwargs.get("max_new_tokens")
    config.max_new_tokens, kwargs["max_new_tokens"] = n, n
    try:
        yield
    finally:
        config.max_new_tokens, kwargs["max_new_tokens"] = previous


def expand(nodes: list[Node], factor: int) -> list[Node]:
    """Each node's ``factor`` children in order: copies of its tokens (continued later unless it ended)."""
    return [Node(n.prompt_row, list(n.tokens), n.ended) for n in nodes for _ in range(factor)]


class TreeSamplingMixin:
    """Overrides ``GRPOTrainer._generate_single_turn`` with tree sampling when ``method='tree'`` in training.

    Mixed into :class:`~psgrpo.trainer.ProcessGRPOTrainer` before ``GRPOTrainer``. Evaluation, other
    methods and a one-level tree ([G]: G independent samples) use TRL's sampling unchanged.
    """

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        branching = list(self.args.tree_branching)
        if (
            self.args.method != "tree"
            or not self.model.training
            or len(branching) == 1
            or math.prod(branching) != num_generations
        ):
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        if images is not None or multimodal_fields:
            raise ValueError("method='tree' samples text prompts only; images are not supported yet")
        leaves, generated = self._sample_tree(prompt_ids, branching)
        self._log_tree_tokens(generated, sum(len(leaf) for leaf in leaves), len(leaves) // num_generations)
        return leaves, None

    def _sample_tree(self, prompt_ids: list[list[int]], branching: list[int]) -> tuple[list[list[int]], int]:
        """The leaves (B token lists, depth-first per group) and the number of tokens generated for them."""
        group = math.prod(branching)
        if len(prompt_ids) % group:
            raise ValueError(
                f"tree sampling got {len(prompt_ids)} rows, not whole groups of {group}: each process's "
                "generation batch must hold whole groups (per_device_train_batch_size × steps_per_generation)"
            )
        firsts = list(range(0, len(prompt_ids), group))
        for first in firsts:
            if any(prompt_ids[row] != prompt_ids[first] for row in range(first, first + group)):
                raise ValueError(
                    f"tree sampling needs the {group} rows of a group to share a prompt (row {first})"
                )
        segment, limit = self.args.tree_segment_tokens, self.max_completion_length
        nodes = [Node(first, []) for first in firsts]  # one (empty) node per prompt: the tree's top
        generated = 0
        for level, factor in enumerate(branching):
            nodes = expand(nodes, factor)
            budget = segment if level < len(branching) - 1 else limit - segment * level
            open_nodes = [n for n in nodes if not n.ended]
            generated += self._continue(open_nodes, prompt_ids, budget)
        return [n.tokens for n in nodes], generated

    def _continue(self, nodes: list[Node], prompt_ids: list[list[int]], budget: int) -> int:
        """Extend each node by up to ``budget`` sampled tokens (one batched TRL generation); returns the tokens added.

        Every process calls TRL's generation the same number of times (a collective under ZeRO-3 / FSDP):
        one with no open node generates for a stand-in row and drops it.
        """
        if max_over_processes(int(bool(nodes)), self.accelerator) == 0:
            return 0
        prompts = [prompt_ids[n.prompt_row] + n.tokens for n in nodes] or [prompt_ids[0]]
        with max_new_tokens(self, budget):
            segments, _ = super()._generate_single_turn(prompts, None, {}, len(prompts))
        added = 0
        for node, tokens in zip(nodes, segments, strict=False):  # no node: the stand-in row is dropped
            node.tokens += tokens
            node.ended = len(tokens) < budget or (bool(tokens) and tokens[-1] in self.eos_token_ids)
            added += len(tokens)
        return added

    def _log_tree_tokens(self, generated: int, leaf_tokens: int, groups: int) -> None:
        """``tree/tokens_generated`` per group and ``tree/token_ratio`` = generated / Σ leaf lengths (all processes)."""
        stats = torch.tensor(
            [[generated, leaf_tokens, groups]], dtype=torch.float64, device=self.accelerator.device
        )
        generated_all, leaves_all, groups_all = self.accelerator.gather(stats).sum(0).tolist()
        metrics = self._metrics["train"]
        metrics["tree/tokens_generated"].append(generated_all / max(groups_all, 1.0))
        metrics["tree/token_ratio"].append(generated_all / max(leaves_all, 1.0))
