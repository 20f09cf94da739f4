"""The documentation holds together: every relative link points at a file that exists (and at a heading there, when
it names one), and the README stays a front door, with the rest in docs/."""

import re
from pathlib import Path

import pytest

from .conftest import ROOT

PAGES = sorted([ROOT / name for name in ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "BENCHMARKS.md")]
               + list((ROOT / "docs").glob("*.md")))
README_MOST_LINES = 250
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The page without its code blocks and code spans, where brackets are code, not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the page's headings (GitHub's rule: lower case, punctuation out,
    spaces as hyphens).

    >>> sorted(anchors("# The hook (`vdiag hook`)\\n## Exit codes\\n"))
    ['exit-codes', 'the-hook-vdiag-hook']
    """
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def relative_links(page: Path) -> list[str]:
    return [target for target in _LINK.findall(_prose(page.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto: are not files here


def test_every_page_is_found():
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    assert {"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "BENCHMARKS.md", "docs/report.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_points_at_what_exists(page):
    broken = []
    for target in relative_links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {destination.relative_to(ROOT)}")
    assert broken == []


def test_a_broken_link_is_seen(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See [a](missing.md), [b](#nowhere), `[c](in-code.md)` and [d](https://example.org).\n\n"
                    "```\n[e](in-a-fence.md)\n```\n")
    assert relative_links(page) == ["missing.md", "#nowhere"]


def test_the_readme_is_a_front_door_and_points_at_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MOST_LINES
    linked = {target.partition("#")[0] for target in relative_links(ROOT / "README.md")}
    pages = {page.relative_to(ROOT).as_posix() for page in PAGES if page.name != "README.md"}
    assert sorted(pages - linked) == []
