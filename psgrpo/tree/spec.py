"""``method='tree'``: the group sampled as a tree; each segment gets its node's value gain (SPO-tree / TreeRL).

Everything the package needs to know about ``tree`` is registered here: its options
(:class:`psgrpo.tree.options.TreeOptions`) and their checks, how its signal is built
(:class:`psgrpo.tree.signal.TreeSignal`, fed by the sampling of :mod:`psgrpo.tree.sampling`), when it
gives token credit, what it refuses, how ``psgrpo inspect`` colours it and what ``--diagnostics``
measures. The estimator is :func:`psgrpo.advantages.tree_token_advantages` (docs/tree.md).
"""

from __future__ import annotations

from typing import Any

from psgrpo.methods import InspectView, MethodSpec, Refusal, register_method
from psgrpo.tree.options import TreeOptions, check_tree_method, check_tree_options, prime_factors


def build_signal(trainer: Any, step_scorer: Any) -> Any:
    """The ``tree`` signal of ``trainer``; multi-turn rollouts and vision models are refused first."""
    from psgrpo.tree.signal import TreeSignal

    if trainer.tools or trainer.rollout_func is not None or trainer.environment_factories is not None:
        raise ValueError(
            "method='tree' samples single-turn completions as one tree per prompt: it cannot be combined "
            "with tools, rollout_func or environment_factory (multi-turn rollouts); use method='grpo'"
        )
    if trainer._is_vlm:
        raise ValueError(
            "method='tree' samples text prompts only; vision-language models are not supported yet"
        )
    return TreeSignal(
        trainer.args,
        trainer.accelerator,
        lambda: trainer.step_record.rewards_per_func,  # this batch's record (psgrpo.credit.StepRecord)
        trainer.reward_weights,
        lambda: trainer.step_record.segment_ends,
    )


def check(config: Any) -> None:
    """The ``tree_*`` values whatever the method; with ``method='tree'``, what tree sampling needs."""
    check_tree_options(config)
    if config.method == "tree":
        check_tree_method(config)


def token_credit(config: Any) -> bool:
    """A one-level tree (branching [G]) gives every token of a row one value: no token credit."""
    branching = config.tree_branching or prime_factors(config.num_generations)  # None: the default tree
    return config.tree_lambda != 0 and len(branching) > 1


def labelled_levels(decoded: Any, credit: Any, config: Any) -> tuple[list[tuple[float, bool]], list[str]]:
    """``(ΔV_k / σ, segment is wrong)`` for every tree segment the arithmetic verifier can judge."""
    from psgrpo.diagnostics.step_logger import tree_segments

    pairs: list[tuple[float, bool]] = []
    rows = zip(decoded, credit.segment_advantages.tolist(), credit.segment_ends, strict=True)
    for (text, offsets), gains, ends in rows:
        pairs += tree_segments(text, offsets, gains, ends)
    return pairs, []


def show_levels(view: Any, credit: Any, i: int, token_adv: Any, offsets: Any, config: Any) -> None:
    """``psgrpo inspect``: one segment per level, coloured by ΔV_k / σ, V in the tooltip."""
    from psgrpo.credit_views import SegmentView

    values = credit.path_values[i].tolist()
    gains = credit.segment_advantages[i].tolist()
    n = len(offsets)
    closes = [min(end, n) for end in credit.segment_ends[i]] + [n]  # level k: [closes[k−1], closes[k])
    view.segments = [
        SegmentView(
            text=view.text[offsets[a][0] : offsets[b - 1][1]],
            tokens=(a, b),
            signal=gains[k],
            details={
                "V(parent)": values[k],
                "V(node)": values[k + 1],
                "A_t on this segment": float(token_adv[a]),
            },
        )
        for k, (a, b) in enumerate(zip([0, *closes[:-1]], closes, strict=True))
        if b > a
    ]


SPEC = register_method(
    MethodSpec(
        name="tree",
        scores_steps=False,
        summary="the group sampled as a tree; each segment gets its node's value gain",
        estimator="tree",
        options=TreeOptions,
        section="Tree sampling (method='tree', docs/tree.md)",
        section_fields=("tree_",),
        check=check,
        signal=build_signal,
        token_credit=token_credit,
        process_weight=lambda config: f"tree_lambda={config.tree_lambda}",
        process_units="reward",  # ΔV is in reward units, like A_i without a std
        refusals=(
            Refusal(
                options=("use_transformers_continuous_batching", "method"),
                applies=lambda c: (
                    c.method == "tree" and bool(getattr(c, "use_transformers_continuous_batching", False))
                ),
                message=lambda c: (
                    "use_transformers_continuous_batching=True cannot be combined with method='tree' yet: tree "
                    "sampling limits each level's new tokens through TRL's generate() path, which continuous "
                    "batching does not take. Drop --use_transformers_continuous_batching."
                ),
                summary="tree: refused, continuous batching is not the generate() path tree sampling drives",
            ),
        ),
        inspect=InspectView(
            legend="Tree: the group was sampled as a tree; segment k of a completion is its node at level k, shared "
            "by the completions below it. V(node) is the mean reward of those completions; segment k is coloured "
            "by (V(node) − V(parent)) / σ and its tokens get w·A_i + λ times that (docs/tree.md).",
            signal_label=lambda config: "ΔV_k / σ (tree value gain)",
            unit="segment",
            options=("tree_branching", "tree_segment_tokens", "tree_outcome_weight", "tree_lambda"),
            fill=show_levels,
        ),
        diagnostics=labelled_levels,
        colour="C3",
        rollout="tree",  # its groups are sampled as trees (psgrpo.tree.sampling)
    )
)
