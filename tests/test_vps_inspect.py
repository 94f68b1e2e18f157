"""The VPS inspect helper shows segments that tile the completion, with C_k and ΔC_k."""

from __future__ import annotations

import pytest

from psgrpo.data.arith import make_arith_dataset
from psgrpo.vps_inspect import inspect_confidence


def test_inspect_segments_tile_the_completion(tiny_model, char_tokenizer):
    row = make_arith_dataset("test", n=1)[0]
    report = inspect_confidence(
        tiny_model.eval(),
        char_tokenizer,
        row["prompt"],
        row["completion"],
        row["answer"],
        min_segment_tokens=3,
    )
    assert "".join(seg.text for seg in report.segments) == row["completion"]
    assert 1 <= len(report.segments) <= 4 and 0 < report.c0 <= 1
    for prev, seg in zip([None, *report.segments[:-1]], report.segments, strict=True):
        if seg.delta is not None:
            before = report.c0 if prev is None else prev.confidence
            assert seg.delta == pytest.approx(seg.confidence - before)
    assert "C_0 =" in str(report) and "ΔC_k" in str(report)
