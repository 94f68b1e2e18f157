"""metrics.jsonl: a resumed run drops what the stopped run logged after its checkpoint, so each step is logged once."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

from psgrpo.metrics_log import METRICS_FILE, JsonlMetricsCallback, keep_records_through, read_metrics


def _write(path: Path, steps: list[int], cut: bool = False) -> None:
    lines = [json.dumps({"step": step, "loss": step / 10}) for step in steps]
    path.write_text("\n".join(lines) + "\n" + ('{"step": 9, "lo' if cut else ""))


def test_records_after_the_checkpoint_step_and_a_cut_last_line_go(tmp_path):
    path = tmp_path / METRICS_FILE
    _write(path, [0, 1, 2, 3, 4], cut=True)  # killed at step 5 while writing; checkpoint-2 is what resumes
    assert keep_records_through(path, 2) == 3  # steps 3, 4 and the cut line
    assert [r["step"] for r in read_metrics(tmp_path)] == [0, 1, 2]
    assert keep_records_through(path, 2) == 0  # nothing left to drop: the file is left as it is
    assert not list(tmp_path.glob(".*"))  # the staged copy was renamed over the file


def test_the_callback_trims_only_when_a_run_resumes_and_only_on_the_main_process(tmp_path, caplog):
    path = tmp_path / METRICS_FILE
    callback = JsonlMetricsCallback(path)
    _write(path, [1, 2, 3])
    callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=0), None)
    callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=False, global_step=1), None)
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3]  # a fresh start, another rank: untouched
    with caplog.at_level(logging.INFO, logger="psgrpo"):
        callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=1), None)
    assert [r["step"] for r in read_metrics(tmp_path)] == [1]
    assert "dropped 2 record(s) logged after step 1" in caplog.text
    state = SimpleNamespace(is_world_process_zero=True, global_step=2)
    callback.on_log(None, state, None, logs={"loss": 0.5})  # the replay logs step 2 once
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2]
