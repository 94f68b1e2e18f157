"""psgrpo/loading.py: where ``psgrpo eval`` and ``psgrpo diagnose`` put the model (a GPU when there is one)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

import psgrpo.loading
from psgrpo.commands.diagnose import diagnose
from psgrpo.commands.evaluate import run_eval
from psgrpo.loading import load_model_and_tokenizer, resolve_device


class Loaded(Exception):
    """Raised by the spy loader: the test stops where the model would load."""


@pytest.fixture()
def one_gpu(cuda_present, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.fixture()
def loader_spy(monkeypatch):
    """Replace the loader: record the keyword arguments, then stop."""
    seen: dict = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        raise Loaded

    monkeypatch.setattr(psgrpo.loading, "load_model_and_tokenizer", spy)
    return seen


def test_auto_is_the_gpu_when_torch_sees_one(one_gpu):
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cuda:0") == "cuda:0" and resolve_device("cpu") == "cpu"


def test_auto_is_the_cpu_without_a_gpu(no_accelerator):
    assert resolve_device("auto") == "cpu"


@pytest.mark.parametrize(
    "device, message",
    [
        ("cuda", "--device cuda: this machine has 0 CUDA device(s) visible to torch; use 'auto' or 'cpu'"),
        ("gpu", "--device 'gpu': not a device; use 'auto', 'cpu', 'cuda' or 'cuda:N'"),
        ("mps", "--device mps: torch sees no mps device here; use 'auto' or 'cpu'"),
        ("meta", "--device meta: meta tensors hold no values, nothing runs there; use 'auto' or 'cpu'"),
    ],
)
def test_a_device_this_machine_lacks_is_one_line(no_accelerator, device, message):
    with pytest.raises(ValueError) as err:
        resolve_device(device)
    assert str(err.value) == message


@pytest.mark.parametrize("device", ["hpu", "lazy", "xla:1"])
def test_a_device_type_this_torch_cannot_place_tensors_on_is_one_short_line(device):
    """Gaudi (hpu), XLA …: accepted where their torch extension sees one; here none does."""
    kind = device.split(":")[0]
    with pytest.raises(ValueError) as err:
        resolve_device(device)
    message = str(err.value)
    assert message.startswith(f"--device {device}: torch sees no {kind} device here (")
    assert message.endswith("); use 'auto' or 'cpu'") and "\n" not in message and len(message) < 220


def test_a_second_gpu_on_a_one_gpu_machine_is_refused(one_gpu):
    with pytest.raises(ValueError, match=r"--device cuda:1: this machine has 1 CUDA device\(s\)"):
        resolve_device("cuda:1")


def test_eval_and_diagnose_load_onto_the_gpu_on_a_gpu_machine(one_gpu, loader_spy, tmp_path):
    """The bug a GPU user would hit: eval decoded on the CPU because nothing moved the model."""
    with pytest.raises(Loaded):
        run_eval(["--max_eval_examples", "2"])
    assert loader_spy["device"] == "cuda"
    loader_spy.clear()
    with pytest.raises(Loaded):
        diagnose(["--problems", "2"])
    assert loader_spy["device"] == "cuda"


def test_eval_with_vllm_leaves_placement_to_vllm(one_gpu, tmp_path):
    """--backend vllm does not read --device: no check, so a --device typo does not block it."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed: this checks the line a machine without it prints")
    with pytest.raises(Exception, match="needs the vllm package"):  # its own line, not a --device error
        run_eval(["--backend", "vllm", "--device", "cuda:7", "--max_eval_examples", "2"])


def test_the_loader_moves_the_model_to_the_device_it_is_given():
    model, _ = load_model_and_tokenizer(None, device="meta")
    assert next(model.parameters()).device.type == "meta"
    model, _ = load_model_and_tokenizer(None)
    assert next(model.parameters()).device.type == "cpu"  # None: where transformers put it (train moves it)


@pytest.mark.parametrize("name", ["demo", "arith-hard", "gsm8k-qwen2.5-0.5b", "two-line yaml"])
def test_a_recipe_from_python_equals_what_train_builds_from_it(name, tmp_path):
    """The parse of ``psgrpo train --config NAME --step_scorer arithmetic --use_cpu true`` itself: the demo
    underneath (a two-line YAML keeps the demo's other values), overrides as the last layer."""
    from dataclasses import fields

    from trl import ModelConfig

    from psgrpo import load_recipe
    from psgrpo.config.parsing import ConfigParser
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.loading import with_default_recipe
    from psgrpo.methods import config_class

    if name == "two-line yaml":
        name = str(tmp_path / "mine.yaml")
        (tmp_path / "mine.yaml").write_text("method: vps\nvps_alpha: 0.8\n")
    parser = ConfigParser((TaskConfig, config_class(), ModelConfig), prog="psgrpo train")  # train's parser
    flags = ["--config", name, "--use_cpu", "true", "--step_scorer", "arithmetic"]
    by_train = parser.parse_args_and_config(with_default_recipe(flags))
    by_python = load_recipe(name, use_cpu=True, step_scorer="arithmetic")
    for cli, python in zip(by_train, by_python, strict=True):
        assert {f.name: getattr(cli, f.name) for f in fields(cli)} == {
            f.name: getattr(python, f.name) for f in fields(python)
        }
    assert by_python[1].step_scorer_kwargs == {}  # the recipe's reference weights went with its scorer


def test_a_bad_key_value_or_recipe_is_one_valueerror_naming_it():
    from psgrpo import load_recipe

    with pytest.raises(
        ValueError, match=r"unknown option\(s\) \['--lr', '1e-05'\] in load_recipe's keywords"
    ):
        load_recipe("demo", lr=1e-5)
    with pytest.raises(ValueError, match=r"^load_recipe's keywords: method: 'foo' is not allowed"):
        load_recipe("demo", method="foo")
    with pytest.raises(
        ValueError, match=r"^config file gsm8k does not exist; give a YAML file or a packaged"
    ):
        load_recipe("gsm8k")


_REVISION_SCRIPT = """
import sys
from types import SimpleNamespace
from psgrpo.loading import load_policy
args = SimpleNamespace(model_name_or_path="fake/tiny", dtype=None, attn_implementation=None, model_revision="v1")
model, tokenizer = load_policy(args)
from psgrpo.loading import weights_dtype
from psgrpo.preflight import check_chat_template
check_chat_template(True, "fake/tiny", "v1")  # v1's tokenizer has a chat template, main's none
print(weights_dtype("fake/tiny", "auto", "v1"), tokenizer.model_max_length)
"""


def test_model_revision_loads_the_tokenizer_of_that_revision_too(tmp_path, char_tokenizer, tiny_model):
    """--model_revision reached the weights only: the tokenizer came from `main`, and offline with only the
    revision cached the load was refused (a review, 2026-12-07); train's --chat and --compiled_generation checks
    read `main` too (a second review). A fake Hub cache with `main` and `v1`."""
    import copy
    import os
    import subprocess
    import sys

    tokenizer = copy.deepcopy(char_tokenizer)  # the fixture is shared
    repo = tmp_path / "hf" / "hub" / "models--fake--tiny"
    for ref, commit, length in (("main", "a" * 40, 512), ("v1", "b" * 40, 77)):
        snapshot = repo / "snapshots" / commit
        tiny_model.save_pretrained(snapshot)
        tokenizer.model_max_length = length
        tokenizer.chat_template = "{{ messages[0]['content'] }}" if ref == "v1" else None
        tokenizer.save_pretrained(snapshot)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PSGRPO_DEBUG": "1"}
    done = subprocess.run([sys.executable, "-c", _REVISION_SCRIPT], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "77"  # v1's tokenizer, not main's 512
    (repo / "refs" / "main").unlink()  # only v1 cached: still loads offline, and train's checks read v1 too
    done = subprocess.run([sys.executable, "-c", _REVISION_SCRIPT], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split()[-2:] == ["torch.float32", "77"], done.stderr[-2000:]


@pytest.mark.parametrize(
    ("keyword", "value", "expected"),
    [
        ("output_dir", "path", "/tmp/x/run"),
        ("learning_rate", "float64", 1e-5),
        ("max_steps", "int64", 5),
        ("report_to", "array", ["tensorboard"]),
        ("step_scorer_kwargs", "nested", {"correct_weight": 0.5, "reference_weight": 1.0}),
    ],
)
def test_paths_and_numpy_values_are_keyword_values(keyword, value, expected):
    """`output_dir=Path(...)`, `learning_rate=np.float64(1e-5)`, `max_steps=np.int64(5)` raised yaml's
    RepresenterError (a review, 2026-12-07): they are written as the str, float and int they stand for."""
    from pathlib import Path

    import numpy as np

    from psgrpo import load_recipe

    given = {
        "path": Path("/tmp/x/run"),
        "float64": np.float64(1e-5),
        "int64": np.int64(5),
        "array": np.array(["tensorboard"]),
        "nested": {"correct_weight": np.float32(0.5), "reference_weight": 1.0},
    }[value]
    _, config, _ = load_recipe("demo", **{keyword: given})
    got = getattr(config, keyword)
    assert got == expected and type(got) is type(expected)


def test_a_value_yaml_cannot_write_is_a_valueerror_naming_the_keyword():
    from psgrpo import load_recipe

    with pytest.raises(
        ValueError, match=r"^load_recipe's keywords: output_dir=<object object at .*>: a object"
    ):
        load_recipe("demo", output_dir=object())


@pytest.mark.parametrize(
    ("keywords", "option"),
    [
        ({"temperature": 0.0}, "--temperature 0: "),
        ({"max_completion_length": 0}, "--max_completion_length 0: "),
        ({"report_to": "tensorboard,none"}, "--report_to tensorboard,none: "),
        ({"report_to": "tensorboard,wandb"}, "--report_to wandb: "),
        ({"use_vllm": True}, "--use_vllm true: "),
        ({"chat": True}, "--chat true: "),
    ],
)
def test_load_recipe_refuses_what_train_refuses_before_loading(
    keywords, option, monkeypatch, capsys, tmp_path
):
    """temperature=0, max_completion_length=0, a comma-separated report_to, use_vllm without vLLM, chat with a
    tokenizer without a chat template: `psgrpo train` refuses them in one line, load_recipe accepted them and the
    trainer failed later with a long traceback (a review, 2026-12-07). The same words, naming the keyword."""
    import importlib.util

    from transformers.integrations import integration_utils

    from psgrpo import load_recipe
    from psgrpo.commands.cli import main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else find_spec(name, *a)
    )
    monkeypatch.setattr(integration_utils, "is_wandb_available", lambda: False)
    with pytest.raises(ValueError) as refused:
        load_recipe("demo", **keywords)
    message = str(refused.value)
    assert message.startswith(f"load_recipe's keywords: {option[2:]}") and "\n" not in message
    (name, value), *_ = keywords.items()
    flag = ["--" + name, str(value).lower() if isinstance(value, bool) else str(value)]
    monkeypatch.delenv("PSGRPO_DEBUG", raising=False)
    assert main(["train", *flag, "--output_dir", str(tmp_path / "run")]) == 2
    said = capsys.readouterr().err
    assert f"{option}{message.split(option[2:], 1)[1]}" in said  # train's own words


def test_a_comma_separated_report_to_is_split_as_train_splits_it(monkeypatch):
    from transformers.integrations import integration_utils

    from psgrpo import load_recipe

    monkeypatch.setattr(integration_utils, "is_wandb_available", lambda: True)
    _, config, _ = load_recipe("demo", report_to="tensorboard,wandb")
    assert config.report_to == ["tensorboard", "wandb"]


def test_load_recipe_checks_the_chat_template_for_a_hub_dataset_too(monkeypatch):
    """The check was tied to a local dataset: with `dataset="gsm8k"` (a Hub one) a checkpoint on disk without a
    chat template passed (a review, 2026-12-07). No network is probed for the dataset either way."""
    import psgrpo.preflight
    from psgrpo import load_recipe

    monkeypatch.setattr(psgrpo.preflight, "prepare_dataset_source", lambda dataset: pytest.fail("probed"))
    with pytest.raises(
        ValueError, match=r"^load_recipe's keywords: chat true: the tokenizer of .* no chat template"
    ):
        load_recipe("demo", chat=True, dataset="gsm8k")
