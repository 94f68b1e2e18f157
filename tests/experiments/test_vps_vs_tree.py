"""experiments/vps_vs_tree.py: vps's ΔC against the tree's ΔV on the same tree-sampled completions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

RUNS = Path(__file__).resolve().parents[2] / "experiments" / "runs"


@pytest.fixture(scope="module")
def vvt(import_experiment):
    return import_experiment("vps_vs_tree")


def test_summary_by_hand(vvt):
    Node = vvt.Node
    nodes = [
        Node(0, -0.5, -0.2, True),
        Node(0, 0.5, 0.1, False),
        Node(1, 0.0, 0.3, None),  # ΔV = 0 and no label: counted, in neither AUC
        Node(1, -1.0, 0.4, False),
    ]
    report = vvt.summarize(nodes)
    assert report["nodes"] == 4 and report["value_moved_frac"] == 0.75
    # pairs within a level only: level 0 ranks −0.2 (ΔV < 0) below 0.1; level 1 has no node with ΔV > 0
    assert report["auc_dc_vs_dv_sign"] == 1.0
    assert report["labelled_nodes"] == 3
    assert report["auc_dc_vs_verifier"] == 1.0  # the wrong node's ΔC −0.2 is below 0.1 and 0.4
    assert (
        report["auc_dv_vs_verifier"] == 1.0
    )  # level 0: ΔV −0.5 below 0.5 (the level-1 node has no wrong partner)
    assert math.isnan(vvt.summarize([Node(0, 1.0, 0.0, None)])["auc_dc_vs_dv_sign"])
    assert "| level 0 |" in vvt.markdown({"level 0": report})


@pytest.fixture
def two_levels(vvt):
    """Two nodes per level whose ΔC ranks ΔV's sign perfectly within each level, not pooled."""
    Node = vvt.Node
    return [
        Node(0, -0.5, -0.2, None),
        Node(0, 0.5, 0.0, None),
        Node(1, -0.3, 0.5, None),
        Node(1, 0.2, 0.9, None),
    ]


def test_auc_pairs_nodes_of_one_level_only(vvt, two_levels):
    """Level 0 ranks perfectly, level 1 perfectly too; pooled, a level-1 node with ΔV < 0 but a large ΔC would
    outrank level-0 nodes. Within levels the AUC is 1, with a standard error that shrinks with more pairs."""
    nodes = two_levels
    report = vvt.summarize(nodes)
    assert report["auc_dc_vs_dv_sign"] == 1.0
    pooled, _ = vvt.auc([n.delta_c for n in nodes], [n.delta_v < 0 for n in nodes])
    assert pooled == 0.75
    a, se = vvt.auc([0.1, 0.2, 0.3, 0.4], [True, True, False, False])
    assert a == 1.0 and se == 0.0
    a, se = vvt.auc([0.1, 0.3, 0.2, 0.4], [True, True, False, False])
    assert a == 0.75 and 0 < se < 0.5


def test_float_rounding_of_equal_means_is_no_gain(vvt):
    """Means of equal rewards over 4 and 8 leaves differ by about 6e-8: such a node has ΔV = 0, so it is
    left out of the sign AUC and ties (½) in the verifier AUC instead of ranking by its rounding."""
    Node = vvt.Node
    nodes = [
        Node(0, -6e-8, 0.5, True),  # rounding: no sign, ties with the next one for the verifier AUC
        Node(0, 3e-8, 0.1, False),
        Node(0, -0.5, -0.2, True),
        Node(0, 0.5, 0.1, False),
    ]
    report = vvt.summarize(nodes)
    assert report["value_moved_frac"] == 0.5
    assert report["auc_dc_vs_dv_sign"] == 1.0
    # ΔV as scored: 0 (wrong), 0 (right), −0.5 (wrong), 0.5 (right): of 4 pairs 3 ranked, 1 tied
    assert report["auc_dv_vs_verifier"] == pytest.approx(0.875)


def test_from_json_summarises_the_kept_nodes_without_sampling(vvt, two_levels, tmp_path, capsys):
    kept = tmp_path / "vvt.json"
    kept.write_text(
        json.dumps({"args": {"tree_branching": [2, 2, 2]}, "nodes": [vars(n) for n in two_levels]})
    )
    report = vvt.main(["--from_json", str(kept)])
    assert list(report) == ["inner levels", "level 0", "level 1"]
    assert report["level 0"]["auc_dc_vs_dv_sign"] == 1.0 and report["level 1"]["auc_dc_vs_dv_sign"] == 1.0
    assert "| inner levels | 4 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text", ["not json", '{"nodes": []}', '{"args": {"tree_branching": [2, 2]}, "nodes": [{"x": 1}]}']
)
def test_from_json_refuses_a_file_this_script_did_not_write(vvt, tmp_path, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(SystemExit, match="--from_json .*bad.json: not an output of this script"):
        vvt.main(["--from_json", str(bad)])


def test_from_json_names_a_missing_file(vvt, tmp_path, capsys):
    with pytest.raises(SystemExit):
        vvt.parse_args(["--from_json", str(tmp_path / "missing.json")])
    assert "--from_json" in capsys.readouterr().err


@pytest.mark.parametrize("prompts", ["0", "12"])
def test_prompts_must_fill_whole_batches(vvt, prompts):
    with pytest.raises(SystemExit):
        vvt.parse_args(["--prompts", prompts])


@pytest.mark.slow
def test_end_to_end_on_the_embedded_default(vvt, tmp_path, capsys):
    out = tmp_path / "report.json"
    report = vvt.main(
        ["--config", "demo", "--prompts", "8", "--tree_segment_tokens", "20", "--output", str(out)]
    )
    assert set(report) == {"inner levels", "level 0", "level 1"}
    assert report["level 0"]["nodes"] == 8 * 2  # two roots per prompt
    assert report["inner levels"]["nodes"] == report["level 0"]["nodes"] + report["level 1"]["nodes"]
    for row in report.values():
        for key in ("auc_dc_vs_dv_sign", "auc_dc_vs_verifier", "auc_dv_vs_verifier"):
            assert math.isnan(row[key]) or 0.0 <= row[key] <= 1.0
    assert json.loads(out.read_text())["report"]["level 0"]["nodes"] == 16
    assert "| inner levels |" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["arith-hard", "arith-hard-lines", "demo"])
def test_the_kept_nodes_give_the_published_tables(vvt, name):
    """experiments/runs/vps-vs-tree/<name>.json: its nodes, summarised today, give the report stored beside them."""
    kept = json.loads((RUNS / "vps-vs-tree" / f"{name}.json").read_text())
    report = vvt.main(["--from_json", str(RUNS / "vps-vs-tree" / f"{name}.json")])
    assert_same_report(report, kept["report"])


REL_TOLERANCE = 1e-9
"""Summaries recomputed on another machine (a GPU image's numpy and BLAS) differ in the last digits
of their means; counts and keys must be identical."""


def assert_same_report(got, want, where: str = "report") -> None:
    """``got == want`` with floats equal to :data:`REL_TOLERANCE` (relative) and everything else exact."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            assert_same_report(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_report(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=REL_TOLERANCE, abs=1e-12, nan_ok=True), where
    else:
        assert got == want, where


def test_the_report_comparison_allows_the_last_digits_only():
    assert_same_report({"a": [1, 0.1 + 0.2], "n": 3}, {"a": [1, 0.3], "n": 3})
    for wrong in ({"a": [1, 0.3001], "n": 3}, {"a": [1, 0.3], "n": 4}, {"a": [1, 0.3]}):
        with pytest.raises(AssertionError):
            assert_same_report(wrong, {"a": [1, 0.3], "n": 3})
