"""Every ```python block of README.md and docs/ runs as written: offline, in a fresh directory, in a subprocess.

A block is a whole program (imports included); nothing is skipped. The fresh working directory
holds only links to the repository's ``docs/`` and ``experiments/`` (:data:`CITED_DATA`), for the
blocks that read the data a page cites (``experiments/runs/…/curves.csv``). The hub is switched off (``HF_HUB_OFFLINE=1``), so a block that
needs a download fails here: such text belongs in a ``bash`` or ``text`` block. The README's
blocks and the quickstart's, one per distinct config, run a second time as on a CPU with native bf16 and no GPU
(``PSGRPO_NATIVE_BF16=1``, :mod:`psgrpo.config.precision`), where transformers used to refuse the config
unless it set ``use_cpu``; none of them sets it. The runs take minutes (a few steps of training
each), hence ``slow``; collecting and compiling every block is not. A ```python block indented inside a list
item is an example that needs a download or a GPU (a real model): it is not run, but it must compile and
import only names psgrpo has, as every block must.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
INDENTED_BLOCK = re.compile(r"^([ \t]+)```python[ \t]*\n(.*?)^\1```[ \t]*$", re.MULTILINE | re.DOTALL)
"""A ```python block inside a list item: the pages keep there the examples that need a download or a GPU (a real
model), so they are not run; they must still compile and import only what psgrpo has."""
FRONT_PAGES = ("README.md", "docs/quickstart.md")
"""The pages a new user copies from first: they also run as on a CPU with native bf16, and set no ``use_cpu``."""
CITED_DATA = ("docs", "experiments")
"""Repository folders linked into a block's working directory: the kept results the pages compute from."""
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
TIMEOUT_S = 600


def pages() -> list[Path]:
    """README.md and every page under docs/, except the run folders of docs/learning/ (kept outputs)."""
    under_docs = [p for p in DOCS.rglob("*.md") if "learning" not in p.relative_to(DOCS).parts[:-1]]
    return [ROOT / "README.md", *sorted(under_docs)]


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """``(line of the opening fence, code)`` of each ```python block of ``markdown``."""
    return [(markdown.count("\n", 0, m.start()) + 1, m.group(1)) for m in PYTHON_BLOCK.finditer(markdown)]


def indented_blocks(markdown: str) -> list[tuple[int, str]]:
    """``(line of the opening fence, dedented code)`` of each indented ```python block of ``markdown``."""
    return [
        (markdown.count("\n", 0, m.start()) + 1, textwrap.dedent(m.group(2)))
        for m in INDENTED_BLOCK.finditer(markdown)
    ]


def snippets() -> list:
    params = []
    for page in pages():
        name = str(page.relative_to(ROOT))
        for line, code in python_blocks(page.read_text()):
            params.append(pytest.param(name, code, id=f"{name}:{line}"))
    return params


SNIPPETS = snippets()
INDENTED = [
    pytest.param(str(page.relative_to(ROOT)), code, id=f"{page.relative_to(ROOT)}:{line}")
    for page in pages()
    for line, code in indented_blocks(page.read_text())
]
FRONT = [p for p in SNIPPETS if p.values[0] in FRONT_PAGES]


def config_of(code: str) -> tuple[str, ...]:
    """The ``ProcessGRPOConfig(...)`` keywords of a block as source text (``output_dir`` left out), sorted: what
    decides its precision path (``()`` for a block without one)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ProcessGRPOConfig":
            return tuple(
                sorted(f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords if k.arg != "output_dir")
            )
    return ()


def one_block_per_config(params: list) -> list:
    """The first block of each distinct :func:`config_of` among ``params``: a block that repeats an earlier
    block's config takes the same precision path (the quickstart's ``ps`` and ``vps`` repeat README's)."""
    seen: dict[tuple[str, ...], object] = {}
    for param in params:
        seen.setdefault(config_of(param.values[1]), param)
    return list(seen.values())


FRONT_BF16 = one_block_per_config(FRONT)


def run_snippet(code: str, workdir: Path, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` as ``workdir/snippet.py`` with ``workdir`` as the working directory, offline."""
    for folder in CITED_DATA:
        if (ROOT / folder).is_dir():
            (workdir / folder).symlink_to(ROOT / folder, target_is_directory=True)
    script = workdir / "snippet.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env={**os.environ, **OFFLINE, **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_blocks_are_found_and_extracted_whole():
    page = (
        "Natalia sold 48 clips.\n```python\nimport re\nprint(48 // 2)\n```\n\n```bash\npsgrpo train\n```\n"
        "```python\nprint(48 + 24)\n```\n"
    )
    assert python_blocks(page) == [(2, "import re\nprint(48 // 2)\n"), (10, "print(48 + 24)\n")]
    assert any(p.values[0] == "README.md" for p in SNIPPETS)
    assert len(FRONT) >= 4  # the README's example and the quickstart's three
    assert not [p for p in pages() if "docs/learning/" in str(p.relative_to(ROOT)) + "/"]


@pytest.mark.parametrize(("page", "code"), SNIPPETS)
def test_every_block_is_valid_python(page, code):
    compile(code, page, "exec")


def test_indented_blocks_are_found_dedented():
    page = "- A real model:\n\n  ```python\n  from psgrpo import load_recipe\n  print(1)\n  ```\n"
    assert indented_blocks(page) == [(3, "from psgrpo import load_recipe\nprint(1)\n")]
    assert python_blocks(page) == []  # the run-as-written blocks never include them
    assert any(p.values[0] == "docs/quickstart.md" for p in INDENTED)  # the GSM8K recipe from Python


def has_name(module, name: str) -> bool:
    """``from module import name`` works: an attribute, or a submodule not imported yet (``psgrpo.eval.trained_on``)."""
    if hasattr(module, name):
        return True
    return hasattr(module, "__path__") and importlib.util.find_spec(f"{module.__name__}.{name}") is not None


def test_a_submodule_counts_as_a_name_and_a_typo_does_not():
    import psgrpo.eval

    assert has_name(psgrpo.eval, "trained_on") and not has_name(psgrpo.eval, "trained_onn")
    assert not has_name(importlib.import_module("psgrpo.loading"), "load_polic")


@pytest.mark.parametrize(("page", "code"), SNIPPETS + INDENTED)
def test_every_psgrpo_name_a_block_imports_exists(page, code):
    """A renamed function or module fails here, also in the blocks that are not run (they need a download)."""
    compile(code, page, "exec")  # the indented blocks too (the others: test_every_block_is_valid_python)
    for node in ast.walk(ast.parse(code, page)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "psgrpo":
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if not has_name(module, a.name)]
            assert not missing, f"{page}: {node.module} has no {missing}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "psgrpo":
                    importlib.import_module(alias.name)


@pytest.mark.parametrize(("page", "code"), FRONT)
def test_the_front_page_examples_set_no_device(page, code):
    assert "use_cpu" not in code and "no_cuda" not in code


@pytest.mark.parametrize(("page", "code"), FRONT)
def test_the_front_page_examples_end_by_saving_the_model(page, code):
    """So that `psgrpo eval --model_name_or_path OUTPUT_DIR`, which the pages show next, finds a model."""
    if "trainer.train()" in code:
        assert code.rstrip().splitlines()[-1].startswith("trainer.save_model()"), code


@pytest.mark.slow
@pytest.mark.parametrize(("page", "code"), SNIPPETS)
def test_every_block_runs_as_written(tmp_path, page, code):
    result = run_snippet(code, tmp_path)
    assert result.returncode == 0, f"{page}: the block failed:\n{result.stderr[-4000:]}"


def test_one_block_per_config_runs_as_on_a_cpu_with_native_bf16():
    """README's ps and vps blocks and the quickstart's grpo block: the quickstart's ps and vps configs are README's."""
    picked = [param.id for param in FRONT_BF16]
    assert {config_of(param.values[1]) for param in FRONT} == {
        config_of(param.values[1]) for param in FRONT_BF16
    }
    assert len(picked) == 3 and picked[:2] == [p.id for p in FRONT if p.values[0] == "README.md"][:2], picked
    same = 'ProcessGRPOConfig(output_dir="a", method="ps", max_steps=3)'
    blocks = [
        pytest.param("a.md", same, id="a"),
        pytest.param("b.md", same.replace('"a"', '"b"'), id="b"),  # another output_dir only: the same config
        pytest.param("c.md", same.replace("3", "4"), id="c"),
        pytest.param("d.md", "print(1)", id="d"),
    ]
    assert [param.id for param in one_block_per_config(blocks)] == ["a", "c", "d"]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "code"), FRONT_BF16)
def test_front_page_examples_run_on_a_cpu_with_native_bf16(tmp_path, page, code):
    result = run_snippet(code, tmp_path, PSGRPO_NATIVE_BF16="1")
    assert result.returncode == 0, f"{page}: the block failed with native bf16:\n{result.stderr[-4000:]}"
