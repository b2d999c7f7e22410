"""The README is the front door and docs/ the reference (issue 46): the README stays short, every
relative link in it and in docs/ leads to a file that exists, each generated block lives once, in
its own page, and the README's short findings table follows the long one in docs/findings.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rmqcheck.model.bugs import SNAPSHOT

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md")), *sorted((DOCS / "findings").glob("*.md"))]
BLOCKS = {"matrix": DOCS / "matrix.md", "bugs": DOCS / "bugs.md"}  # what `make matrix` and `make bugs` rewrite


def _links(text: str) -> list[str]:
    """The targets of the Markdown links and images of a page, outside code blocks and code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)


def test_the_readme_has_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_that_exists(page):
    """A link to another site (`https:`, `mailto:`) or to an anchor of the same page is not checked;
    `path#anchor` checks the path only."""
    missing = []
    for target in _links(page.read_text()):
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)}: links to nothing: {missing}"


def test_the_readme_links_every_page_of_docs():
    linked = {(README.parent / t.split("#")[0]).resolve() for t in _links(README.read_text()) if not t.startswith("#")}
    pages = [p for p in sorted(DOCS.iterdir()) if p.is_file()] + [DOCS / "findings" / "README.md"]
    assert [str(p.relative_to(ROOT)) for p in pages if p.resolve() not in linked] == []


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_generated_block_is_once_in_its_page_and_make_writes_it_there(name):
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    for page in PAGES:
        text = page.read_text()
        count = (text.count(start), text.count(end))
        if page == BLOCKS[name]:
            assert count == (1, 1) and text.index(start) < text.index(end), f"{page.name}: {count}"
        else:
            assert count == (0, 0), f"{page.relative_to(ROOT)} holds a copy of the {name} block"
    target = BLOCKS[name].relative_to(ROOT)
    assert re.search(rf"rmqcheck {name} .*--readme {re.escape(str(target))}\n", (ROOT / "Makefile").read_text())


def _long_rows() -> dict[str, list[str]]:
    """docs/findings.md's table: finding -> its cells."""
    rows = {}
    for line in (DOCS / "findings.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)` \|", line)
        if m:
            rows[m.group(1)] = line.strip().strip("|").split(" | ")
    return rows


def _short_rows() -> list[tuple[str, str, list[str]]]:
    """The README's findings table: (finding, link target, cells)."""
    section = README.read_text().split("\n## Findings\n")[1].split("\n## ")[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| \[`(\w+)`\]\(([^)]+)\) \|", line)
        if m:
            rows.append((m.group(1), m.group(2), [c.strip() for c in line.strip().strip("|").split(" | ")]))
    return rows


def test_the_long_findings_table_has_a_row_per_snapshot_defect():
    assert sorted(_long_rows()) == sorted(SNAPSHOT)


def test_the_readme_findings_table_has_a_row_per_finding_of_docs_findings_linking_its_report():
    """The rule: the README's short table has exactly one row per row of the long table in
    docs/findings.md, in the same order. A finding with a report (docs/findings/NAME.md, the open
    ones) links to its report, the others (fixed upstream) to docs/findings.md; so every report has
    a row. Its column "on RocketMQ's running code" is the first word (reproduced or held) of the
    long table's column of that name."""
    long, short = _long_rows(), _short_rows()
    assert [name for name, _, _ in short] == list(long)
    reports = {p.stem for p in (DOCS / "findings").glob("*.md")} - {"README"}
    assert reports <= set(long), f"reports with no finding: {reports - set(long)}"
    header = next(line for line in README.read_text().splitlines() if line.startswith("| finding |"))
    column = header.strip("| ").split(" | ").index("on RocketMQ's running code")
    for name, target, cells in short:
        expected = f"docs/findings/{name}.md" if name in reports else "docs/findings.md"
        assert target == expected, f"{name}: links to {target}, not {expected}"
        said = long[name][4]  # toggle | what goes wrong | status | its code | on RocketMQ's running code | ...
        assert said.split()[0].rstrip(":") == cells[column], f"{name}: {cells[column]} where docs say {said[:40]}"
