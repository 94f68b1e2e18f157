"""Loading checkpoints and recipes: the embedded default, local directories, hub ids.

``None`` as a model path means the embedded warm-started tiny checkpoint
(``psgrpo/tiny/checkpoint``); no ``--config`` means the embedded demo recipe
(``psgrpo/recipes/demo.yaml``). Every command loads through here, so a bad path fails the same
way everywhere: with the path and what was expected, before anything else is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psgrpo.hub import check_hub_reachable, hub_error, looks_like_local_path

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
DEFAULT_RECIPE = RECIPES_DIR / "demo.yaml"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
MODEL_CONFIG_FILES = ("config.json", "adapter_config.json")
"""A checkpoint directory holds one of these (a model's config, or a PEFT adapter's)."""


def with_default_recipe(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--config <demo recipe>`` in front: a user's ``--config`` files layer over the demo's
    values as flags layer over them (:class:`psgrpo.config.parsing.ConfigParser` reads every ``--config`` in order)."""
    return ["--config", str(DEFAULT_RECIPE), *argv]


def checkpoint_path(
    model_name_or_path: str | None,
    option: str = "--model_name_or_path",
    run_dir_ok: bool = False,
    hub_example: str = "Qwen/Qwen2.5-0.5B-Instruct",
    revision: str | None = None,
) -> str:
    """The checkpoint to load: the given path or hub id, the embedded checkpoint for ``None``, or a
    committed one for ``embedded:NAME`` (:func:`psgrpo.tiny.resolve_checkpoint`).

    A local-looking name (:func:`psgrpo.hub.looks_like_local_path`: ``outputs/demo``, ``./x``, absolute)
    is never sent to the Hub; a Hub id with ``HF_HUB_OFFLINE`` set must be in the local cache, and without
    it the Hub must answer (or the id be cached): :func:`psgrpo.hub.check_hub_reachable`.
    ``option`` names the option in messages, ``hub_example`` the Hub id they suggest (a PRM for a step scorer's
    model). ``run_dir_ok``: a run folder that holds only ``checkpoint-N`` folders is accepted (``psgrpo eval``
    and ``diagnose`` then take its newest checkpoint). ``revision``: the Hub revision that will load
    (``--model_revision``; ``None``: the default branch), the one the cache must hold offline.

    Raises:
        FileNotFoundError: when ``model_name_or_path`` is a filesystem path that does not exist.
        OSError: a Hub id missing from the cache while ``HF_HUB_OFFLINE`` is set or the Hub cannot be reached.
        ValueError: an unknown ``embedded:`` name.
    """
    from psgrpo.tiny import EMBEDDED_PREFIX, resolve_checkpoint

    if model_name_or_path is None or model_name_or_path.startswith(EMBEDDED_PREFIX):
        return resolve_checkpoint(model_name_or_path)
    if looks_like_local_path(model_name_or_path):
        local = Path(model_name_or_path).expanduser()
        if not local.exists():
            trained = f" (psgrpo train --output_dir {model_name_or_path} writes one there)"
            raise FileNotFoundError(
                f"{option} {model_name_or_path}: no such checkpoint directory"
                f"{trained if option == '--model_name_or_path' else ''}; give a checkpoint directory "
                f"(config.json + weights + tokenizer) or a Hub id such as {hub_example}"
            )
        if local.is_file():
            raise NotADirectoryError(
                f"{option} {model_name_or_path}: is a file; give the checkpoint directory that holds the model "
                f"(config.json + weights + tokenizer), such as {local.parent}"
            )
        if not any((local / name).exists() for name in MODEL_CONFIG_FILES):
            checkpoints = sorted(p.name for p in local.glob("checkpoint-*") if p.is_dir())
            ours = option == "--model_name_or_path"
            if checkpoints and not (run_dir_ok and ours):
                raise FileNotFoundError(
                    f"{option} {model_name_or_path}: a run folder without a final model; give one of its "
                    f"checkpoints ({', '.join(checkpoints[-3:])})"
                )
            if not checkpoints and not any(local.glob("partial-checkpoint-*")):
                hint = (
                    "a psgrpo train --output_dir, one of its checkpoint-N folders"
                    if ours
                    else "a model folder"
                )
                raise FileNotFoundError(
                    f"{option} {model_name_or_path}: not a checkpoint directory (no "
                    f"{' / '.join(MODEL_CONFIG_FILES)}); give {hint}, or a Hub id"
                )
        return str(local)
    check_hub_reachable(
        model_name_or_path, option, revision=revision
    )  # offline: one line at once, not retries
    return model_name_or_path


def load_tokenizer(model_name_or_path: str | None, revision: str | None = None):
    """Load a checkpoint's tokenizer (pad token = EOS when it has none); ``None`` means the embedded one;
    ``revision``: the Hub revision, as the weights' (``--model_revision``).

    Raises:
        ValueError with the path when a local checkpoint has no tokenizer files.
    """
    from transformers import AutoTokenizer

    path = checkpoint_path(model_name_or_path, revision=revision)
    local = Path(path)
    if local.is_dir() and not any((local / name).exists() for name in TOKENIZER_FILES):
        raise ValueError(
            f"checkpoint {path} has no tokenizer (no {' / '.join(TOKENIZER_FILES)}): save it with "
            "tokenizer.save_pretrained(path) next to the model"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **({"revision": revision} if revision else {}))
    except OSError as err:  # a Hub id that could not be fetched: one line, with the offline hint
        if local.exists():
            raise
        raise hub_error("--model_name_or_path", path, err) from err
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


DEVICE_HELP = (
    "Where the model runs: 'auto' (default: the first GPU if torch sees one, else the CPU), 'cpu', 'cuda', "
    "'cuda:1' …"
)


def resolve_device(device: str, option: str = "--device") -> str:
    """The torch device string ``device`` names, ``'auto'`` meaning ``cuda`` when available else ``cpu``.

    Called before anything loads, so a device this machine lacks is one line.

    Raises:
        ValueError naming ``option`` for a string torch does not parse, a GPU this machine lacks, ``meta``
        (weights that hold no values), or a device type this torch build cannot place a tensor on.
    """
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"{option} {device!r}: not a device; use 'auto', 'cpu', 'cuda' or 'cuda:N'"
        ) from None
    if parsed.type == "cuda":
        found = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if found == 0 or (parsed.index or 0) >= found:
            raise ValueError(
                f"{option} {device}: this machine has {found} CUDA device(s) visible to torch; "
                "use 'auto' or 'cpu'"
            )
    elif parsed.type in ("mps", "xpu"):  # torch.backends.mps / torch.xpu say whether this machine has one
        backend = torch.backends.mps if parsed.type == "mps" else getattr(torch, "xpu", None)
        if backend is None or not backend.is_available():
            raise ValueError(
                f"{option} {device}: torch sees no {parsed.type} device here; use 'auto' or 'cpu'"
            )
    elif parsed.type == "meta":
        raise ValueError(
            f"{option} {device}: meta tensors hold no values, nothing runs there; use 'auto' or 'cpu'"
        )
    elif parsed.type != "cpu":  # hpu, xla …: usable where their torch extension is installed and sees one
        try:
            torch.empty(0, device=parsed)
        # RuntimeError, ImportError (torch.hpu …), AssertionError: each torch build says it its own way
        except Exception as err:
            reason = (str(err).strip() or type(err).__name__).splitlines()[0].split(". ")[0][:120]
            raise ValueError(
                f"{option} {device}: torch sees no {parsed.type} device here ({reason}); use 'auto' or 'cpu'"
            ) from None
    return device


def load_recipe(name: str = "demo", **overrides: Any) -> tuple[Any, Any, Any]:
    """A recipe as ``(task, config, model_config)``: what ``psgrpo train --config NAME`` builds, for Python.

    The same parse as the command line's: the demo recipe underneath, ``name`` over it, then ``overrides``
    as one more layer (so ``step_scorer="arithmetic"`` drops the recipe's reference-scorer keyword
    arguments, as ``--step_scorer arithmetic`` does), with the checks of that parse (names, types,
    choices, ranges) and ``psgrpo train``'s checks of the options before anything loads (reading a local or
    embedded checkpoint's tokenizer and config, never the Hub); not its checks of the output folder or the data.

    Args:
        name: a packaged recipe's short name (``demo``, ``arith-hard``, ``gsm8k-qwen2.5-0.5b``) or a
            YAML file's path.
        overrides: fields of any of the three configs, e.g. ``method="ps", output_dir="outputs/x"``.

    Returns:
        :class:`~psgrpo.data.tasks.TaskConfig`, :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`
        and TRL's ``ModelConfig`` (``model_name_or_path``, ``dtype``, ``attn_implementation`` …; load the
        model with them, e.g. :func:`load_policy`).

    Raises:
        ValueError: an unknown recipe, a key no config has, a value that is no YAML value, or a bad value
            (the message names it), including the values ``psgrpo train`` refuses before anything loads
            (``temperature=0``, ``max_completion_length=0``, an unknown or uninstalled ``report_to``,
            ``use_vllm`` without vLLM, ``chat`` with a local tokenizer that has no chat template), in train's
            words. A missing package is a :class:`MissingSupportError`, an ``ImportError`` too, as in train.
    """
    import tempfile

    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser, resolve_config
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.methods import config_class

    parser = ConfigParser((TaskConfig, config_class(), ModelConfig), prog="psgrpo.load_recipe")
    with tempfile.TemporaryDirectory() as folder:
        layers = ["--config", str(resolve_config(name))]
        extra = Path(folder) / "overrides.yaml"
        if overrides:
            extra.write_text(_overrides_yaml(overrides))
            layers += ["--config", str(extra)]
        try:
            task, config, model_config = parser.parse_args_and_config(with_default_recipe(layers))
        except ValueError as err:  # name the keyword arguments, not the temporary file that carried them
            raise ValueError(
                str(err).replace(str(Path(folder) / "overrides.yaml"), "load_recipe's keywords")
            ) from None
        except SystemExit as stop:  # argparse's own refusal (printed above): a ValueError for Python callers
            raise ValueError(f"recipe {name!r} with {overrides}: refused (see the message above)") from stop
        sources = {
            option: "load_recipe's keywords" if source == str(extra) else source
            for option, source in parser.file_sources().items()
        }
    _check_recipe_options(task, config, model_config, sources)
    parser.log_pending_notes()
    return task, config, model_config


class MissingSupportError(ValueError, ImportError):
    """:func:`load_recipe`'s refusal of an option whose package is not installed (``report_to="wandb"``,
    ``use_vllm=True``): a ``ValueError`` as its docstring promises, and the ``ImportError`` ``psgrpo train`` raises."""


def _plain_value(value: Any) -> Any:
    """``value`` with what YAML's safe dumper cannot write made plain, in lists, tuples and dicts too:
    a path (``os.PathLike``) as its string, a numpy scalar or array as Python's (``np.float64(1e-5)`` → ``1e-05``)."""
    import os

    if isinstance(value, os.PathLike):
        return os.fsdecode(value)
    if type(value).__module__.partition(".")[0] == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {_plain_value(key): _plain_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_value(item) for item in value]
    return value


def _overrides_yaml(overrides: dict[str, Any]) -> str:
    """:func:`load_recipe`'s keywords as one YAML layer (:func:`_plain_value` each).

    Raises:
        ValueError: naming the keyword whose value YAML cannot write (an object, a set …).
    """
    import yaml

    plain = {key: _plain_value(value) for key, value in overrides.items()}
    for key, value in plain.items():
        try:
            yaml.safe_dump({key: value})
        except yaml.YAMLError:
            raise ValueError(
                f"load_recipe's keywords: {key}={overrides[key]!r}: a {type(overrides[key]).__name__} is no "
                "recipe value; give a str, number, bool, None, or a list or dict of them"
            ) from None
    return yaml.safe_dump(plain)


def _check_recipe_options(task: Any, config: Any, model_config: Any, sources: dict[str, str]) -> None:
    """``psgrpo train``'s checks of its options that load nothing (:func:`psgrpo.preflight.check_run_options`),
    reading the checkpoint's tokenizer and config only where it is on disk, and probing no Hub dataset (no
    network); an error about an option a recipe file or a keyword set names it (``load_recipe's keywords:
    temperature 0: …``).

    Raises:
        ValueError (:class:`MissingSupportError` for a package that is not installed).
    """
    from psgrpo.preflight import check_run_options
    from psgrpo.tiny import EMBEDDED_PREFIX

    model = model_config.model_name_or_path
    on_disk = (
        model is None
        or model.startswith(EMBEDDED_PREFIX)
        or (
            looks_like_local_path(model)
            and Path(model).expanduser().is_dir()
            and any((Path(model).expanduser() / name).exists() for name in TOKENIZER_FILES)
        )
    )
    try:
        check_run_options(task, config, model_config, sources, read_checkpoint=on_disk, prepare_dataset=False)
    except ImportError as err:
        raise MissingSupportError(str(err)) from None


def weights_dtype(model_name_or_path: str | None, dtype: str | None, revision: str | None = None) -> Any:
    """The ``torch.dtype`` the weights will load in, found without loading them; ``None`` if unknown.

    ``dtype`` itself when it names one; for ``None`` or ``'auto'`` (transformers then takes the
    checkpoint's own) the ``dtype`` / ``torch_dtype`` of its ``config.json`` when that file is on disk:
    a local or embedded checkpoint, or a Hub one already in the cache at ``revision`` (``--model_revision``;
    nothing is downloaded).
    """
    import json

    import torch

    if dtype not in (None, "auto"):
        return getattr(torch, dtype, None)
    path = checkpoint_path(model_name_or_path, revision=revision)
    config = Path(path) / "config.json"
    if not config.is_file():
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(path, "config.json", revision=revision)
        if not isinstance(cached, str):
            return None
        config = Path(cached)
    try:
        values = json.loads(config.read_text())
    except (OSError, ValueError):
        return None
    name = values.get("dtype") or values.get("torch_dtype")
    return getattr(torch, name, None) if isinstance(name, str) else None


def load_model_and_tokenizer(
    model_name_or_path: str | None, dtype: str | None = None, device: str | None = None, **kwargs: Any
):
    """Load a causal LM and its tokenizer; ``None`` means the embedded checkpoint.

    ``device`` (a :func:`resolve_device` result) is where the model is moved after loading; ``None``
    leaves it where transformers put it (the CPU): ``train`` moves it itself.

    Raises:
        FileNotFoundError for a local path that does not exist; ValueError with the path when the
        checkpoint lacks a tokenizer.
    """
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(model_name_or_path, revision=kwargs.get("revision"))
    path = checkpoint_path(model_name_or_path, revision=kwargs.get("revision"))
    torch_dtype = getattr(torch, dtype) if dtype not in (None, "auto") else dtype
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs)
    if device is not None:
        model.to(device)
    return model, tokenizer


def load_policy(model_args: Any, trust_remote_code: bool = False):
    """:func:`load_model_and_tokenizer` with the options of TRL's ``ModelConfig`` (``train``, ``inspect``)."""
    return load_model_and_tokenizer(
        model_args.model_name_or_path,
        dtype=model_args.dtype,
        attn_implementation=model_args.attn_implementation,
        revision=model_args.model_revision,
        trust_remote_code=trust_remote_code,
    )
