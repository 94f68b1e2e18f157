"""``psgrpo inspect``: sample a few groups with the trainer's own rollout and show their credit as HTML.

::

    psgrpo inspect                                   # embedded checkpoint, demo recipe (ps, reference verifier), 4 prompts
    psgrpo inspect --method vps --num_prompts 2 --output_file vps.html

The options are those of ``psgrpo train`` (task, ``ProcessGRPOConfig``, model; default recipe
``psgrpo/recipes/demo.yaml``) plus :class:`InspectConfig`. A :class:`ProcessGRPOTrainer` is
built from them and its ``_generate_and_score_completions`` runs on groups of dataset rows —
the code path of a training step (rollout, TRL's rewards and A_i, the method's process signal,
the advantage estimator) — without any update. The credit is then read from
``trainer.last_credit`` and the rewards from TRL's own log of the batch, and handed to the pure
renderer :mod:`psgrpo.commands.inspect_html`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from psgrpo.advantages import confidence_progress
from psgrpo.commands.inspect_html import (
    CompletionView,
    InspectPage,
    PromptView,
    SegmentView,
    TokenView,
    render_html,
)
from psgrpo.ps.segmentation import special_token_ids, token_offsets
from psgrpo.ps.signal import PsCredit
from psgrpo.vps.boundaries import spans_from_boundaries
from psgrpo.vps.signal import VpsCredit


@dataclass
class InspectConfig:
    """Options of ``psgrpo inspect`` besides those of ``psgrpo train``."""

    num_prompts: int = field(
        default=4,
        metadata={"help": "Prompts to sample a group of num_generations completions for (default 4)."},
    )
    first_prompt: int = field(
        default=0,
        metadata={"help": "Index of the first row used (default 0): rows first_prompt … + num_prompts."},
    )
    inspect_split: str | None = field(
        default=None,
        metadata={"help": "Split the prompts come from. Default: the task's eval_split (held-out rows)."},
    )
    output_file: str | None = field(
        default=None, metadata={"help": "Where to write the HTML page. Default: output_dir/inspect.html."}
    )


def inspect(argv: Sequence[str]) -> InspectPage:
    """``psgrpo inspect``: parse options, build the trainer, sample, write the HTML; returns the page's data."""
    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.tasks import TaskConfig, load_task_split
    from psgrpo.loading import load_policy, with_default_recipe
    from psgrpo.preflight import check_output_dir, check_output_file
    from psgrpo.trainer import ProcessGRPOTrainer

    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig, InspectConfig), prog="psgrpo inspect")
    # No trackers: nothing is trained or logged; a later --report_to flag still wins.
    task, args, model_args, cfg = parser.parse_args_and_config(
        with_default_recipe(["--report_to", "none", *argv])
    )
    if cfg.num_prompts < 1 or cfg.first_prompt < 0:
        raise ValueError(
            f"--num_prompts must be >= 1 and --first_prompt >= 0, got {cfg.num_prompts} and {cfg.first_prompt}"
        )
    if cfg.output_file:
        check_output_file(cfg.output_file, option="--output_file")
    else:
        check_output_dir(args.output_dir)
    torch.manual_seed(args.seed)
    model, tokenizer = load_policy(model_args, trust_remote_code=args.trust_remote_code)
    split = cfg.inspect_split or task.eval_split
    rows = load_task_split(task, split, limit=cfg.first_prompt + cfg.num_prompts)
    if len(rows) <= cfg.first_prompt:
        raise ValueError(
            f"--first_prompt {cfg.first_prompt} is past the end of {task.dataset}/{split} ({len(rows)} rows)"
        )
    rows = rows.select(range(cfg.first_prompt, len(rows)))
    trainer = ProcessGRPOTrainer(model=model, args=args, train_dataset=rows, processing_class=tokenizer)
    settings = {
        "checkpoint": model_args.model_name_or_path or "embedded tiny checkpoint",
        "data": f"{task.dataset}/{split}",
        **run_settings(args),
    }
    page = InspectPage(
        method=args.method,
        prompts=sample_groups(trainer, list(rows)),
        settings=settings,
        signal_label=signal_label(args),
    )
    path = Path(cfg.output_file or Path(args.output_dir) / "inspect.html")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(page), encoding="utf-8")
    print(
        f"wrote {path} ({len(page.prompts)} prompts × {trainer.num_generations} completions, {args.method})"
    )
    return page


def signal_label(args: Any) -> str | None:
    """What colours the segments for ``args.method`` (``None`` for grpo: no process signal)."""
    if args.method == "ps":
        return "r̃ (normalised step score)"
    if args.method == "vps":
        return "Δlog C_k" if args.vps_log_form else "ΔC_k"
    if args.method == "tree":
        return "ΔV_k / σ (tree value gain)"
    return None


SHOWN_OPTIONS = ("num_generations", "temperature", "max_completion_length", "reward_funcs", "seed")
METHOD_OPTIONS = {
    "grpo": (),
    "ps": ("segmenter", "step_scorer", "ps_advantage_mode", "ps_outcome_weight", "ps_lambda"),
    "vps": (
        "vps_boundaries",
        "vps_max_segments",
        "vps_alpha",
        "vps_log_form",
        "vps_truncated",
        "vps_zero_variance",
    ),
    "tree": ("tree_branching", "tree_segment_tokens", "tree_outcome_weight", "tree_lambda"),
}
"""Options shown in the page header (all methods, then the method's own): they shape the credit."""


def run_settings(args: Any) -> dict[str, str]:
    """``option name → value`` of :data:`SHOWN_OPTIONS` and the method's :data:`METHOD_OPTIONS`."""
    values = {name: getattr(args, name) for name in SHOWN_OPTIONS + METHOD_OPTIONS[args.method]}
    return {name: ", ".join(map(str, v)) if isinstance(v, list) else str(v) for name, v in values.items()}


@torch.no_grad()
def sample_groups(trainer: Any, rows: list[dict[str, Any]]) -> list[PromptView]:
    """One group of ``trainer.num_generations`` completions per row, with the credit training would give.

    Rows go through ``trainer._generate_and_score_completions`` as many at a time as one
    training generation batch holds (``generation_batch_size // num_generations``), each
    repeated G times as TRL's sampler does, with the model in training mode.
    """
    G = trainer.num_generations
    per_call = max(1, trainer.args.generation_batch_size // G)
    answer_column = trainer.args.vps_answer_column
    trainer.model.train()
    views = []
    for start in range(0, len(rows), per_call):
        chunk = rows[start : start + per_call]
        inputs = [dict(row) for row in chunk for _ in range(G)]
        output = trainer._generate_and_score_completions(inputs)
        completions = completion_views(trainer, output, last_rewards(trainer, len(inputs)))
        for j, row in enumerate(chunk):
            answer = row.get(answer_column, row.get("answer", ""))
            views.append(
                PromptView(prompt_text(row["prompt"]), str(answer), completions[j * G : (j + 1) * G])
            )
    return views


def prompt_text(prompt: str | list[dict[str, Any]]) -> str:
    """A plain or conversational prompt as text (one ``[role] content`` line per message)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in prompt)


def last_rewards(trainer: Any, n: int) -> list[dict[str, float]]:
    """Each reward function's value for the last ``n`` completions TRL scored (its own log, unweighted)."""
    columns = {name: list(trainer._logs["rewards"][name])[-n:] for name in trainer.reward_func_names}
    return [{name: float(values[i]) for name, values in columns.items()} for i in range(n)]


def completion_views(
    trainer: Any, output: dict[str, Any], rewards: list[dict[str, float]]
) -> list[CompletionView]:
    """Cards for the rows of one ``_generate_and_score_completions`` output, from ``trainer.last_credit``."""
    args, tokenizer, credit = trainer.args, trainer._tokenizer, trainer.last_credit
    weights = dict(zip(trainer.reward_func_names, trainer.reward_weights.tolist(), strict=True))
    special = special_token_ids(tokenizer)
    token_adv = credit.token_advantages.float().cpu()
    outcome = credit.outcome_advantages.float().cpu().tolist()
    lengths = output["completion_mask"].sum(1).tolist()
    views = []
    for i, n in enumerate(lengths):
        ids = output["completion_ids"][i, :n].tolist()
        text, offsets = token_offsets(tokenizer, ids)
        tokens = [
            TokenView(
                text[a:b] if b > a else tokenizer.decode([tok]) if tok in special else "",
                float(token_adv[i, t]),
                special=b == a and tok in special,
            )
            for t, (tok, (a, b)) in enumerate(zip(ids, offsets, strict=True))
        ]
        view = CompletionView(
            text=text,
            rewards=rewards[i],
            reward=math.fsum(weights[k] * v for k, v in rewards[i].items() if not math.isnan(v)),
            outcome_advantage=outcome[i],
            segments=[SegmentView(text, (0, n))],
            tokens=tokens if args.method != "grpo" else [],
        )
        if args.method == "ps":
            _add_steps(view, credit.process, i, token_adv[i])
        elif args.method == "vps":
            _add_confidence(view, credit.process, i, token_adv[i], offsets, args)
        elif args.method == "tree":
            _add_tree_segments(view, credit.process, i, token_adv[i], offsets, args.tree_segment_tokens or n)
        views.append(view)
    return views


def _add_steps(view: CompletionView, credit: PsCredit, i: int, token_adv: torch.Tensor) -> None:
    """PS-GRPO: one segment per step, coloured by r̃, raw score in the tooltip."""
    raw, normalized = credit.raw_step_scores[i], credit.step_scores[i]
    view.segments = [
        SegmentView(
            text=step,
            tokens=(a, b),
            signal=None if normalized is None else normalized[j],
            details={} if raw is None else {"raw score": raw[j], "A_t on this step": float(token_adv[a])},
        )
        for j, (step, (a, b)) in enumerate(zip(credit.steps[i], credit.step_token_spans[i], strict=True))
    ]
    if normalized is None:
        view.notes.append("step scorer failed on this completion: it gets its outcome advantage A_i only")


def _add_tree_segments(
    view: CompletionView,
    credit: Any,
    i: int,
    token_adv: torch.Tensor,
    offsets: list[tuple[int, int]],
    segment_tokens: int,
) -> None:
    """Tree: one segment per level (S tokens each, the last runs on), coloured by ΔV_k / σ, V in the tooltip."""
    values = credit.path_values[i].tolist()
    gains = credit.segment_advantages[i].tolist()
    depth, n = len(gains), len(offsets)
    view.segments = []
    for k in range(depth):
        a, b = min(k * segment_tokens, n), n if k == depth - 1 else min((k + 1) * segment_tokens, n)
        if a == b:
            break
        view.segments.append(
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
        )


def _add_confidence(
    view: CompletionView,
    credit: VpsCredit,
    i: int,
    token_adv: torch.Tensor,
    offsets: list[tuple[int, int]],
    args: Any,
) -> None:
    """GRPO-VPS: segments between boundaries, coloured by ΔC_k, with C_k at each boundary."""
    boundaries = credit.boundaries[i]
    confidence = credit.confidence[i].float().cpu()
    delta = confidence_progress(confidence.unsqueeze(0), args.vps_log_form)[0].tolist()  # as the estimator
    c = confidence.tolist()
    view.probe0 = c[0]
    view.segments = []
    for j, (a, b) in enumerate(spans_from_boundaries(boundaries, len(offsets))):
        probed = j < len(boundaries)
        view.segments.append(
            SegmentView(
                text=view.text[offsets[a][0] : offsets[b - 1][1]],
                tokens=(a, b),
                signal=delta[j] if probed else None,
                probe=c[j + 1] if probed else None,
                details=(
                    {f"C_{j}": c[j], f"C_{j + 1}": c[j + 1], "α·ΔC": args.vps_alpha * delta[j]}
                    if probed
                    else {}
                )
                | {"A_t on this segment": float(token_adv[a])},
            )
        )
    if bool(credit.truncated[i]) and args.vps_truncated != "keep":
        effect = "gets A_i only" if args.vps_truncated == "outcome" else "gets no update"
        view.notes.append(
            f"truncated (no EOS): ΔC not applied, it {effect} (vps_truncated={args.vps_truncated})"
        )
