"""``psgrpo eval``: evaluate one checkpoint on a held-out split and write a report.

::

    psgrpo eval --model_name_or_path outputs/demo --dataset arith --eval_split test \\
        --num_samples 8 --do_sample true --temperature 0.7 --pass_k 1 4 8 --output_dir outputs/eval

prints a markdown summary and writes into ``--output_dir``:

* ``summary.json``: ``{"metrics": {...}, "config": {...}}``, the metrics of
  :func:`psgrpo.eval.metrics.summarize` and the options that produced them;
* ``summary.md``: the printed markdown (metric table and error-type breakdown);
* ``samples.jsonl``: one record per completion (:func:`psgrpo.eval.generation.sample_record`).

Definitions of every metric: docs/evaluation.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psgrpo.eval.generation import BACKENDS
from psgrpo.eval.metrics import ERROR_TYPES, check_pass_k, error_type_key
from psgrpo.loading import DEVICE_HELP
from psgrpo.ps.segmentation import SEGMENTERS

if TYPE_CHECKING:
    from psgrpo.eval.generation import EvalResult

logger = logging.getLogger("psgrpo")

SUMMARY_JSON, SUMMARY_MD, SAMPLES_JSONL = "summary.json", "summary.md", "samples.jsonl"
DEFAULT_EVAL_MAX_NEW_TOKENS = 256
TRAIN_ONLY_TASK_FIELDS = {
    "train_split",
    "max_train_examples",
    "eval_before_after",
    "heldout_eval_steps",
    "heldout_eval_on_start",
    "heldout_cache_dir",
}
"""TaskConfig fields that ``psgrpo eval`` does not read: not its options (nor in ``--help``), left out of
summary.json's config, and dropped from a training recipe given to ``--config``."""


def eval_task_config() -> type:
    """``EvalTaskConfig``: :class:`~psgrpo.data.tasks.TaskConfig` without :data:`TRAIN_ONLY_TASK_FIELDS`,
    with TaskConfig's checks (``psgrpo eval --help`` lists only the options eval reads)."""
    import typing
    from dataclasses import MISSING, asdict, fields, make_dataclass

    from psgrpo.data.tasks import TaskConfig

    hints = typing.get_type_hints(TaskConfig)
    specs: list[tuple[str, Any, Any]] = []
    for f in fields(TaskConfig):
        if f.name in TRAIN_ONLY_TASK_FIELDS:
            continue
        default = (
            {"default": f.default} if f.default is not MISSING else {"default_factory": f.default_factory}
        )
        specs.append((f.name, hints[f.name], field(metadata=f.metadata, **default)))

    def __post_init__(self: Any) -> None:
        TaskConfig(**asdict(self))  # TaskConfig's own checks, on the options eval reads

    return make_dataclass(
        "EvalTaskConfig",
        specs,
        namespace={"__post_init__": __post_init__, "__doc__": eval_task_config.__doc__},
    )


@dataclass
class EvalConfig:
    """Options of ``psgrpo eval`` besides the task fields (dataset, eval_split, max_eval_examples ...)."""

    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "Checkpoint dir or hub id. Default: the embedded warm-start checkpoint."},
    )
    dtype: str | None = field(
        default=None,
        metadata={
            "help": "Weights dtype for backend hf: 'auto', 'bfloat16', 'float32' ... (default None: transformers' "
            "default). Use bfloat16 for real models on a GPU."
        },
    )
    device: str = field(default="auto", metadata={"help": f"{DEVICE_HELP} (backend hf; vLLM places itself)."})
    num_samples: int = field(
        default=1,
        metadata={
            "help": "Completions per prompt (default 1). More than 1 needs --do_sample true; raise it for pass@k."
        },
    )
    pass_k: list[int] | None = field(
        default=None,
        metadata={
            "help": "The k of pass@k, e.g. --pass_k 1 4 8; each at most --num_samples. Default: 1 and num_samples."
        },
    )
    do_sample: bool = field(
        default=False, metadata={"help": "Sample instead of greedy decoding (default greedy)."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (with --do_sample)."})
    top_k: int | None = field(default=None, metadata={"help": "Top-k sampling (with --do_sample)."})
    top_p: float | None = field(default=None, metadata={"help": "Top-p sampling (with --do_sample)."})
    seed: int = field(default=0, metadata={"help": "Random seed of sampling (default 0)."})
    backend: str = field(
        default="hf",
        metadata={
            "help": "'hf' (transformers generate, default) or 'vllm' (much faster on a GPU; needs "
            "pip install -e '.[vllm]' in psgrpo's folder).",
            "choices": list(BACKENDS),
        },
    )
    vllm_kwargs: dict | str | None = field(
        default=None,
        metadata={
            "help": "Extra vllm.LLM arguments with --backend vllm, a dict (YAML) or JSON string, e.g. "
            '\'{"gpu_memory_utilization": 0.5, "dtype": "bfloat16"}\' (default none).'
        },
    )
    chat_template_kwargs: dict | str | None = field(
        default=None,
        metadata={
            "help": "Arguments for the chat template of conversational prompts, a dict (YAML) or JSON string, e.g. "
            "'{\"enable_thinking\": false}'. Default: what the checkpoint's training run set (its "
            "psgrpo_task.json), else none. Give it to render prompts otherwise than training did."
        },
    )
    segmenter: str = field(
        default="markers",
        metadata={
            "help": "How completions split into steps for the step checks: 'markers' (default, a 'Step N:' label "
            "opening a line), "
            "'newline', 'paragraph', 'single' (see the PS-GRPO --segmenter). Use 'newline' for GSM8K-style "
            "outputs without step markers.",
            "choices": sorted(SEGMENTERS),
        },
    )
    segmenter_kwargs: dict | str | None = field(
        default=None,
        metadata={"help": 'Segmenter arguments, e.g. \'{"pattern": "(?m)^[0-9]+[.]"}\' (default none).'},
    )
    output_dir: str | None = field(
        default=None,
        metadata={
            "help": "Write summary.json, summary.md and samples.jsonl here (default: none, print the summary only)."
        },
    )
    output_file: str | None = field(
        default=None, metadata={"help": "Also write the metrics alone as JSON here (default: none)."}
    )

    def __post_init__(self) -> None:
        from psgrpo.config.options import json_object_option
        from psgrpo.eval.generation import check_sampling

        for name in ("vllm_kwargs", "segmenter_kwargs"):  # chat_template_kwargs: None means "as trained"
            setattr(self, name, json_object_option(name, getattr(self, name)))
        if self.chat_template_kwargs is not None:
            self.chat_template_kwargs = json_object_option("chat_template_kwargs", self.chat_template_kwargs)
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {list(BACKENDS)}, got {self.backend!r}")
        check_segmenter(self.segmenter, self.segmenter_kwargs)  # a bad name or pattern fails before any work
        check_dtype(self.dtype)
        check_eval_output_dir(self.output_dir)
        check_sampling(self.num_samples, self.do_sample)
        if (
            self.do_sample
        ):  # else generate refuses them after the model loaded (temperature 0), or ignores them
            from psgrpo.config.options import check_number

            check_number("temperature", self.temperature, low=0.0, low_open=True)
            check_number("top_k", self.top_k, low=-1 if self.backend == "vllm" else 0, allow_none=True)
            check_number("top_p", self.top_p, low=0.0, high=1.0, low_open=True, allow_none=True)
        if self.pass_k is None:
            self.pass_k = sorted({1, self.num_samples})
        check_pass_k(self.pass_k, self.num_samples)
        repeated = sorted({k for k in self.pass_k if self.pass_k.count(k) > 1})
        if repeated:
            raise ValueError(
                f"--pass_k {' '.join(map(str, self.pass_k))}: repeats k={', '.join(map(str, repeated))}; "
                f"give each k once, e.g. --pass_k {' '.join(map(str, sorted(set(self.pass_k))))}"
            )


def check_segmenter(name: str, kwargs: dict[str, Any]) -> None:
    """Build segmenter ``name`` with ``kwargs`` (cheap), as :func:`psgrpo.ps.spec.check_ps_options` does for
    train: an unknown name, an argument it does not take or a bad regex is one ValueError naming the option.

    Raises:
        ValueError: naming ``--segmenter`` or ``--segmenter_kwargs``, and what the segmenter takes.
    """
    import inspect
    import re

    from psgrpo.config.options import check_registered
    from psgrpo.ps.segmentation import SEGMENTERS, get_segmenter

    check_registered("segmenter", name, SEGMENTERS.names())
    try:
        get_segmenter(name, **kwargs)
    except (TypeError, ValueError, re.error) as err:
        takes = None  # what it takes: for an argument it does not take
        if isinstance(err, TypeError):
            try:
                takes = list(inspect.signature(SEGMENTERS.get(name)).parameters)
            except (TypeError, ValueError):
                pass
        hint = (
            ""
            if takes is None
            else f"; it takes {', '.join(takes)}"
            if takes
            else "; it takes no arguments: drop --segmenter_kwargs"
        )
        raise ValueError(
            f"--segmenter_kwargs {json.dumps(kwargs)} do not fit --segmenter {name}: {err}{hint}"
        ) from None


def check_dtype(dtype: str | None) -> None:
    """``None``, ``'auto'`` or the name of a torch floating-point dtype (``bfloat16``, ``float32`` ...).

    Raises:
        ValueError: naming ``--dtype`` and valid examples (torch has no ``float17``: an AttributeError after
            the checkpoint was found).
    """
    if dtype is None or dtype == "auto":
        return
    import torch

    value = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not (isinstance(value, torch.dtype) and value.is_floating_point):
        raise ValueError(
            f"--dtype {dtype}: not a torch floating-point dtype; give 'auto', 'bfloat16', 'float16' or 'float32'"
        )


def check_eval_output_dir(output_dir: str | None) -> None:
    """Refuse an ``--output_dir`` that is the filesystem root or the home directory itself: summary.json,
    summary.md and samples.jsonl would land loose among the system's or the user's own files.

    Raises:
        ValueError: naming ``--output_dir`` and the way on (a folder of its own).
    """
    if output_dir is None:
        return
    target = Path(output_dir).expanduser().resolve()
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):  # no home directory known
        home = None
    if target == Path(target.anchor):
        where = "the filesystem root"
    elif target == home:
        where = "your home directory"
    else:
        return
    raise ValueError(
        f"--output_dir {output_dir}: is {where}; eval writes {SUMMARY_JSON}, {SUMMARY_MD} and {SAMPLES_JSONL} "
        "there, so give a folder of its own, e.g. --output_dir outputs/eval"
    )


def _rate(value: float) -> str:
    return f"{value:.3f}"


def summary_markdown(summary: dict[str, float], title: str, setup: str) -> str:
    """The readable report: a metric table and the error-type breakdown (counts and shares)."""
    pass_keys = [key for key in summary if key.startswith("pass@")]
    rows = [
        ("accuracy (sample 0 of each prompt)", _rate(summary["accuracy"])),
        *((f"{key} (unbiased estimate)", _rate(summary[key])) for key in pass_keys),
        ("format compliance (all four tags)", _rate(summary["format_rate"])),
        ("answer rate (a parsable answer)", _rate(summary["answer_rate"])),
        ("step completeness (all checked steps verify)", _rate(summary["step_complete_rate"])),
        ("completions with checkable arithmetic", _rate(summary["step_checked_rate"])),
        ("mean completion tokens", f"{summary['mean_tokens']:.1f}"),
        ("median completion tokens", f"{summary['median_tokens']:.1f}"),
    ]
    total = int(summary["n_completions"])
    counts = {t: round(summary[error_type_key(t)] * total) for t in ERROR_TYPES}
    wrong = total - counts["correct"]
    lines = [f"## {title}", "", setup, "", "| metric | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines += ["", f"### Error types ({total} completions)", ""]
    lines += ["| type | count | share of completions | share of wrong ones |", "|---|---|---|---|"]
    for t in ERROR_TYPES:
        of_wrong = "-" if t == "correct" or wrong == 0 else _rate(counts[t] / wrong)
        lines.append(f"| {t} | {counts[t]} | {_rate(counts[t] / total)} | {of_wrong} |")
    return "\n".join(lines) + "\n"


def write_eval_outputs(
    output_dir: str | Path, result: EvalResult, markdown: str, config: dict[str, Any]
) -> dict[str, Path]:
    """Write ``summary.json``, ``summary.md`` and ``samples.jsonl`` into ``output_dir``; return their paths."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in (SUMMARY_JSON, SUMMARY_MD, SAMPLES_JSONL)}
    paths[SUMMARY_JSON].write_text(json.dumps({"metrics": result.summary, "config": config}, indent=2) + "\n")
    paths[SUMMARY_MD].write_text(markdown)
    with paths[SAMPLES_JSONL].open("w", encoding="utf-8") as handle:
        for record in result.samples:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return paths


def _decoding(cfg: EvalConfig) -> str:
    if not cfg.do_sample:
        return "greedy"
    options = [f"temperature {cfg.temperature}"]
    options += [f"{name} {value}" for name, value in (("top-k", cfg.top_k), ("top-p", cfg.top_p)) if value]
    return "sampled, " + ", ".join(options)


def training_options() -> set[str]:
    """The options of ``psgrpo train`` but the task and model options eval reads: a training recipe given
    to ``psgrpo eval --config`` keeps those (``chat_template_kwargs`` too: prompts render as trained) and drops
    the rest (output_dir, sampling and :data:`TRAIN_ONLY_TASK_FIELDS` included)."""
    from dataclasses import fields

    from trl import ModelConfig

    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.tasks import TaskConfig

    task = {f.name for f in fields(TaskConfig)} - TRAIN_ONLY_TASK_FIELDS | {
        "model_name_or_path",
        "chat_template_kwargs",
    }
    trainer = {f.name for config in (ProcessGRPOConfig, ModelConfig) for f in fields(config)}
    return (trainer | TRAIN_ONLY_TASK_FIELDS) - task


def run_eval(argv: Sequence[str]) -> dict[str, float]:
    """``psgrpo eval``: parse options, load checkpoint and split, evaluate, print and write the report."""
    from psgrpo.config.parsing import ConfigParser
    from psgrpo.data.tasks import TaskConfig, load_task_split
    from psgrpo.eval.generation import evaluate_samples
    from psgrpo.eval.trained_on import (
        apply_task_record,
        recorded_chat_template_kwargs,
        resolve_eval_checkpoint,
    )
    from psgrpo.loading import checkpoint_path, load_model_and_tokenizer, load_tokenizer, resolve_device
    from psgrpo.preflight import check_output_dir, check_output_file, prepare_dataset_source

    parser = ConfigParser(
        (eval_task_config(), EvalConfig), prog="psgrpo eval", foreign_config_keys=training_options()
    )
    parser.show_default("chat_template_kwargs", "as trained")  # the checkpoint's psgrpo_task.json, else none
    eval_task, cfg = parser.parse_args_and_config(list(argv))
    if cfg.backend == "hf":
        cfg.device = resolve_device(cfg.device)  # a GPU this machine lacks: one line, before anything loads
    check_output_dir(cfg.output_dir)
    check_output_file(
        cfg.output_file, "--output_file"
    )  # a directory there: one line now, not after the evaluation
    checkpoint_path(
        cfg.model_name_or_path, run_dir_ok=True
    )  # a checkpoint never written: one line, no Hub lookup
    cfg.model_name_or_path = resolve_eval_checkpoint(
        cfg.model_name_or_path
    )  # a run dir: its newest checkpoint
    given = set(parser.command_line) | set(parser.config_sources)
    trained_on = apply_task_record(eval_task, cfg.model_name_or_path, given, cfg.model_name_or_path or "")
    if trained_on:
        logger.info(trained_on)
    recorded = recorded_chat_template_kwargs(cfg.model_name_or_path)
    if cfg.chat_template_kwargs is None:
        cfg.chat_template_kwargs = recorded[0] if recorded else {}
        if recorded:
            logger.info(
                "psgrpo eval: conversational prompts rendered with chat_template_kwargs %s, as the checkpoint's "
                "training run set them (%s); --chat_template_kwargs renders them otherwise",
                json.dumps(recorded[0]),
                recorded[1],
            )
    task = TaskConfig(**asdict(eval_task))
    prepare_dataset_source(task.dataset)  # a Hub dataset with no Hub: the cache at once, not retries
    dataset = load_task_split(task, task.eval_split, limit=task.max_eval_examples)
    if cfg.backend == "vllm":
        from psgrpo.eval.vllm_backend import import_vllm

        import_vllm()  # fail before loading anything
        model: Any = checkpoint_path(cfg.model_name_or_path)
        tokenizer = load_tokenizer(cfg.model_name_or_path)
    else:
        model, tokenizer = load_model_and_tokenizer(
            cfg.model_name_or_path, dtype=cfg.dtype, device=cfg.device
        )
    max_new_tokens = task.eval_max_new_tokens or DEFAULT_EVAL_MAX_NEW_TOKENS
    result = evaluate_samples(
        model,
        tokenizer,
        dataset,
        num_samples=cfg.num_samples,
        pass_k=cfg.pass_k or (),
        max_new_tokens=max_new_tokens,
        batch_size=task.eval_batch_size,
        segmenter=cfg.segmenter,
        segmenter_kwargs=cfg.segmenter_kwargs,  # type: ignore[arg-type]
        backend=cfg.backend,
        seed=cfg.seed,
        vllm_kwargs=cfg.vllm_kwargs,  # type: ignore[arg-type]
        do_sample=cfg.do_sample,
        temperature=cfg.temperature,
        top_k=cfg.top_k,
        top_p=cfg.top_p,
        chat_template_kwargs=cfg.chat_template_kwargs,  # type: ignore[arg-type]
    )
    model_name = cfg.model_name_or_path or "embedded checkpoint"
    setup = (
        f"{int(result.summary['n'])} prompts × {cfg.num_samples} sample(s), {_decoding(cfg)}, "
        f"at most {max_new_tokens} new tokens, backend {cfg.backend}"
        f"{f' on {cfg.device}' if cfg.backend == 'hf' else ''}, steps by segmenter '{cfg.segmenter}'"
    )
    markdown = summary_markdown(result.summary, f"{model_name} on {task.dataset}/{task.eval_split}", setup)
    print(markdown)
    if cfg.output_dir:
        task_options = {k: v for k, v in asdict(task).items() if k not in TRAIN_ONLY_TASK_FIELDS}
        config = {**task_options, **asdict(cfg), "model": model_name, "max_new_tokens": max_new_tokens}
        paths = write_eval_outputs(cfg.output_dir, result, markdown, config)
        logger.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    if cfg.output_file:
        Path(cfg.output_file).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.output_file).write_text(json.dumps(result.summary, indent=2))
    return result.summary
