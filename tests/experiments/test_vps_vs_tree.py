"""experiments/vps_vs_tree.py: vps's ΔC against the tree's ΔV on the same tree-sampled completions."""

from __future__ import annotations

import json
import math

import pytest


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


def test_auc_pairs_nodes_of_one_level_only(vvt):
    """Level 0 ranks perfectly, level 1 perfectly too; pooled, a level-1 node with ΔV < 0 but a large ΔC would
    outrank level-0 nodes. Within levels the AUC is 1, with a standard error that shrinks with more pairs."""
    Node = vvt.Node
    nodes = [
        Node(0, -0.5, -0.2, None),
        Node(0, 0.5, 0.0, None),
        Node(1, -0.3, 0.5, None),
        Node(1, 0.2, 0.9, None),
    ]
    report = vvt.summarize(nodes)
    assert report["auc_dc_vs_dv_sign"] == 1.0
    pooled, _ = vvt.auc([n.delta_c for n in nodes], [n.delta_v < 0 for n in nodes])
    assert pooled == 0.75
    a, se = vvt.auc([0.1, 0.2, 0.3, 0.4], [True, True, False, False])
    assert a == 1.0 and se == 0.0
    a, se = vvt.auc([0.1, 0.3, 0.2, 0.4], [True, True, False, False])
    assert a == 0.75 and 0 < se < 0.5


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
