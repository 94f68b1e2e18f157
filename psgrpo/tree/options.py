"""The ``tree_*`` options of :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig` and the checks ``method='tree'`` needs.

:class:`TreeOptions` is a dataclass base of ``ProcessGRPOConfig`` (its fields are ordinary config
fields: ``--tree_branching 2 2 2`` on the command line, ``tree_branching: [2, 2, 2]`` in YAML).
:func:`check_tree_options` and, with ``method='tree'``, :func:`check_tree_method` run in the config's
``__post_init__`` (through the tree's spec), before anything loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from psgrpo.config.options import TreeBoundaries, check_choice, check_number


@dataclass
class TreeOptions:
    """Fields of ``method='tree'`` (docs/tree.md)."""

    tree_branching: list[int] | None = field(
        default=None,
        metadata={
            "help": "Branching factors of the tree each prompt's completions are sampled as (method 'tree'): b_0 "
            "roots, then b_1 children per root, … Their product must equal num_generations (e.g. "
            "'--tree_branching 2 2 2' for 8). Default None: the prime factors of num_generations, smallest first "
            "(8 → 2 2 2, 4 → 2 2, 6 → 2 3). Deeper trees give more segments a value but share more tokens; "
            "one factor [num_generations] is G independent samples (outcome GRPO)."
        },
    )
    tree_segment_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Tokens per tree segment (method 'tree'): every level but the last generates at most this "
            "many, the last continues to max_completion_length or EOS. Default None: max_completion_length // "
            "(2 × (levels − 1)), so the branch points cover the first half of the limit. Set it from your "
            "completions' typical length (branch points after most completions end share everything); "
            "(levels − 1) × tokens must be below max_completion_length."
        },
    )
    tree_boundaries: TreeBoundaries = field(
        default="tokens",
        metadata={
            "help": "Where the tree branches (method 'tree'): 'tokens' (default) after exactly tree_segment_tokens "
            "tokens of each inner level, wherever that falls; 'lines': each inner level is cut back to the last "
            "line end within its tree_segment_tokens tokens, so branch points fall between reasoning steps (the "
            "tokens after it are generated and discarded, counted in tree/tokens_generated; a segment without a "
            "line end keeps its tokens). With 'lines', set tree_segment_tokens above your longest step line. "
            "'entropy': each inner level is cut back to just before its highest-entropy token in the second half "
            "of its tree_segment_tokens tokens, so children fork where the policy is least sure (TreeRL's "
            "entropy-guided forking; one extra forward pass per inner level to measure the entropies)."
        },
    )
    tree_outcome_weight: float = field(
        default=0.0,
        metadata={
            "help": "w in A_t = w·A_i + λ·ΔV_k/σ (method 'tree'; default 0.0: SPO-tree's form, whose segment "
            "advantages add up along a completion to A_i, and with one level [G] is exactly outcome GRPO). "
            "Set 1.0 for TreeRL's global + local form (every token also gets A_i; the advantages are then larger "
            "than GRPO's, which changes the effective step size), or when a branching factor is 1 below the "
            "roots (that level's ΔV is 0)."
        },
    )
    tree_lambda: float = field(
        default=1.0,
        metadata={
            "help": "λ, weight of the tree's segment advantage ΔV_k/σ = (V(node) − V(parent)) / σ, σ being the "
            "std TRL divides A_i by (method 'tree'; default 1.0). 0 with tree_outcome_weight 1 gives outcome GRPO "
            "on tree-sampled completions (0 with the default weight 0 is refused: nothing would train); lower it (e.g. 0.5) with tree_outcome_weight 1 to keep the advantages near GRPO's scale."
        },
    )


def prime_factors(n: int) -> list[int]:
    """``n``'s prime factors, smallest first, with multiplicity (8 → [2, 2, 2]; 1 → [1]): the default tree."""
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + [n] if n > 1 or not factors else factors


def check_tree_options(config: Any) -> None:
    """Refuse ``tree_*`` values, whatever the method (:func:`check_tree_method` then checks combinations).

    Raises:
        ValueError naming the flags involved and what is expected.
    """
    branching = config.tree_branching
    if branching is None:
        branching = prime_factors(config.num_generations)
    elif isinstance(branching, int) and not isinstance(branching, bool):  # YAML may give one number
        branching = [branching]
    if (
        not isinstance(branching, (list, tuple))
        or not branching
        or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in branching)
    ):
        raise ValueError(
            f"tree_branching={config.tree_branching!r} must be one or more integers ≥ 1, e.g. 2 2 2"
        )
    config.tree_branching = list(branching)
    if config.tree_segment_tokens is None and len(branching) > 1:
        config.tree_segment_tokens = max(1, config.max_completion_length // (2 * (len(branching) - 1)))
    check_number("tree_segment_tokens", config.tree_segment_tokens, low=1, allow_none=True)
    check_choice("tree_boundaries", config.tree_boundaries, TreeBoundaries)
    check_number("tree_outcome_weight", config.tree_outcome_weight, low=0.0)
    check_number("tree_lambda", config.tree_lambda, low=0.0)


def check_tree_method(config: Any) -> None:
    """With ``method='tree'`` (its spec calls this): the combinations tree sampling cannot serve."""
    own_estimator = getattr(config, "advantage_estimator", None) in (None, "tree")
    if own_estimator and config.tree_lambda == 0 and config.tree_outcome_weight == 0:
        raise ValueError(
            "--tree_lambda 0 with --tree_outcome_weight 0 (its default) gives every token an advantage of 0 (only "
            "a KL term would train): for outcome GRPO on tree-sampled completions add --tree_outcome_weight 1"
        )
    branching = config.tree_branching  # normalised by check_tree_options
    leaves = math.prod(branching)
    if leaves != config.num_generations:
        raise ValueError(
            f"--tree_branching {' '.join(map(str, branching))} has {leaves} leaves but --num_generations is "
            f"{config.num_generations}: the product of the branching factors must equal num_generations"
        )
    inner = (config.tree_segment_tokens or 0) * (len(branching) - 1)
    if inner >= config.max_completion_length:
        raise ValueError(
            f"--tree_segment_tokens {config.tree_segment_tokens} × {len(branching) - 1} inner levels = {inner} "
            f"tokens leaves nothing for the last level within --max_completion_length "
            f"{config.max_completion_length}: lower tree_segment_tokens or use fewer levels"
        )
    local = config.per_device_train_batch_size * config.steps_per_generation
    if local % config.num_generations:
        raise ValueError(
            f"method='tree' samples each group as one tree on one process, so each process's generation batch "
            f"(--per_device_train_batch_size {config.per_device_train_batch_size} × steps_per_generation "
            f"{config.steps_per_generation} = {local}) must be a multiple of --num_generations {config.num_generations}"
        )
    for name, why in (
        ("memory_bank", "would put a banked completion in place of a leaf of the tree"),
        (
            "reward_norm_momentum",
            "replaces A_i by the advantage of running-normalised rewards, which the tree's V does not use",
        ),
    ):
        if getattr(config, name) not in (None, False):
            raise ValueError(f"method='tree' cannot be combined with {name}: it {why}; drop --{name}")
