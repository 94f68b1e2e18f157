"""benchmarks/profile_step.py: a profiled short vps run prints psgrpo's own functions."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.slow
def test_profile_prints_the_vps_signal(import_benchmark, monkeypatch, capsys):
    profile_step = import_benchmark("profile_step")
    argv = ["profile_step.py", "--method", "vps", "--steps", "1", "--length", "8", "--lines", "200"]
    monkeypatch.setattr(sys, "argv", argv)
    profile_step.main()
    out = capsys.readouterr().out
    assert "psgrpo/vps/signal.py" in out and "cumtime" in out
