"""The package's shape: no import cycle at module level, no module over 450 lines, the CLI imported only by commands.

Module-level imports are read from the source with ``ast`` (imports inside functions, which
run later, and under ``TYPE_CHECKING`` are not edges), so the check costs no import of torch.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "psgrpo"
MAX_LINES = 450


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(name: str) -> set[str]:
    """The psgrpo modules ``name`` imports when it is itself imported (``from a import b``: ``a``, and ``a.b`` if a module)."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and not _is_type_checking(node):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody
        elif isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}
    return {t for t in targets if t in MODULES and t != name}


GRAPH = {name: module_level_imports(name) for name in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, …, a]``, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_finds_one_and_only_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_between_psgrpo_modules():
    assert "psgrpo.config" in GRAPH["psgrpo.trainer"]  # the reader sees real edges
    assert find_cycle(GRAPH) is None, f"import cycle: {' → '.join(find_cycle(GRAPH) or [])}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_at_most_450_lines(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]} has {lines} lines (aim ≤ {MAX_LINES}): split it by stage"


def test_only_the_commands_import_the_cli():
    importers = sorted(
        name
        for name, path in MODULES.items()
        if not name.startswith("psgrpo.commands")
        and name != "psgrpo.__main__"  # python -m psgrpo
        and (
            "psgrpo.commands.cli" in path.read_text() or "from psgrpo.commands import cli" in path.read_text()
        )
    )
    assert importers == []
