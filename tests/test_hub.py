"""Local-looking names never reach the Hub; a Hub id offline fails at once and says how (psgrpo/hub.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.hub import (
    check_cached_when_offline,
    hub_error,
    hub_offline,
    looks_like_local_path,
    offline_hint,
)

HUB_PART = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True)


@pytest.mark.parametrize(
    "name",
    [
        "outputs/demo",
        "./demo",
        "../runs/x",
        "/abs/checkpoint",
        "~/models/x",
        "checkpoints/run-1",
        "a/b/c",
        "x/",
    ],
)
def test_local_looking_names(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert looks_like_local_path(name)


@pytest.mark.parametrize("name", ["Qwen/Qwen2.5-0.5B-Instruct", "gpt2", "openai/gsm8k", ""])
def test_hub_ids(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not looks_like_local_path(name)


def test_a_namespace_that_exists_here_is_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not looks_like_local_path("experiments/run7")
    (tmp_path / "experiments").mkdir()
    assert looks_like_local_path("experiments/run7")  # outputs written there, not a Hub user "experiments"


@given(namespace=HUB_PART, name=HUB_PART)
def test_namespace_name_is_a_hub_id_unless_the_namespace_is_local(namespace, name):
    # run from the repository root, whose folders (psgrpo, tests, docs ...) are local namespaces
    from pathlib import Path

    from psgrpo.hub import LOCAL_ROOTS

    local = namespace in LOCAL_ROOTS or Path(namespace).is_dir() or Path(f"{namespace}/{name}").exists()
    assert looks_like_local_path(f"{namespace}/{name}") == local
    assert looks_like_local_path(f"{namespace}/{name}/sub")  # a Hub id has at most one "/"


@pytest.mark.parametrize(
    ("value", "offline"), [("1", True), ("true", True), ("ON", True), ("0", False), ("", False)]
)
def test_hub_offline_reads_the_variable(value, offline, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_offline() is offline


def test_offline_hint_says_how_to_set_it_or_that_it_is_set(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert "export HF_HUB_OFFLINE=1" in offline_hint()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HF_HUB_OFFLINE is set" in offline_hint()


def test_uncached_hub_id_offline_is_refused_without_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        OSError, match="--model_name_or_path psgrpo-tests/no-such-model: not a local directory"
    ):
        check_cached_when_offline("psgrpo-tests/no-such-model", "--model_name_or_path")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    check_cached_when_offline("psgrpo-tests/no-such-model", "--model_name_or_path")  # online: left to the Hub


def test_hub_error_is_one_line_with_the_hint(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cause = OSError(
        "We couldn't connect to 'https://huggingface.co' to load the files,\nand couldn't find them\n"
    )
    message = str(hub_error("--model_name_or_path", "Qwen/Qwen2.5-0.5B-Instruct", cause))
    assert "\n" not in message
    assert message.startswith("--model_name_or_path Qwen/Qwen2.5-0.5B-Instruct: not a local directory")
    assert "couldn't connect" in message and "HF_HUB_OFFLINE=1" in message


def test_load_tokenizer_turns_a_hub_failure_into_one_line(monkeypatch):
    import transformers
    from hub_fakes import fake_hub

    from psgrpo.loading import load_tokenizer

    def unreachable(*args, **kwargs):
        raise OSError(
            "We couldn't connect to 'https://huggingface.co' to load this file.\nCheck your connection."
        )

    fake_hub(monkeypatch, why=None)  # the probe passes (no network in tests); the download then fails
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", unreachable)
    with pytest.raises(
        OSError, match=r"Qwen/Qwen2.5-0.5B-Instruct: not a local directory.*export HF_HUB_OFFLINE=1"
    ):
        load_tokenizer("Qwen/Qwen2.5-0.5B-Instruct")


def test_an_unreachable_hub_stops_a_hub_id_at_once_with_one_probe(monkeypatch):
    import huggingface_hub
    from hub_fakes import fake_hub

    from psgrpo.hub import check_hub_reachable

    probed = fake_hub(monkeypatch)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)
    for _ in range(2):
        with pytest.raises(OSError) as info:
            check_hub_reachable("psgrpo-tests/no-such-model", "--model_name_or_path")
        message = str(info.value)
        assert "\n" not in message and message.startswith("--model_name_or_path psgrpo-tests/no-such-model: ")
        assert "cannot be reached (ConnectError" in message and "export HF_HUB_OFFLINE=1" in message
    assert len(probed) == 1  # asked once per process, never retried


def test_an_unreachable_hub_loads_a_cached_model_offline(monkeypatch, caplog):
    import huggingface_hub
    from hub_fakes import fake_hub
    from huggingface_hub import constants

    from psgrpo.hub import check_hub_reachable, hub_offline

    fake_hub(monkeypatch)
    monkeypatch.setattr(
        huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: "/cache/config.json"
    )
    check_hub_reachable("Qwen/Qwen2.5-0.5B-Instruct", "--model_name_or_path")
    assert hub_offline() and constants.HF_HUB_OFFLINE
    assert "loaded from the local cache" in caplog.text


def test_a_reachable_hub_changes_nothing(monkeypatch):
    from hub_fakes import fake_hub

    from psgrpo.hub import check_hub_reachable, hub_offline

    probed = fake_hub(monkeypatch, why=None)
    check_hub_reachable("Qwen/Qwen2.5-0.5B-Instruct", "--model_name_or_path")
    assert probed and not hub_offline()
