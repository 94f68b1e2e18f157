"""What a command checks before anything heavy loads, and what it leaves when it stops early.

* :func:`check_output_dir`: ``--output_dir`` must be a directory that exists or can be created and
  written, checked before any model loads (transformers would fail with a bare ``[Errno 17]`` after it).
* :func:`check_output_file`: the same for a single output file (``--output_file``, ``--output``): not a
  directory, and its folder creatable and writable.
* :func:`check_no_earlier_run`: a ``--output_dir`` that holds an earlier run (its model, checkpoints, metrics or
  report) is refused unless the run resumes it: training there would overwrite the model and the checkpoints
  and append a second run's rows to its ``metrics.jsonl``.
* :func:`output_dir_removed_on_failure`: a run that fails or is interrupted before it wrote anything
  leaves no output directory behind (only one it created itself, and only while it holds no file).
* :func:`check_resume_target`: ``--resume_from_checkpoint`` resolved before loading; a checkpoint
  that has already reached ``--max_steps`` has nothing left to train (transformers would train one
  more step), and one trained with another ``--method`` or ``--dataset`` is refused (resuming restores
  its optimizer and step count; starting from its weights is ``--model_name_or_path``).
* :func:`check_run_options`: the ``psgrpo train`` values that would otherwise fail after the model
  loaded: the ``--report_to`` integrations importable, ``--temperature`` > 0,
  ``--max_completion_length`` ≥ 1, vLLM importable with ``--use_vllm``, a chat template with ``--chat``.
* :func:`other_methods_options`: options of another method that the user set (a flag, or a YAML file), which this
  ``--method`` ignores: ``psgrpo train`` warns in one line.
* :class:`TrainingInterrupted`: Ctrl-C during ``psgrpo train``, with the one line the CLI prints:
  the newest complete checkpoint and the command that resumes from it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RESUME_FLAG = "--resume_from_checkpoint"

_NO_VALUE = object()


def option_text(name: str, value: Any = _NO_VALUE, *, api: bool = False) -> str:
    """How a message names an option: ``--name value`` for ``psgrpo`` commands, ``name=value`` (the value's repr)
    for the Python API, whose users never typed a flag."""
    if value is _NO_VALUE:
        return name if api else f"--{name}"
    return f"{name}={value!r}" if api else f"--{name} {value}"


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training; ``str()`` is the line to print (where to resume from, and how)."""


def check_output_dir(path: str | os.PathLike[str] | None, option: str = "--output_dir") -> None:
    """Raise OSError naming ``option`` when ``path`` is a file, sits below a file, or cannot be written.

    Nothing is created: a directory that does not exist yet must only be creatable (its nearest
    existing parent a writable directory).
    """
    if path is None:
        return
    target = Path(path).expanduser()
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(
            f"{option} {path}: is a file, not a directory; give a directory to write into"
        )
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(
            f"{option} {path}: {existing} is a file, so the directory cannot be created there"
        )
    try:  # a probe that removes itself: os.access says yes to root on read-only or virtual file systems
        with tempfile.TemporaryDirectory(dir=existing, prefix=".psgrpo-write-check-"):
            pass
    except OSError as err:
        what = "is not writable" if existing == target else f"cannot be created: {existing} is not writable"
        raise PermissionError(
            f"{option} {path}: {what} ({err.strerror or err}); give a directory you can write to"
        ) from None


def check_output_file(path: str | os.PathLike[str] | None, option: str) -> None:
    """Raise OSError naming ``option`` when ``path`` is a directory, or its folder cannot be created or written."""
    if path is None:
        return
    target = Path(path).expanduser()
    if target.is_dir():
        raise OSError(f"{option} {str(path)!r} is a directory; expected a file path")
    try:
        check_output_dir(target.parent, option="its folder")
    except OSError as err:
        raise OSError(f"{option} {str(path)!r}: {err}") from None


RUN_FILES = ("report.json", "model.safetensors", "adapter_model.safetensors", "pytorch_model.bin")
"""Files ``psgrpo train`` writes into its ``--output_dir`` (besides ``metrics.jsonl`` and ``checkpoint-N`` folders):
one of them there means an earlier run."""


MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
"""Files a run's final save writes besides :data:`RUN_FILES`: a folder holding them without a run is a model's."""


def earlier_run(path: str | os.PathLike[str] | None) -> list[str]:
    """What of an earlier run the directory ``path`` holds: its metrics, model and report files, and its newest two
    ``checkpoint-N`` folders."""
    from psgrpo.checkpoints.atomic import CHECKPOINT_RE, _numbered
    from psgrpo.metrics_log import METRICS_FILE

    if path is None or not Path(path).expanduser().is_dir():
        return []
    target = Path(path).expanduser()
    found = [name for name in (*RUN_FILES, METRICS_FILE) if (target / name).is_file()]
    return found + [p.name for _, p in reversed(_numbered(target, CHECKPOINT_RE)[:2])]


def check_no_earlier_run(path: str | os.PathLike[str] | None, resume: str | None) -> None:
    """Refuse to train into ``path`` when it holds an earlier run (:func:`earlier_run`), unless ``resume`` (the
    checkpoint :func:`check_resume_target` resolved, or ``None``) continues it: a checkpoint of ``path`` itself.
    A checkpoint of another run may be resumed into a new or empty ``path``, not over a run it holds.

    Raises:
        FileExistsError: naming the directory, what it holds, and the ways on (resuming only where a complete
            checkpoint exists).
    """
    if path is None:
        return
    continues = (
        resume is not None and Path(resume).expanduser().resolve().parent == Path(path).expanduser().resolve()
    )
    found = [] if continues else earlier_run(path)
    if not found:
        model_files = [] if continues else [n for n in MODEL_FILES if (Path(path).expanduser() / n).is_file()]
        if (
            model_files
        ):  # a model folder, not a run (the base model itself, say): the save would replace its files
            raise FileExistsError(
                f"--output_dir {path}: holds a model or tokenizer psgrpo did not train ({', '.join(model_files)}); "
                "the run's save would overwrite them: give a new --output_dir"
            )
        return
    if resume is not None:
        raise FileExistsError(
            f"--output_dir {path}: already holds another run ({', '.join(found)}); resuming {resume} there would "
            "overwrite it and mix the two runs' logs: give a new --output_dir, or resume that run's own checkpoint"
        )
    raise FileExistsError(
        f"--output_dir {path}: already holds a run ({', '.join(found)}); training there would overwrite what it "
        f"holds and mix the two runs' logs: {ways_on(path)}"
    )


def ways_on(
    path: str | os.PathLike[str], resume: str = f"{RESUME_FLAG} true", output_dir: str = "--output_dir"
) -> str:
    """What to do about a folder that holds an earlier run: resume it (only where a complete checkpoint exists),
    a new ``output_dir``, or delete it; ``resume`` and ``output_dir`` name the options (CLI or Python)."""
    from psgrpo.checkpoints.atomic import last_complete_checkpoint

    newest, _ = last_complete_checkpoint(Path(path).expanduser())
    if newest is None:
        return f"it holds no complete checkpoint to resume from, so give a new {output_dir} or delete the folder first"
    return (
        f"continue it from {newest.name} with {resume}, give a new {output_dir}, or delete the folder first"
    )


def holds_no_file(path: Path) -> bool:
    """Whether the directory ``path`` holds no file at any depth (only empty folders, or nothing)."""
    return not any(child.is_file() or child.is_symlink() for child in path.rglob("*"))


def output_dir_state(
    path: str | os.PathLike[str] | None, should_save: bool = True
) -> tuple[Path | None, bool]:
    """``(resolved path, existed)`` of ``output_dir`` before a run, for :func:`output_dir_removed_on_failure`: a
    process that does not save (not the main one of several) counts it as existing, so it never removes the folder
    the main process is writing into; ``None`` counts as existing."""
    if path is None:
        return None, True
    target = Path(path).expanduser().resolve()
    return target, not should_save or target.exists()


@contextmanager
def output_dir_removed_on_failure(
    path: str | os.PathLike[str] | None, existed: bool | None = None
) -> Iterator[None]:
    """Run the body; if it raises (or is interrupted) and it created ``path``, which holds no file, remove ``path``.

    A directory that existed before is never touched, and neither is one that holds any file
    (a checkpoint, a log): those are the run's results. ``existed``: whether ``path`` existed before the run began,
    where that was earlier than the body (the trainer's ``train()``: transformers creates the folder when the
    trainer is built); ``None`` looks now.
    """
    target = Path(path).expanduser() if path is not None else None
    if existed is None:
        existed = output_dir_state(path)[1]
    try:
        yield
    except BaseException:
        if not existed and target is not None and target.is_dir() and holds_no_file(target):
            shutil.rmtree(target, ignore_errors=True)
        raise


def check_same_run(checkpoint: str, method: str | None, dataset: str | None, *, api: bool = False) -> None:
    """Refuse to resume ``checkpoint`` with another method or dataset than the ones its task record names
    (:mod:`psgrpo.eval.trained_on`; a checkpoint without a record, or a record without the method, is not checked
    on what it lacks). ``api``: the message names the Python API's arguments instead of flags."""
    from psgrpo.eval.trained_on import read_run_record

    record = read_run_record(checkpoint)
    asked = {"method": method, "dataset": dataset}
    differ = [
        (name, record[name], value)
        for name, value in asked.items()
        if value is not None and isinstance(record.get(name), str) and record[name] != value
    ]
    if differ:
        was = " and ".join(option_text(name, old, api=api) for name, old, _ in differ)
        now = " and ".join(option_text(name, new, api=api) for name, _, new in differ)
        model = option_text("model" if api else "model_name_or_path", checkpoint, api=api)
        raise ValueError(
            f"{option_text('resume_from_checkpoint', api=api)}: {checkpoint} was trained with {was}, and this run "
            f"asks for {now}; resuming continues that run (its optimizer, schedule and step count), so give the "
            f"same options, or start a new run from its weights with {model} and a new "
            f"{option_text('output_dir', api=api)}"
        )


def check_resume_target(
    resume: str | bool | None,
    output_dir: str,
    max_steps: int,
    method: str | None = None,
    dataset: str | None = None,
    *,
    api: bool = False,
) -> str | None:
    """The checkpoint to resume from (:func:`~psgrpo.checkpoints.atomic.resolve_resume_checkpoint`), resolved
    before loading; ValueError when it has already trained ``max_steps`` (> 0) steps, or was trained with another
    ``method`` or ``dataset`` (:func:`check_same_run`). ``api``: messages name the Python API's arguments
    (``max_steps``, ``resume_from_checkpoint=True``) instead of flags."""
    from psgrpo.checkpoints.atomic import resolve_resume_checkpoint

    checkpoint = resolve_resume_checkpoint(resume, output_dir, api=api)
    if checkpoint is None:
        return checkpoint
    check_same_run(checkpoint, method, dataset, api=api)
    if max_steps <= 0:
        return checkpoint
    step = checkpoint_step(checkpoint)
    if step >= max_steps:
        steps = option_text("max_steps", api=api)
        raise ValueError(
            f"{option_text('resume_from_checkpoint', api=api)}: {checkpoint} is at step {step} and {steps} is "
            f"{max_steps}, so there is nothing left to train; raise {steps} above {step} to train further"
        )
    return checkpoint


def checkpoint_step(checkpoint: str | Path) -> int:
    """The global step a checkpoint was saved at (its ``trainer_state.json``; 0 without one)."""
    state_file = Path(checkpoint) / "trainer_state.json"
    return int(json.loads(state_file.read_text())["global_step"]) if state_file.is_file() else 0


def resume_command(argv: Sequence[str]) -> str:
    """``psgrpo train ARGV --resume_from_checkpoint true``, with any earlier resume option taken out."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == RESUME_FLAG or arg == RESUME_FLAG.replace("_", "-"):
            skip = True
        elif not arg.startswith((RESUME_FLAG + "=", RESUME_FLAG.replace("_", "-") + "=")):
            kept.append(arg)
    return shlex.join(["psgrpo", "train", *kept, RESUME_FLAG, "true"])


def interrupted_message(output_dir: str, argv: Sequence[str]) -> str:
    """The line printed after Ctrl-C: the newest complete checkpoint in ``output_dir`` and how to resume."""
    from psgrpo.checkpoints.atomic import last_complete_checkpoint

    newest, _ = last_complete_checkpoint(output_dir) if Path(output_dir).is_dir() else (None, [])
    if newest is None:
        return (
            f"interrupted; no complete checkpoint in {output_dir} yet, so a new run starts from the beginning: "
            "delete that folder or give a new --output_dir"
        )
    return f"interrupted; the newest complete checkpoint is {newest}; resume with: {resume_command(argv)}"


REPORT_TO_PACKAGES = {
    "azure_ml": ("is_azureml_available", "azureml-core"),
    "clearml": ("is_clearml_available", "clearml"),
    "codecarbon": ("is_codecarbon_available", "codecarbon"),
    "comet_ml": ("is_comet_available", "comet-ml"),
    "dagshub": ("is_dagshub_available", "dagshub"),
    "dvclive": ("is_dvclive_available", "dvclive"),
    "flyte": ("is_flytekit_available", "flytekit"),
    "kubeflow": ("is_kubeflow_available", "kubeflow"),
    "mlflow": ("is_mlflow_available", "mlflow"),
    "neptune": ("is_neptune_available", "neptune"),
    "swanlab": ("is_swanlab_available", "swanlab"),
    "tensorboard": ("is_tensorboard_available", "tensorboard"),
    "trackio": ("is_trackio_available", "trackio"),
    "wandb": ("is_wandb_available", "wandb"),
}
"""``--report_to`` name → (transformers' availability check in ``transformers.integrations``, the pip package)."""


def split_report_to(report_to: Sequence[str] | str | None) -> Sequence[str] | str | None:
    """``--report_to tensorboard,wandb`` as the list ``['tensorboard', 'wandb']`` (the command line takes one
    value; a YAML list works as it is); anything without a comma is returned unchanged."""
    entries = [report_to] if isinstance(report_to, str) else list(report_to or [])
    if not any("," in entry for entry in entries):
        return report_to
    return [name.strip() for entry in entries for name in entry.split(",")]  # '' stays, to be refused


def check_report_to(report_to: Sequence[str] | str | None) -> None:
    """Every ``--report_to`` integration is known and importable (transformers would fail after the model
    loaded and the held-out evaluation ran, with a 34-line traceback).

    Raises:
        ImportError: naming the integration, the package to install, and the installed alternatives.
        ValueError: an integration transformers does not know.
    """
    from transformers.integrations import integration_utils

    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    alone = [name for name in names if name in ("none", "all", "")]
    if alone and len(names) > 1:  # transformers refuses the mix in Trainer.__init__, after the model loaded
        raise ValueError(
            f"--report_to {','.join(names)}: {alone[0] or 'an empty name'!r} stands alone; name the trackers "
            "(e.g. --report_to tensorboard,wandb), or give 'none' or 'all' by itself"
        )
    installed = [
        name for name, (check, _) in REPORT_TO_PACKAGES.items() if getattr(integration_utils, check)()
    ]
    for name in names:
        if name in ("none", "all"):
            continue
        if name not in REPORT_TO_PACKAGES:
            raise ValueError(
                f"--report_to {name}: not an integration transformers knows; choose from "
                f"{', '.join(REPORT_TO_PACKAGES)}, or none"
            )
        if name not in installed:
            package = REPORT_TO_PACKAGES[name][1]
            alternatives = ", ".join([*installed, "none"])
            raise ImportError(
                f"--report_to {name}: the {package} package is not installed; `pip install {package}`, or report "
                f"to one that is: --report_to {alternatives}"
            )


def check_generation_options(temperature: float | None, max_completion_length: int | None) -> None:
    """``--temperature`` > 0 and ``--max_completion_length`` ≥ 1, in the user's terms (transformers would name
    ``do_sample`` and ``max_new_tokens``, options ``train`` does not have, after the model loaded)."""
    if temperature is not None and temperature <= 0:
        from psgrpo.config.checks import GREEDY_NOTE

        raise ValueError(
            f"--temperature {temperature:g}: {GREEDY_NOTE}. The held-out evaluation is already greedy"
        )
    if max_completion_length is not None and max_completion_length < 1:
        raise ValueError(
            f"--max_completion_length {max_completion_length}: a completion needs at least 1 token; give the "
            "most tokens a completion may have (the demo recipe uses 128)"
        )


def check_vllm(use_vllm: bool) -> None:
    """With ``--use_vllm true``, vLLM must be importable (found without importing it: that takes seconds)."""
    import importlib.util

    from psgrpo.eval.vllm_backend import VLLM_INSTALL

    if use_vllm and importlib.util.find_spec("vllm") is None:
        raise ImportError(
            f"--use_vllm true: vLLM is not installed; `{VLLM_INSTALL}` in psgrpo's folder (Linux with a CUDA "
            "GPU), or leave --use_vllm false to generate with transformers"
        )


def check_chat_template(chat: bool, model_name_or_path: str | None, revision: str | None = None) -> None:
    """With ``--chat true``, the model's tokenizer (read without the weights; of ``revision``, the
    ``--model_revision`` that will load) must have a chat template."""
    if not chat:
        return
    from psgrpo.loading import load_tokenizer

    tokenizer = load_tokenizer(model_name_or_path, revision=revision)
    if not getattr(tokenizer, "chat_template", None):
        name = model_name_or_path or "the embedded checkpoint"
        raise ValueError(
            f"--chat true: the tokenizer of {name} has no chat template, so prompts cannot be written as chat "
            "messages; use --chat false (plain prompts), or an instruct model whose tokenizer has one"
        )


def prepare_dataset_source(dataset: str) -> None:
    """A ``--dataset`` read from the Hub (``gsm8k``, a Hub id): offline mode at once when the Hub does not answer
    (:func:`psgrpo.hub.prepare_hub_dataset`); nothing for the arith tasks and local files."""
    from psgrpo.data.arith import ARITH_VARIANTS
    from psgrpo.data.gsm8k import GSM8K_HUB_ID
    from psgrpo.hub import looks_like_local_path, prepare_hub_dataset

    if dataset in ARITH_VARIANTS or looks_like_local_path(dataset) or dataset.endswith((".jsonl", ".json")):
        return
    prepare_hub_dataset(GSM8K_HUB_ID if dataset == "gsm8k" else dataset)


SHARED_METHOD_OPTIONS = frozenset({"vps_answer_column"})
"""Prefixed options that other code reads whatever the method (``psgrpo inspect`` reads the gold answer column)."""

ALSO_READ_BY = {"segmenter": {"vps"}, "segmenter_kwargs": {"vps"}}
"""A method section's named options that another method reads too (``vps_boundaries: markers`` cuts at the
PS segmenter's step ends)."""


def other_methods_options(method: str, given: Collection[str], typed: Collection[str] = ()) -> dict[str, str]:
    """``option → its method`` for the options in ``given`` that carry another method's prefix (``ps_``, ``vps_``,
    ``tree_``, a registered method's own) and that ``method`` therefore ignores. An option belongs to the method
    with the longest matching prefix, so a method ``ps_v2`` with prefix ``ps_v2_`` owns ``ps_v2_alpha``.

    A section's options named without a prefix (``step_scorer``, ``segmenter`` …) count only where ``typed`` on
    the command line: recipes set them for every method (``--method vps --step_scorer arithmetic`` is warned,
    the GSM8K recipe's ``step_scorer: reference`` under ``--method vps`` is not)."""
    from psgrpo.methods import all_methods

    prefixes = sorted(
        (
            (prefix, spec.name)
            for spec in all_methods()
            for prefix in spec.section_fields
            if prefix.endswith("_")
        ),
        key=lambda item: -len(item[0]),
    )
    named = {
        field: spec.name for spec in all_methods() for field in spec.section_fields if not field.endswith("_")
    }
    unused = {}
    for option in sorted({*given, *typed}):
        owner = next((name for prefix, name in prefixes if option.startswith(prefix)), None)
        if owner is None and option in typed and option in named:
            owner = named[option]
        if owner is not None and owner != method and option not in SHARED_METHOD_OPTIONS:
            if method not in ALSO_READ_BY.get(option, ()):
                unused[option] = owner
    return unused


def check_compiled_generation_dtype(args: Any, model_args: Any) -> None:
    """``--compiled_generation true`` with autocast over weights of another dtype, on a transformers that
    cannot decode that with a static cache: refused before the model loads and the first evaluation runs
    (the trainer refuses it too, for Python users: :func:`psgrpo.generation.check_cache_dtype`)."""
    from psgrpo.generation import cache_dtype_error
    from psgrpo.loading import weights_dtype

    if not getattr(args, "compiled_generation", False) or args.use_vllm:
        return
    weights = weights_dtype(
        model_args.model_name_or_path, model_args.dtype, getattr(model_args, "model_revision", None)
    )
    error = cache_dtype_error(args.bf16, args.fp16, weights)
    if error is not None:
        raise ValueError(f"--compiled_generation true: {error}")


def check_reward_options(reward_funcs: Sequence[str], reward_weights: Sequence[float] | None) -> None:
    """The reward functions the command trains with (the config's: Python users may pass others to the trainer)
    named once each, and one weight per function; TRL finds either only after the model loaded."""
    repeated = sorted({name for name in reward_funcs if list(reward_funcs).count(name) > 1})
    if repeated:
        raise ValueError(
            f"--reward_funcs lists {', '.join(repeated)} more than once: name each function once"
        )
    if reward_weights is not None and len(reward_weights) != len(reward_funcs):
        raise ValueError(
            f"--reward_weights has {len(reward_weights)} value(s) for {len(reward_funcs)} reward function(s) "
            f"({' '.join(reward_funcs)}): give one weight per function, in the same order"
        )


def check_run_options(
    task: Any,
    args: Any,
    model_args: Any,
    sources: Mapping[str, str] | None = None,
    read_checkpoint: bool = True,
    prepare_dataset: bool = True,
) -> None:
    """The checks above on a parsed ``psgrpo train`` command line, before anything loads.

    Args:
        sources: ``option → the --config file that set it`` (not typed on the command line): an error about
            such an option names the file and the key (``recipe.yaml: temperature 0: …``) instead of a flag.
        read_checkpoint: read the checkpoint's tokenizer and config (``--chat``, ``--compiled_generation``);
            ``load_recipe`` passes False for a Hub checkpoint (it fetches nothing).
        prepare_dataset: probe the Hub for a Hub dataset (:func:`prepare_dataset_source`); False in
            ``load_recipe``, which reaches no network.
    """
    try:
        check_reward_options(args.reward_funcs, args.reward_weights)
        check_generation_options(args.temperature, args.max_completion_length)
        args.report_to = split_report_to(args.report_to)
        check_report_to(args.report_to)
        check_vllm(args.use_vllm)
        if read_checkpoint:
            check_chat_template(
                task.chat, model_args.model_name_or_path, getattr(model_args, "model_revision", None)
            )
        if read_checkpoint or model_args.dtype not in (None, "auto"):  # a named dtype reads nothing
            check_compiled_generation_dtype(args, model_args)
    except (ValueError, ImportError) as err:
        flag = re.match(r"--(\w+) ", str(err))
        source = (sources or {}).get(flag.group(1)) if flag else None
        if source is None:
            raise
        raise type(err)(f"{source}: {str(err)[2:]}") from None
    if prepare_dataset:
        prepare_dataset_source(task.dataset)
