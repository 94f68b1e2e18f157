"""benchmarks/bench_tree_tokens.py on the smallest settings: tree generates fewer tokens per group than grpo."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # trains grpo and tree for several steps: `make test-fast` skips it


def test_tree_run_counts_the_tokens_it_generated(import_benchmark, tmp_path):
    """Two steps (one measured) of each method, in this process (~10 s); G = 8, a [2, 2, 2] tree of 16-token segments."""
    bench = import_benchmark("bench_tree_tokens")
    tree = {"tree_segment_tokens": 16}
    grpo = bench.run("grpo", 2, 8, tree, str(tmp_path / "grpo"))
    ours = bench.run("tree", 2, 8, tree, str(tmp_path / "tree"))
    assert grpo["ratio"] == 1.0 and grpo["generated"] == pytest.approx(8 * grpo["tokens"])
    # a [2, 2, 2] tree never decodes more than its leaves hold, and shares its first two segments' tokens
    assert 0 < ours["ratio"] < 1 and ours["generated"] < 8 * ours["tokens"]
    assert ours["generated"] == pytest.approx(ours["ratio"] * 8 * ours["tokens"], rel=0.05)
    assert ours["step_time"] > 0 and grpo["step_time"] > 0
