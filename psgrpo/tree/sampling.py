"""Tree sampling: a group's G completions as the leaves of a tree whose shared prefixes are generated once.

For ``--tree_branching b_0 … b_{D−1}`` (product G) and ``--tree_segment_tokens S``, each prompt gets
b_0 roots of at most S tokens; every node of level k < D − 1 then gets b_{k+1} children, each
continuing prompt + the node's tokens for at most S more (the last level: up to
``max_completion_length`` in all, or EOS). With ``--tree_boundaries lines`` each inner node is cut
back to the last line end within its S new tokens (the rest is discarded), so branch points fall
between reasoning steps; with ``entropy`` it is cut back to just before its highest-entropy token in
the second half of the S (:func:`entropy_cut`; the entropies from one forward pass of the policy per
level), so the children fork where the policy is least sure, as TreeRL forks. A node that ended
(EOS, or fewer tokens than asked: another stop rule) is not continued: its children are copies of
it. Each leaf's inner segment ends go into the batch's record (``step_record.segment_ends``) for the ``tree`` signal. The
leaves, in depth-first order (:mod:`psgrpo.tree.values`), are returned to TRL as ordinary
completions: token lists cut after the first EOS, exactly what ``GRPOTrainer._generate_single_turn``
returns, so TRL pads them, masks them, scores them and computes their log-probabilities as it does
its own.

Each level is one call of TRL's own ``_generate_single_turn`` on prompts + prefixes, each row its
own prompt, with the level's token limit set for the call: on the transformers path (its unwrapping,
precision, generation config and EOS handling) through ``max_new_tokens``; on the vLLM path
(``use_vllm``, server or colocate) through the ``max_tokens`` TRL's vLLM generation sends, every
process sending as many rows (stand-ins fill the difference, as TRL slices vLLM's output by equal
shares), and each leaf's sampling log-probabilities are its segments' joined, for TRL's vLLM
importance-sampling correction. The vLLM path is exercised here against a scripted stand-in for
TRL's vLLM generation only; it has not run on vLLM itself (a CUDA machine: docs/tree.md). Tokens
generated per group, against the G·(mean leaf length) independent sampling would generate, are
logged as ``tree/tokens_generated`` and ``tree/token_ratio``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from trl.trainer.utils import pad

from psgrpo.distributed import max_over_processes


@dataclass
class Node:
    """A node of a prompt's tree: its prompt's row in the batch, its completion tokens so far, and whether it ended."""

    prompt_row: int
    tokens: list[int]
    ended: bool = False
    ends: list[int] = field(default_factory=list)  # len(tokens) after each inner level
    logprobs: list[float] | None = field(default_factory=list)  # sampling log-probs (vLLM), None without


def entropy_cut(entropies: Sequence[float]) -> int:
    """Where to cut a segment of S = ``len(entropies)`` new tokens: before its highest-entropy token among
    positions ⌈S/2⌉ … S − 1, so that a segment keeps at least half its tokens (the first of equal maxima).

    Args:
        entropies: (S,) the sampling distribution's entropy at each new token, in nats (token i's
            distribution, given the context and tokens 0 … i − 1).

    Returns:
        The number of tokens to keep, in [⌈S/2⌉, S − 1]; S (no cut) when S < 2.
    """
    size = len(entropies)
    if size < 2:
        return size
    window = range((size + 1) // 2, size)
    return max(window, key=lambda i: (entropies[i], -i))


@contextmanager
def max_new_tokens(trainer: Any, n: int) -> Iterator[None]:
    """TRL's generation config (and the kwargs it writes into the model's) limited to ``n`` new tokens, or with
    ``use_vllm`` the ``max_tokens`` TRL's vLLM generation sends (its ``max_completion_length``): TRL builds no
    generation config on its vLLM path."""
    if getattr(trainer, "use_vllm", False):
        vllm = trainer.vllm_generation
        previous_vllm = vllm.max_completion_length
        vllm.max_completion_length = n
        try:
            yield
        finally:
            vllm.max_completion_length = previous_vllm
        return
    config, kwargs = trainer.generation_config, trainer.generation_kwargs
    previous = config.max_new_tokens, kwargs.get("max_new_tokens")
    config.max_new_tokens, kwargs["max_new_tokens"] = n, n
    try:
        yield
    finally:
        config.max_new_tokens, kwargs["max_new_tokens"] = previous


def expand(nodes: list[Node], factor: int) -> list[Node]:
    """Each node's ``factor`` children in order: copies of its tokens (continued later unless it ended)."""
    return [
        Node(
            n.prompt_row,
            list(n.tokens),
            n.ended,
            list(n.ends),
            None if n.logprobs is None else list(n.logprobs),
        )
        for n in nodes
        for _ in range(factor)
    ]


class TreeSamplingMixin:
    """Overrides ``GRPOTrainer._generate_single_turn`` with tree sampling in training, for a method whose spec
    says ``rollout="tree"`` (``method='tree'``).

    Mixed into :class:`~psgrpo.trainer.ProcessGRPOTrainer` before ``GRPOTrainer``. Evaluation, other
    methods and a one-level tree ([G]: G independent samples) use TRL's sampling unchanged.
    """

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        branching = list(self.args.tree_branching)
        if (
            self.method_spec.rollout != "tree"  # the configured method's spec (psgrpo/<method>/spec.py)
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
        self.step_record.segment_ends = [leaf.ends for leaf in leaves]  # the tree signal reads them
        self._log_tree_tokens(
            generated, sum(len(leaf.tokens) for leaf in leaves), len(leaves) // num_generations
        )
        logprobs = [leaf.logprobs for leaf in leaves]
        return [leaf.tokens for leaf in leaves], (None if any(lp is None for lp in logprobs) else logprobs)

    def _sample_tree(self, prompt_ids: list[list[int]], branching: list[int]) -> tuple[list[Node], int]:
        """The leaves (B nodes, depth-first per group) and the number of tokens generated for them."""
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
        boundaries = getattr(self.args, "tree_boundaries", "tokens")
        nodes = [Node(first, []) for first in firsts]  # one (empty) node per prompt: the tree's top
        generated = 0
        for level, factor in enumerate(branching):
            nodes = expand(nodes, factor)
            inner = level < len(branching) - 1
            open_nodes = [n for n in nodes if not n.ended]
            budgets = [segment if inner else limit - len(n.tokens) for n in open_nodes]
            generated += self._continue(
                open_nodes, prompt_ids, budgets, cut=boundaries if inner else "tokens"
            )
            if inner:
                for node in nodes:
                    node.ends.append(len(node.tokens))
        return nodes, generated

    def _continue(
        self, nodes: list[Node], prompt_ids: list[list[int]], budgets: list[int], cut: str = "tokens"
    ) -> int:
        """Extend each node by up to its budget of sampled tokens (one batched TRL generation), cut back as
        ``cut`` says ('tokens': not at all, 'lines', 'entropy'); returns the tokens generated (those discarded
        by a cut or a budget included).

        Every process calls TRL's generation the same number of times, with the same ``max_new_tokens`` (a
        collective under ZeRO-3 / FSDP): one with no open node generates for a stand-in row and drops it. With
        vLLM every process also sends the same number of rows (TRL gathers them and hands back equal shares).
        """
        call_budget = max_over_processes(max(budgets, default=0), self.accelerator)
        if call_budget == 0:
            return 0
        prompts = [prompt_ids[n.prompt_row] + n.tokens for n in nodes]
        rows = max_over_processes(len(prompts), self.accelerator) if getattr(self, "use_vllm", False) else 1
        prompts += [prompt_ids[0]] * max(rows - len(prompts), 0)  # stand-ins, dropped below
        with max_new_tokens(self, call_budget):
            # num_generations 1: every row is its own prompt (TRL's vLLM server path samples n per unique prompt)
            segments, logprobs = super()._generate_single_turn(prompts, None, {}, 1)
        added = 0
        kept = []
        for i, (node, budget) in enumerate(zip(nodes, budgets, strict=False)):  # stand-ins dropped
            tokens = segments[i]
            added += len(tokens)
            keep = min(len(tokens), budget)  # a node nearer the length limit than the call's budget
            node.ended = keep < budget or (keep > 0 and tokens[keep - 1] in self.eos_token_ids)
            if cut == "lines" and not node.ended:
                keep = self._last_line_end(tokens[:keep]) or keep
            kept.append(keep)
        if cut == "entropy":  # every process measures once, open nodes or not
            open_rows = [i for i, node in enumerate(nodes) if not node.ended]
            entropies = self._segment_entropies(
                [prompts[i] for i in open_rows], [segments[i][: kept[i]] for i in open_rows]
            )
            for i, row_entropies in zip(open_rows, entropies, strict=True):
                kept[i] = entropy_cut(row_entropies)
        for i, (node, keep) in enumerate(zip(nodes, kept, strict=True)):
            node.tokens += segments[i][:keep]
            if logprobs is None or node.logprobs is None:
                node.logprobs = None
            else:
                node.logprobs += logprobs[i][:keep]
        return added

    def _segment_entropies(self, contexts: list[list[int]], segments: list[list[int]]) -> list[list[float]]:
        """The policy's sampling entropy (nats, at TRL's temperature) at each token of each segment given its
        context (prompt + prefix): one forward pass through TRL's own log-prob and entropy computation.

        Every process runs exactly one forward, a process with no row on a one-token stand-in, so sharded
        models (ZeRO-3 / FSDP, which gather weights per forward) see the same collectives on each.

        Args:
            contexts: one non-empty token list per row (left-padded here).
            segments: one non-empty token list per row, the tokens whose entropies are wanted (right-padded).

        Returns:
            One list per row, ``len(segments[i])`` entropies.
        """
        pad_id, device = self._tokenizer.pad_token_id, self.accelerator.device
        rows = [(c, t) for c, t in zip(contexts, segments, strict=True)] or [([pad_id], [pad_id])]

        def padded(token_lists: list[list[int]], side: str) -> tuple[torch.Tensor, torch.Tensor]:
            tensors = [torch.tensor(t, dtype=torch.long, device=device) for t in token_lists]
            ones = [torch.ones_like(t) for t in tensors]
            return pad(tensors, pad_id, side), pad(ones, 0, side)

        context_ids, context_mask = padded([c for c, _ in rows], "left")
        segment_ids, segment_mask = padded([t for _, t in rows], "right")
        with torch.no_grad():
            _, entropies, *_ = self._get_per_token_logps_and_entropies(
                self.model,
                torch.cat([context_ids, segment_ids], 1),
                torch.cat([context_mask, segment_mask], 1),
                segment_ids.shape[1],
                batch_size=len(rows),
                compute_entropy=True,
            )  # (rows, longest segment)
        return [entropies[row, : len(segment)].tolist() for row, segment in enumerate(segments)]

    def _last_line_end(self, tokens: list[int]) -> int | None:
        """The largest i such that ``tokens[:i]`` decodes to text ending in a newline, or None."""
        decode = self._tokenizer.decode
        for i in range(len(tokens), 0, -1):
            if decode(tokens[:i]).endswith("\n"):
                return i
        return None

    def _log_tree_tokens(self, generated: int, leaf_tokens: int, groups: int) -> None:
        """``tree/tokens_generated`` per group and ``tree/token_ratio`` = generated / Σ leaf lengths (all processes)."""
        stats = torch.tensor(
            [[generated, leaf_tokens, groups]], dtype=torch.float64, device=self.accelerator.device
        )
        generated_all, leaves_all, groups_all = self.accelerator.gather(stats).sum(0).tolist()
        metrics = self._metrics["train"]
        metrics["tree/tokens_generated"].append(generated_all / max(groups_all, 1.0))
        metrics["tree/token_ratio"].append(generated_all / max(leaves_all, 1.0))
