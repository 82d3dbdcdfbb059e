"""The docs stay true: generated reference pages match the code, and every link resolves."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["cli.md", "settings.md"])
def test_generated_reference_matches_the_code(name, tmp_path):
    gen = _generator()
    gen.write_reference(tmp_path)
    committed = DOCS / "reference" / name
    assert committed.exists(), f"docs/reference/{name} is missing: run {gen.REGENERATE}"
    assert committed.read_text() == (tmp_path / name).read_text(), (
        f"docs/reference/{name} is out of date with the code: run {gen.REGENERATE}"
    )


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc (mkdocs) gives a heading."""
    text = re.sub(r"[`*]", "", heading).strip()
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.M)}


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


def test_the_link_check_sees_links_and_anchors():
    """The checks above are not vacuous: the README links into docs/, headings give anchors."""
    assert "docs/reference/cli.md" in _links(ROOT / "README.md")
    assert "errors-and-exit-codes" in _anchors(DOCS / "index.md")
    assert _slug("`[paths]`") == "paths" and _slug("The top edge: models") == "the-top-edge-models"
