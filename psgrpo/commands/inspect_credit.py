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

from psgrpo.commands.inspect_html import render_html
from psgrpo.credit_views import CompletionView, InspectPage, PromptView, SegmentView, TokenView
from psgrpo.methods import get_method
from psgrpo.ps.segmentation import special_token_ids, token_offsets

ARITH_INSPECT_ROWS = 100_000
"""The most rows ``psgrpo inspect`` generates of an arith split (10–25 s on one core, measured): a larger
``--first_prompt`` is refused at once instead of generating a million problems first."""


@dataclass
class InspectConfig:
    """Options of ``psgrpo inspect`` besides those of ``psgrpo train``."""

    num_prompts: int = field(
        default=4,
        metadata={"help": "Prompts to sample a group of num_generations completions for (default 4)."},
    )
    first_prompt: int = field(
        default=0,
        metadata={
            "help": "Index of the first row used (default 0): rows first_prompt … + num_prompts (arith: within "
            "the first 100,000, which are generated)."
        },
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
    from psgrpo.data.arith import ARITH_VARIANTS
    from psgrpo.data.tasks import TaskConfig, load_task_split
    from psgrpo.loading import load_policy, with_default_recipe
    from psgrpo.methods import config_class
    from psgrpo.preflight import check_output_dir, check_output_file, check_run_options
    from psgrpo.trainer import ProcessGRPOTrainer

    parser = ConfigParser((TaskConfig, config_class(), ModelConfig, InspectConfig), prog="psgrpo inspect")
    parser.defer_notes = True  # logged once every check below passed: a refusal stays one line
    # No trackers: nothing is trained or logged; a later --report_to flag still wins.
    task, args, model_args, cfg = parser.parse_args_and_config(
        with_default_recipe(["--report_to", "none", *argv])
    )
    if cfg.num_prompts < 1 or cfg.first_prompt < 0:
        raise ValueError(
            f"--num_prompts must be >= 1 and --first_prompt >= 0, got {cfg.num_prompts} and {cfg.first_prompt}"
        )
    if task.dataset in ARITH_VARIANTS and cfg.first_prompt + cfg.num_prompts > ARITH_INSPECT_ROWS:
        raise ValueError(  # arith's rows are generated in order: a million would take minutes before this line
            f"--first_prompt {cfg.first_prompt} --num_prompts {cfg.num_prompts}: {task.dataset}'s rows are generated "
            f"in order, and psgrpo inspect reads at most the first {ARITH_INSPECT_ROWS:,} (pick a --first_prompt below "
            f"{ARITH_INSPECT_ROWS - cfg.num_prompts + 1:,})"
        )
    if cfg.output_file:
        check_output_file(cfg.output_file, option="--output_file")
    else:
        check_output_dir(args.output_dir)
    check_run_options(
        task, args, model_args, parser.file_sources()
    )  # temperature, completion length, chat template …: before loading
    args.push_to_hub = (
        False  # inspect trains and saves nothing: a training recipe's push_to_hub must not upload
    )
    split = cfg.inspect_split or task.eval_split
    try:  # the rows before the model: a bad split or an index past the end is one line, before anything loads
        rows = load_task_split(task, split, limit=cfg.first_prompt + cfg.num_prompts)
    except ValueError as err:
        if cfg.inspect_split and repr(split) in str(err):  # the split is what was wrong: name the flag
            raise ValueError(f"--inspect_split {split}: {err}") from None
        raise
    if len(rows) <= cfg.first_prompt:
        raise ValueError(
            f"--first_prompt {cfg.first_prompt} is past the end of {task.dataset}/{split} ({len(rows)} rows)"
        )
    rows = rows.select(range(cfg.first_prompt, len(rows)))
    parser.log_pending_notes()
    torch.manual_seed(args.seed)
    model, tokenizer = load_policy(model_args, trust_remote_code=args.trust_remote_code)
    trainer = ProcessGRPOTrainer(model=model, args=args, train_dataset=rows, processing_class=tokenizer)
    settings = {
        "checkpoint": model_args.model_name_or_path or "embedded tiny checkpoint",
        "data": f"{task.dataset}/{split}",
        **run_settings(args),
    }
    shown = get_method(args.method).inspect
    page = InspectPage(
        method=args.method,
        prompts=sample_groups(trainer, list(rows)),
        settings=settings,
        signal_label=signal_label(args),
        legend=shown.legend,
        unit=shown.unit,
        probe_note=shown.probe_note,
    )
    path = Path(cfg.output_file or Path(args.output_dir) / "inspect.html")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(page), encoding="utf-8")
    source = (  # the page may land in a trained run's folder (the recipe's output_dir): say what it sampled
        model_args.model_name_or_path
        if model_args.model_name_or_path
        else "the embedded tiny checkpoint (--model_name_or_path picks a trained one)"
    )
    print(
        f"wrote {path} ({len(page.prompts)} prompts × {trainer.num_generations} completions, {args.method}, "
        f"sampled from {source})"
    )
    return page


def signal_label(args: Any) -> str | None:
    """What colours the segments for ``args.method`` (``None`` for grpo: no process signal)."""
    label = get_method(args.method).inspect.signal_label
    return None if label is None else label(args)


SHOWN_OPTIONS = ("num_generations", "temperature", "max_completion_length", "reward_funcs", "seed")
"""Options shown in the page header, then the method's own (``InspectView.options``): they shape the credit."""


def __getattr__(name: str) -> object:  # the former table, now each method's InspectView.options
    if name == "METHOD_OPTIONS":
        from psgrpo.methods import all_methods

        return {spec.name: spec.inspect.options for spec in all_methods()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_settings(args: Any) -> dict[str, str]:
    """``option name → value`` of :data:`SHOWN_OPTIONS` and the method's own (``InspectView.options``)."""
    names = SHOWN_OPTIONS + get_method(args.method).inspect.options
    values = {name: getattr(args, name) for name in names}
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
    shown = get_method(args.method).inspect
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
            tokens=tokens if shown.signal_label is not None else [],
        )
        if shown.fill is not None:  # the method's segments, from its credit record
            shown.fill(view, credit.process, i, token_adv[i], offsets, args)
        views.append(view)
    return views
