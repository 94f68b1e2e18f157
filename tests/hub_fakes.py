"""A Hub that does not answer, for tests: no test touches the network, and offline mode does not leak."""

from __future__ import annotations

import pytest


def fake_hub(
    monkeypatch: pytest.MonkeyPatch, why: str | None = "ConnectError: [Errno -2] Name or service not known"
) -> list[str]:
    """Make :func:`psgrpo.hub.hub_reachable` answer ``why`` (``None``: reachable) and record each endpoint probed;
    ``HF_HUB_OFFLINE`` and the Hub libraries' offline flags are restored after the test."""
    import datasets.config
    from huggingface_hub import constants

    import psgrpo.hub

    probed: list[str] = []

    def probe(endpoint: str, timeout: float = psgrpo.hub.PROBE_TIMEOUT_S) -> str | None:
        probed.append(endpoint)
        return why

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", datasets.config.HF_HUB_OFFLINE)
    monkeypatch.setattr(psgrpo.hub, "_REACHABLE", {})
    monkeypatch.setattr(psgrpo.hub, "hub_reachable", probe)
    return probed
