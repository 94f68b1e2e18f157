"""Does GRPO-VPS's ΔC rank segments as the tree's Monte Carlo values do? The ground truth `vps` never had.

    python experiments/vps_vs_tree.py [--config arith-hard] [--prompts 256] [--tree_branching 2 2 2]
        [--tree_segment_tokens 40] [--seed 0] [--output outputs/vps-vs-tree.json]
    python experiments/vps_vs_tree.py --from_json outputs/vps-vs-tree.json   # the tables again, no sampling

One policy (the recipe's starting checkpoint, never updated: ``learning_rate`` 0) samples every prompt's
group as a tree, exactly as ``psgrpo train --method tree`` does. Each inner node of the tree (levels
0..D−2: the segments that end at a branch point, where the leaves below it still differ) has

* ΔV = V(node) − V(parent): the mean outcome reward of its leaves minus its parent's, in reward
  units (the tree's credit, before division by σ);
* ΔC = C_k − C_{k−1}: GRPO-VPS's progress, the policy's probability of the gold answer
  (``vps_probe_open`` + answer + ``vps_probe_close``) probed after the node's last token against
  after the previous branch point (C_0: after the prompt), from :func:`psgrpo.vps.cached.cached_confidence`
  at the tree's own cuts;
* a verifier label where the node's segment holds a judged step result
  (:func:`psgrpo.diagnostics.measures.segment_labels`): wrong if one of them fails.

Each node is counted once (its leaves share the segment). Reported per level and over all inner
levels (pairs within one level only: ΔC and ΔV have other scales at other depths): the AUC of ΔC
for ranking nodes with ΔV < 0 below nodes with ΔV > 0 (nodes with ΔV = 0, up to float rounding,
are left out), the AUC of ΔC and of ΔV against the verifier's labels (wrong below right), each ±
1.96 standard errors (Hanley & McNeil), and the share of nodes with ΔV ≠ 0. AUC 0.5 is chance;
ties count ½ (:func:`signal_quality`). The JSON output keeps every node, to reanalyse without
sampling again (``--from_json``).

The last level is left out: its segment ends with the answer, where C is trivially the answer's
probability and ΔV is the leaf's own reward against its parent's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, get_args

import torch

from psgrpo.config.options import TreeBoundaries
from psgrpo.config.parsing import layer_config_files, resolve_config
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.tasks import TaskConfig, load_task_split
from psgrpo.diagnostics.measures import judge_steps, segment_labels, signal_quality
from psgrpo.loading import DEFAULT_RECIPE, load_model_and_tokenizer
from psgrpo.ps.segmentation import token_offsets
from psgrpo.trainer import ProcessGRPOTrainer
from psgrpo.tree.values import segment_spans, tree_strides
from psgrpo.vps.cached import cached_confidence
from psgrpo.vps.probes import ProbeBatch, build_probe_ids


@dataclass
class Node:
    """One inner tree node, read from its first leaf."""

    level: int
    delta_v: float  # V(node) − V(parent), reward units
    delta_c: float  # C after the node's last token − C after its parent's
    wrong: bool | None  # the verifier's label of the node's segment; None: no judged step result in it


GAIN_TOLERANCE = 1e-6
"""|ΔV| at or below this (reward units) counts as 0: the means of equal rewards over 2, 4 or 8 leaves differ
by float rounding (about 6e-8), which is no gain and must neither pick a sign nor break a tie."""


def gain(node: Node) -> float:
    """The node's ΔV with float rounding set to 0 (:data:`GAIN_TOLERANCE`)."""
    return 0.0 if abs(node.delta_v) <= GAIN_TOLERANCE else node.delta_v


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="arith-hard", help="a packaged recipe name or a YAML file")
    parser.add_argument(
        "--prompts", type=int, default=256, help="prompts of the train split (from the first)"
    )
    parser.add_argument("--tree_branching", type=int, nargs="+", default=[2, 2, 2])
    parser.add_argument("--tree_segment_tokens", type=int, default=40)
    parser.add_argument("--tree_boundaries", choices=get_args(TreeBoundaries), default="tokens")
    parser.add_argument("--prompts_per_batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("outputs/vps-vs-tree.json"))
    parser.add_argument(
        "--from_json",
        type=Path,
        default=None,
        help="summarise the nodes kept in an earlier run's JSON output instead of sampling (no model loaded)",
    )
    args = parser.parse_args(argv)
    if args.from_json is not None and not args.from_json.is_file():
        parser.error(f"--from_json {args.from_json}: no such file (an output of this script is expected)")
    if args.prompts < 1 or args.prompts % args.prompts_per_batch:
        parser.error(f"--prompts {args.prompts} must be a positive multiple of --prompts_per_batch")
    return args


def build_trainer(args: argparse.Namespace, out_dir: Path) -> tuple[ProcessGRPOTrainer, list[dict[str, Any]]]:
    """A ``tree`` trainer over the recipe whose optimizer never moves the weights, recording every batch."""
    recipe, _ = layer_config_files(
        [DEFAULT_RECIPE, resolve_config(args.config)]
    )  # as psgrpo train layers them
    names = {f.name for f in fields(ProcessGRPOConfig)}
    group = math.prod(args.tree_branching)
    settings = {k: v for k, v in recipe.items() if k in names} | dict(
        method="tree",
        tree_branching=args.tree_branching,
        tree_segment_tokens=args.tree_segment_tokens,
        tree_boundaries=args.tree_boundaries,
        num_generations=group,
        per_device_train_batch_size=group * args.prompts_per_batch,
        learning_rate=0.0,
        warmup_steps=0,
        max_steps=args.prompts // args.prompts_per_batch,
        output_dir=str(out_dir),
        save_strategy="no",
        report_to=[],
        logging_steps=1000,
        seed=args.seed,
        eval_before_after=False,
        diagnostics=False,
    )
    config = ProcessGRPOConfig(**{k: v for k, v in settings.items() if k in names})
    task_names = {f.name for f in fields(TaskConfig)}
    task = TaskConfig(**{k: v for k, v in recipe.items() if k in task_names})
    dataset = load_task_split(task, "train", limit=args.prompts)
    model, tokenizer = load_model_and_tokenizer(recipe.get("model_name_or_path"))
    trainer = ProcessGRPOTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer)
    batches: list[dict[str, Any]] = []
    original = trainer._generate_and_score_completions

    def recorder(inputs: list[dict[str, Any]]) -> dict[str, Any]:
        out = original(inputs)
        keep = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")
        batches.append(
            {k: out[k].detach().cpu() for k in keep}
            | {
                "answers": [x["answer"] for x in inputs],
                "values": trainer.last_credit.process.path_values.cpu(),
                "ends": trainer.last_credit.process.segment_ends,
            }
        )
        return out

    trainer._generate_and_score_completions = recorder
    return trainer, batches


def batch_nodes(
    model: Any, tokenizer: Any, config: ProcessGRPOConfig, batch: dict[str, Any], branching: list[int]
) -> list[Node]:
    """The inner nodes of one recorded batch, each with ΔV, ΔC and its verifier label."""
    lengths = batch["completion_mask"].sum(1).tolist()
    # the probe after each non-empty inner segment (whose end is not the completion's end): b_k = end − 1
    levels = [
        [(k, end) for k, end in segment_spans(ends, n) if k < len(ends) and end < n]
        for ends, n in zip(batch["ends"], lengths, strict=True)
    ]
    cuts = [[end - 1 for _, end in row] for row in levels]
    probe_ids, score_from = build_probe_ids(
        tokenizer, batch["answers"], config.vps_probe_open, config.vps_probe_close
    )
    probes = ProbeBatch(
        batch["prompt_ids"],
        batch["prompt_mask"],
        batch["completion_ids"],
        batch["completion_mask"],
        probe_ids,
        score_from,
    )
    with torch.no_grad():
        confidence = cached_confidence(
            model, probes, lambda _entropies, row: cuts[row], temperature=config.temperature, chunk_size=16
        ).probes.confidence  # (B, K_max + 1)
    values = batch["values"]  # (B, D + 1) V(prompt), V(node_0), …
    group = math.prod(branching)
    nodes = []
    for row, n in enumerate(lengths):
        text, offsets = token_offsets(tokenizer, batch["completion_ids"][row, :n].tolist())
        steps = judge_steps(text)
        labels = segment_labels([offsets[b][1] for b in cuts[row]], steps)
        strides = tree_strides(branching)
        for probe, (level, _) in enumerate(levels[row]):
            if (row % group) % strides[level]:  # count each node once, from its first leaf
                continue
            nodes.append(
                Node(
                    level,
                    float(values[row, level + 1] - values[row, level]),
                    float(confidence[row, probe + 1] - confidence[row, probe]),
                    labels[probe],
                )
            )
    return nodes


def auc(scores: list[float], wrong: list[bool]) -> tuple[float, float]:
    """AUC of ``scores`` ranking ``wrong`` below the rest and its standard error (Hanley & McNeil, 1982);
    NaN without both kinds."""
    n_wrong = sum(wrong)
    n_right = len(wrong) - n_wrong
    if not n_wrong or not n_right:
        return float("nan"), float("nan")
    a = signal_quality(scores, wrong).auc
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n_wrong - 1) * (q1 - a * a) + (n_right - 1) * (q2 - a * a)) / (n_wrong * n_right)
    return a, math.sqrt(max(var, 0.0))


def within_levels_auc(
    nodes: list[Node], score: str | Callable[[Node], float], wrong: Callable[[Node], bool]
) -> tuple[float, float]:
    """The AUC over pairs of nodes of the same level only (each level's AUC weighted by its number of pairs),
    and its standard error: pooling levels would compare a level-0 node with a level-1 one, whose ΔC and ΔV
    have different scales."""
    weighted, variance, pairs = 0.0, 0.0, 0
    for level in sorted({n.level for n in nodes}):
        at = [n for n in nodes if n.level == level]
        flags = [wrong(n) for n in at]
        a, se = auc([score(n) if callable(score) else getattr(n, score) for n in at], flags)
        w = sum(flags) * (len(flags) - sum(flags))
        if w:
            weighted, variance, pairs = weighted + w * a, variance + (w * se) ** 2, pairs + w
    return (weighted / pairs, math.sqrt(variance) / pairs) if pairs else (float("nan"), float("nan"))


def summarize(nodes: list[Node]) -> dict[str, Any]:
    """The AUCs of :data:`__doc__` over ``nodes`` (within levels), each with its standard error."""
    moved = [n for n in nodes if gain(n) != 0]
    labelled = [n for n in nodes if n.wrong is not None]
    report: dict[str, Any] = {
        "nodes": len(nodes),
        "value_moved_frac": len(moved) / len(nodes) if nodes else float("nan"),
        "labelled_nodes": len(labelled),
        "mean_dc": sum(n.delta_c for n in nodes) / len(nodes) if nodes else float("nan"),
    }
    for key, subset, score, wrong in (
        ("auc_dc_vs_dv_sign", moved, "delta_c", lambda n: gain(n) < 0),
        ("auc_dc_vs_verifier", labelled, "delta_c", lambda n: bool(n.wrong)),
        ("auc_dv_vs_verifier", labelled, gain, lambda n: bool(n.wrong)),
    ):
        report[key], report[key + "_se"] = within_levels_auc(subset, score, wrong)
    return report


def markdown(report: dict[str, dict[str, Any]]) -> str:
    head = (
        "| nodes | count | ΔV ≠ 0 | AUC of ΔC against the sign of ΔV | labelled | AUC of ΔC, verifier "
        "| AUC of ΔV, verifier |\n|---|---|---|---|---|---|---|"
    )

    def cell(r: dict[str, Any], key: str) -> str:
        return f"{r[key]:.3f} ± {1.96 * r[key + '_se']:.3f}"

    rows = [
        f"| {name} | {r['nodes']} | {r['value_moved_frac']:.2f} | {cell(r, 'auc_dc_vs_dv_sign')} | "
        f"{r['labelled_nodes']} | {cell(r, 'auc_dc_vs_verifier')} | {cell(r, 'auc_dv_vs_verifier')} |"
        for name, r in report.items()
    ]
    return "\n".join([head, *rows])


def report_by_level(nodes: list[Node], depth: int) -> dict[str, dict[str, Any]]:
    """:func:`summarize` over all inner levels, then per level 0..depth − 2."""
    return {"inner levels": summarize(nodes)} | {
        f"level {k}": summarize([n for n in nodes if n.level == k]) for k in range(depth - 1)
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.from_json is not None:
        try:
            record = json.loads(args.from_json.read_text())
            nodes = [Node(**n) for n in record["nodes"]]
            depth = len(record["args"]["tree_branching"])
        except (ValueError, KeyError, TypeError) as err:
            raise SystemExit(
                f"--from_json {args.from_json}: not an output of this script (it needs 'nodes' and "
                f"'args.tree_branching'): {err}"
            ) from None
        report = report_by_level(nodes, depth)
        print(markdown(report))
        return report
    trainer, batches = build_trainer(args, args.output.parent / (args.output.stem + "-run"))
    trainer.train()
    model = trainer.model.eval()
    nodes = [
        n
        for b in batches
        for n in batch_nodes(model, trainer.processing_class, trainer.args, b, args.tree_branching)
    ]
    report = report_by_level(nodes, len(args.tree_branching))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "report": report,
    }
    args.output.write_text(json.dumps(record | {"nodes": [asdict(n) for n in nodes]}, indent=1))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
