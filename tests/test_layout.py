"""The package's shape: which package may import which (the layers), and no import cycle at module level.

Imports are read from the source with ``ast``, so the checks cost no import of torch. The cycle
check reads module-level imports only (imports inside functions, which run later, and under
``TYPE_CHECKING`` are not edges); the layering rules read every import, at module level and inside
functions, since a deferred import is a dependency all the same.

The layers follow the data flow of one training step (docs/design.md)::

    rollout ──► rewards ──► signal (ps / vps / tree) ──► advantages ──► loss (loss_hooks)
        ↑ configuration (config: options, the config class, checks, precision, parsing; compatibility)
        ↑ foundations (registry, config.options, rewards.numbers, hub, guards, credit)
    trainer: wires the stages to TRL;  diagnostics: measures of the signal;  compare: reading runs;
    commands: the CLI, on top of everything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from psgrpo.methods import BUILTIN_METHODS

PACKAGE = Path(__file__).resolve().parents[1] / "psgrpo"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_targets(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    """What one import statement in ``package`` names: ``import a`` gives ``a``; ``from a import b`` gives
    ``a`` and ``a.b``, relative imports resolved against ``package``."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


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
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            targets |= import_targets(node, package)
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
    assert "psgrpo.config.process_grpo_config" in GRAPH["psgrpo.trainer"]  # the reader sees real edges
    assert find_cycle(GRAPH) is None, f"import cycle: {' → '.join(find_cycle(GRAPH) or [])}"


# --------------------------------------------------------------------------------------------
# Layering: which package may import which


def all_imports(name: str) -> set[str]:
    """Every module ``name`` imports anywhere in its file (module level, functions, ``TYPE_CHECKING``).

    ``from a import b`` gives ``a`` and ``a.b``; psgrpo targets are kept when they are modules,
    other targets (``trl.GRPOTrainer``, ``transformers.Trainer``) as written.
    """
    tree = ast.parse(MODULES[name].read_text())
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets |= import_targets(node, package)
    return {t for t in targets if t != name and (t in MODULES or not t.startswith("psgrpo"))}


ALL_IMPORTS = {name: all_imports(name) for name in MODULES}


def within(module: str, prefix: str) -> bool:
    """``module`` is ``prefix`` or inside it (``psgrpo.ps.signal`` is within ``psgrpo.ps``, not ``psgrpo.p``)."""
    return module == prefix or module.startswith(prefix + ".")


TRL_TRAINERS = (
    "trl.GRPOTrainer",
    "trl.SFTTrainer",
    "trl.trainer.grpo_trainer",
    "trl.trainer.sft_trainer",
    "transformers.Trainer",
    "transformers.trainer",
)
"""The TRL / transformers trainer classes and modules (``trl.trainer.utils`` helpers such as ``nanstd`` are not)."""

PURE = (
    "psgrpo.advantages",
    "psgrpo.rewards.numbers",
    "psgrpo.registry",
    "psgrpo.config.options",
    "psgrpo.rewards",
    "psgrpo.credit",
    "psgrpo.ps.scorers",
    "psgrpo.ps.segmentation",
    "psgrpo.tree.values",
    "psgrpo.vps.boundaries",
    "psgrpo.vps.probes",
)
"""Functions of tensors and text: usable, and testable, without a trainer, a command or a config."""

SIGNALS = tuple(f"psgrpo.{name}" for name in BUILTIN_METHODS)
"""The method packages (psgrpo/<method>/: its spec, options, signal), from the registry's built-ins."""
CONFIG_OBJECT = ("psgrpo.config.process_grpo_config", "psgrpo.config.checks", "psgrpo.config.parsing")
"""The config dataclass, its checks and the YAML / CLI parser: a stage receives the built config, never these."""
CONFIGURATION = ("psgrpo.config", "psgrpo.compatibility")
DIAGNOSTICS = ("psgrpo.diagnostics",)

RULES: list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str]] = [
    # (importers, forbidden, exceptions among the forbidden, why)
    (
        ("psgrpo.config.options", "psgrpo.registry", "psgrpo.rewards.numbers", "psgrpo.hub"),
        ("psgrpo",),
        (),
        "the foundations import no psgrpo module",
    ),
    (
        PURE,
        (
            "psgrpo.trainer",
            "psgrpo.commands",
            "psgrpo.eval",
            *CONFIG_OBJECT,
            "psgrpo.compatibility",
            *TRL_TRAINERS,
        ),
        (),
        "the pure layers know no trainer, command, evaluation or config object",
    ),
    (
        ("psgrpo.advantages",),
        ("psgrpo",),
        ("psgrpo.config.options", "psgrpo.registry"),
        "the estimators take plain tensors: they import only the option types and the registry",
    ),
    (
        ("psgrpo.rewards",),
        ("psgrpo",),
        ("psgrpo.rewards", "psgrpo.registry"),
        "rewards come before every signal and estimator",
    ),
    (
        SIGNALS,
        ("psgrpo.trainer", "psgrpo.commands", "psgrpo.loss_hooks", "psgrpo.eval", *CONFIG_OBJECT),
        (),
        "a signal gets the config object and the rollout; it never reaches the trainer, the loss or the CLI",
    ),
    *(
        (
            (package,),
            tuple(other for other in SIGNALS if other != package),
            ("psgrpo.ps.segmentation",) if package == "psgrpo.vps" else (),
            f"the methods are independent of each other ({package}; vps uses the PS segmenter for markers)",
        )
        for package in SIGNALS
    ),
    (
        ("psgrpo.loss_hooks",),
        ("psgrpo.advantages", "psgrpo.rewards", *SIGNALS, "psgrpo.trainer"),
        (),
        "the loss receives A_t (B, T); it does not compute it",
    ),
    (
        CONFIGURATION,
        (
            "psgrpo.trainer",
            "psgrpo.commands",
            "psgrpo.eval",
            "psgrpo.ps.signal",
            "psgrpo.vps.signal",
            "psgrpo.tree.signal",
        ),
        (),
        "the configuration is checked before anything is built",
    ),
    (
        (
            "psgrpo.eval",
            "psgrpo.data",
            "psgrpo.tiny",
            *DIAGNOSTICS,
            "psgrpo.checkpoints",
            "psgrpo.techniques",
        ),
        ("psgrpo.trainer", "psgrpo.commands"),
        (),
        "only the package entry and the commands build a trainer",
    ),
    (
        ("psgrpo.data",),
        ("psgrpo.eval", *SIGNALS, "psgrpo.advantages", *TRL_TRAINERS),
        (),
        "datasets come before the rollout",
    ),
    (
        ("psgrpo.compare",),
        ("psgrpo.trainer", "psgrpo.advantages", "psgrpo.loss_hooks", *SIGNALS, *TRL_TRAINERS),
        (),
        "the compare machinery reads finished runs; training them is the compare command's job",
    ),
]
"""The layering: no module within ``importers`` imports a module within ``forbidden``, unless it is within
``exceptions``. Nothing outside the commands imports the commands: :func:`test_only_the_commands_import_commands`."""


def violations(
    importers: tuple[str, ...], forbidden: tuple[str, ...], exceptions: tuple[str, ...]
) -> list[str]:
    """``importer → target`` for every import that breaks one rule."""
    return sorted(
        f"{name} → {target}"
        for name in MODULES
        if any(within(name, p) for p in importers)
        for target in ALL_IMPORTS[name]
        if any(within(target, p) for p in forbidden) and not any(within(target, p) for p in exceptions)
    )


def test_violations_reads_imports_inside_functions_too():
    assert "psgrpo.loading" in ALL_IMPORTS["psgrpo.ps.spec"]  # imported inside a function
    assert "psgrpo.loading" not in GRAPH["psgrpo.ps.spec"]
    assert violations(("psgrpo.ps.spec",), ("psgrpo.loading",), ()) == ["psgrpo.ps.spec → psgrpo.loading"]
    assert violations(("psgrpo.ps.spec",), ("psgrpo.load",), ()) == []  # prefixes stop at dots
    assert "psgrpo.vps.spec → psgrpo.vps.signal" in violations(
        ("psgrpo.vps.spec",), ("psgrpo.vps.signal",), ()
    )
    assert "psgrpo.loss_hooks → trl.GRPOTrainer" in violations(("psgrpo.loss_hooks",), TRL_TRAINERS, ())


@pytest.mark.parametrize(
    ("importers", "forbidden", "exceptions", "why"), RULES, ids=[rule[3] for rule in RULES]
)
def test_layering(importers, forbidden, exceptions, why):
    for prefix in importers:  # a rule about a package that no longer exists says nothing: fail instead
        assert any(within(name, prefix) for name in MODULES), f"no module within {prefix}: update the rule"
    assert violations(importers, forbidden, exceptions) == [], why


def test_only_the_commands_import_commands():
    importers = violations(("psgrpo",), ("psgrpo.commands",), ())
    outside = [edge for edge in importers if not within(edge.split(" → ")[0], "psgrpo.commands")]
    assert outside == ["psgrpo.__main__ → psgrpo.commands.cli"]  # python -m psgrpo


def test_the_package_imports_the_config_class_from_its_module():
    """``psgrpo.config`` resolves ``ProcessGRPOConfig`` lazily (so that ``psgrpo.config.options`` stays light);
    inside the package the import names the module, so that the import graph above sees the edge."""
    assert [
        edge for edge in violations(("psgrpo",), ("psgrpo.config",), ()) if edge.endswith("→ psgrpo.config")
    ] == []


def test_only_the_package_entry_and_the_commands_build_a_trainer():
    importers = {edge.split(" → ")[0] for edge in violations(("psgrpo",), ("psgrpo.trainer",), ())}
    assert {name for name in importers if not within(name, "psgrpo.commands")} == {"psgrpo"}


SCRIPTS = {
    "psgrpo.__main__": "python -m psgrpo: the CLI",
    "psgrpo.commands.cli": "the psgrpo command",
    "psgrpo.compatibility.__main__": "python -m psgrpo.compatibility: writes docs/compatibility.md",
    "psgrpo.tiny.qwen_tokenizer": "python -m psgrpo.tiny.qwen_tokenizer: make fetches Qwen's vocabulary",
}
"""Every module of the package that runs as a script, and what runs it."""

PARSERS = {"psgrpo.commands.env", "psgrpo.compare.settings", "psgrpo.config.options", "psgrpo.config.parsing"}
"""Modules that build the commands' argument parsers without being scripts (``psgrpo env`` with plain argparse:
it must run where trl, whose parser the others extend, does not import)."""


def _is_main_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def test_the_package_holds_no_script_that_nothing_runs():
    """Experiment and report drivers live in experiments/ and benchmarks/: inside the package, a module runs as
    a script only if a command, ``python -m`` entry or the Makefile runs it, and argparse serves those and the
    commands' own parsers."""
    scripts, argparse_users = set(), set()
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        if name.endswith(".__main__") or any(_is_main_block(node) for node in tree.body):
            scripts.add(name)
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            if "argparse" in names:
                argparse_users.add(name)
    assert scripts == set(SCRIPTS)
    assert argparse_users <= set(SCRIPTS) | PARSERS, argparse_users - set(SCRIPTS) - PARSERS
