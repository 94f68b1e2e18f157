"""docs/metrics.md lists every metric psgrpo logs: the names in the code (read from its source, fast) and
the names a one-step run of each method logs (slow), checked against the page's tables."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "metrics.md"
METRIC_PREFIXES = ("psgrpo/", "ps/", "vps/", "tree/", "diag/", "heldout/", "time/", "reward_norm/", "memory/")
"""Namespaces of the metrics psgrpo logs (TRL's own have none, or completions/, rewards/, clip_ratio/)."""


def page_patterns() -> list[str]:
    """Every name in the first column of the page's tables, ``<placeholder>`` read as ``*``."""
    names: list[str] = []
    for line in PAGE.read_text().splitlines():
        if line.startswith("| `"):
            first = line.split(" | ")[0]
            names += [re.sub(r"<[^>]+>", "*", name) for name in re.findall(r"`([^`]+)`", first)]
    return names


def documented(name: str, patterns: list[str]) -> bool:
    """Whether ``name`` (``*`` where the code fills a value in) is on the page, as itself or in a family."""
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(p, name) for p in patterns)


def _string_value(node: ast.AST, constants: dict[str, str]) -> str | None:
    """A string expression as text: constants resolved, anything computed as ``*``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, "*")
    if isinstance(node, ast.JoinedStr):
        parts = [
            _string_value(v.value if isinstance(v, ast.FormattedValue) else v, constants) for v in node.values
        ]
        return "".join(part or "*" for part in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string_value(node.left, constants), _string_value(node.right, constants)
        return None if left is None or right is None else left + right
    return None


def logged_names_in_source() -> dict[str, str]:
    """``metric name → file`` for every string of psgrpo's source that names a metric of :data:`METRIC_PREFIXES`."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "psgrpo").rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        parts = {  # pieces of a larger string expression: only the whole names a metric
            id(child)
            for node in ast.walk(tree)
            if isinstance(node, (ast.JoinedStr, ast.BinOp))
            for child in ast.iter_child_nodes(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)) and id(node) not in parts:
                text = _string_value(node, constants)
                if text and re.fullmatch(r"[a-z_]+/[\w*@/]+", text) and text.startswith(METRIC_PREFIXES):
                    if text.rstrip("*") not in METRIC_PREFIXES:  # a bare prefix names no metric
                        found.setdefault(text, str(path.relative_to(ROOT)))
    return found


def test_every_metric_named_in_the_source_is_on_the_page():
    names = logged_names_in_source()
    assert {"psgrpo/advantage_seconds", "ps/step_score_mean", "vps/c0_mean", "tree/depth"} <= set(names)
    assert "time/*_s" in names and "heldout/wall_seconds" in names  # built from constants
    patterns = page_patterns()
    missing = {name: path for name, path in names.items() if not documented(name, patterns)}
    assert not missing, f"metrics logged but missing from docs/metrics.md: {missing}"


def test_every_timed_phase_and_heldout_metric_is_on_the_page():
    from psgrpo.diagnostics.measures import BOUNDARY_PLACES
    from psgrpo.eval.metrics import ERROR_TYPES
    from psgrpo.timing import PHASES, metric_name

    patterns = page_patterns()
    expected = [metric_name(phase) for phase in PHASES] + [f"diag/boundary_{p}_frac" for p in BOUNDARY_PLACES]
    expected += [f"heldout/error_type/{t}" for t in ERROR_TYPES]
    text = PAGE.read_text()
    assert all(f"`{name}`" in text for name in expected if "error_type" not in name), expected
    assert all(documented(name, patterns) for name in expected)
    assert all(f"`{t}`" in text for t in ERROR_TYPES)


def test_the_held_out_metrics_are_on_the_page(tiny_model, char_tokenizer):
    """The keys a held-out evaluation returns (a real evaluation of a tiny model on two arith rows)."""
    from psgrpo.data.tasks import TaskConfig, load_task_split
    from psgrpo.eval.generation import evaluate_model
    from psgrpo.eval.heldout import PREFIX

    rows = load_task_split(TaskConfig(), "test", limit=2)
    keys = evaluate_model(tiny_model, char_tokenizer, rows, max_new_tokens=4)
    text = PAGE.read_text()
    assert not [key for key in keys if f"`{PREFIX}{key}`" not in text and "error_type" not in key]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["grpo", "ps", "vps", "tree"])
def test_every_metric_a_run_logs_is_on_the_page(method, tmp_path):
    """One optimizer step of ``method`` with every optional metric family on; each key logged is on the page."""
    from trainer_helpers import tiny_run_args

    from psgrpo import ProcessGRPOConfig, ProcessGRPOTrainer, load_task

    extra = {"step_scorer": "reference"} if method == "ps" else {}
    args = ProcessGRPOConfig(
        **tiny_run_args(tmp_path, method=method, diagnostics=True, phase_times=True, beta=0.04, **extra)
    )
    trainer = ProcessGRPOTrainer(
        model="embedded:arith", args=args, train_dataset=load_task("arith", split="train", limit=8)
    )
    trainer.train()
    keys = {key for record in trainer.state.log_history for key in record} - {"step"}
    assert f"{method}/process_share" in keys or method == "grpo"
    patterns = page_patterns()
    assert not sorted(key for key in keys if not documented(key, patterns))
