"""The docs hold together: docs/README.md indexes every page, no relative link or anchor dangles, the code names
they cite exist, the README is short."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINKED_FROM = [ROOT / "README.md", ROOT / "CHANGELOG.md", *PAGES]

FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def link_targets(markdown: str) -> list[str]:
    """Targets of the markdown links and images in ``markdown`` that are not URLs with a scheme, as written
    (``results.md#ledger``, ``#the-answer``); code (fenced blocks, inline spans) is skipped."""
    text = INLINE_CODE.sub("", FENCE.sub("", markdown))
    return [t for t in LINK.findall(text) if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t)]


def relative_links(markdown: str) -> list[str]:
    """Targets of the markdown links and images in ``markdown`` that point into the repository.

    Code (fenced blocks, inline spans) is skipped; so are URLs with a scheme and links to an
    anchor of the same page. A target keeps its path only (no ``#anchor``), percent-decoded.
    """
    return [unquote(t.split("#", 1)[0]) for t in link_targets(markdown) if not t.startswith("#")]


def anchors(markdown: str) -> set[str]:
    """The ``#anchors`` GitHub gives a page: each heading lowercased, link syntax reduced to its text, every
    character but letters, digits, ``_``, ``-`` and spaces dropped, spaces as ``-``, repeats numbered
    (``-1``, ``-2`` …); plus explicit ``<a id="…">`` / ``<a name="…">``."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", FENCE.sub("", markdown), re.MULTILINE):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found | set(re.findall(r'<a (?:id|name)="([^"]+)"', markdown))


def test_relative_links_skip_code_urls_and_anchors():
    page = (
        "Natalia sold [48 clips](results.md#ledger) in April; see ![the curve](../experiments/runs/a/compare.png)\n"
        "and [TRL](https://huggingface.co/docs/trl) or [below](#the-answer).\n"
        "`[not a link](x.md)`\n"
        "```bash\n[also not](y.md)\n```\n"
        "[spaced](my%20page.md)\n"
    )
    assert relative_links(page) == ["results.md", "../experiments/runs/a/compare.png", "my page.md"]


def test_docs_index_links_every_page():
    index = DOCS / "README.md"
    linked = {(DOCS / t).resolve() for t in relative_links(index.read_text())}
    missing = [p.name for p in PAGES if p != index and p.resolve() not in linked]
    assert not missing, f"docs/README.md does not link these pages: {missing}"


@pytest.mark.parametrize("page", LINKED_FROM, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(page):
    if not page.exists():
        pytest.fail(f"{page.relative_to(ROOT)} is missing")
    broken = [t for t in relative_links(page.read_text()) if not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to paths that do not exist: {broken}"


def test_the_readme_stays_a_front_page():
    """The README is what it is, the two commands, quickstarts, the data contract, one paragraph of results and
    an index; depth goes to docs/ (at most 180 lines, as the redesign set it)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 180, f"README.md has {len(lines)} lines: move detail to a page under docs/"


def test_anchors_follow_githubs_rule():
    page = (
        "# Quick start\n## PS-GRPO options (`--method ps`)\n## Notes\n## Notes\n### [Ledger](x.md): 0.5–0.7\n"
    )
    assert anchors(page) == {"quick-start", "ps-grpo-options---method-ps", "notes", "notes-1", "ledger-0507"}


@pytest.mark.parametrize("page", LINKED_FROM, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_anchor_a_link_names_is_a_heading_of_its_page(page):
    broken = []
    for target in link_targets(page.read_text()):
        path, _, anchor = target.partition("#")
        linked = (page.parent / unquote(path)) if path else page
        if anchor and linked.suffix == ".md" and linked.is_file():
            if unquote(anchor) not in anchors(linked.read_text()):
                broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to anchors no heading makes: {broken}"


CODE_NAME = re.compile(r"`((?:psgrpo(?:\.\w+)+)|(?:ProcessGRPO(?:Trainer|Config)\.\w+))(?:\([^`]*\))?`")
"""A code span naming psgrpo's code: ``psgrpo.ps.signal.PsSignal``, ``ProcessGRPOTrainer.completion_tokens_seen``."""


def resolves(name: str) -> bool:
    """Whether a dotted name is a module, or an attribute reached from one, or an attribute an ``__init__``
    of the class before it sets (``self.<attr> =``)."""
    parts = ("psgrpo." + name if name.startswith("ProcessGRPO") else name).split(".")
    for cut in range(len(parts), 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    else:
        return False
    for i, attribute in enumerate(parts[cut:], start=cut):
        if not hasattr(owner, attribute):
            last = i == len(parts) - 1
            return last and inspect.isclass(owner) and f"self.{attribute} =" in inspect.getsource(owner)
        owner = getattr(owner, attribute)
    return True


def test_resolves_modules_attributes_and_instance_attributes():
    assert resolves("psgrpo.vps.probes.idle_forwards") and resolves(
        "ProcessGRPOTrainer.completion_tokens_seen"
    )
    assert not resolves("ProcessGRPOTrainer._step_signals") and not resolves(
        "psgrpo.vps_probes.idle_forwards"
    )


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_psgrpo_name_a_page_cites_exists(page):
    """A renamed function leaves no doc pointing at its old name (``ProcessGRPOTrainer._step_signals`` did).
    CHANGELOG.md is history: it keeps the names of its day."""
    missing = [m.group(1) for m in CODE_NAME.finditer(page.read_text()) if not resolves(m.group(1))]
    assert not missing, f"{page.relative_to(ROOT)} cites names the code does not have: {missing}"
