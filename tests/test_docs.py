"""The docs hold together: docs/README.md indexes every page, no relative link dangles, the README is short."""

from __future__ import annotations

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


def relative_links(markdown: str) -> list[str]:
    """Targets of the markdown links and images in ``markdown`` that point into the repository.

    Code (fenced blocks, inline spans) is skipped; so are URLs with a scheme and links to an
    anchor of the same page. A target keeps its path only (no ``#anchor``), percent-decoded.
    """
    text = INLINE_CODE.sub("", FENCE.sub("", markdown))
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(unquote(target.split("#", 1)[0]))
    return targets


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
