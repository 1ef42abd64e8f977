"""Open items of the five paper pages live only under two headings (issue 17).

Every unfinished item of a ``docs/<paper>.md`` page is either listed under
``## Not done`` (with what it needs and its issue) or under
``## Not reproducible here`` (with the concrete reason and what would reproduce
it). Phrases that mark an open item must not appear anywhere else on a page,
except for the few legitimate uses in ``ALLOWED`` (a label or a deviation).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (
    "lev2026.md",
    "lev2026-data.md",
    "brown2024.md",
    "liang2025.md",
    "varshney2022.md",
    "choquettechoo2023.md",
)
NOT_DONE = "Not done"
NOT_REPRODUCIBLE = "Not reproducible here"
OPEN_ITEM = re.compile(
    r"\bnot done\b|\bnot built\b|\bnot implemented\b|\bnot reproduced\b|\btodo\b"
    r"|\bfuture work\b|\bunexplained\b|\bnot investigated\b|\bstays open\b|\bleft out\b"
    r"|\bleft in\b",
    re.IGNORECASE,
)
# (page, phrase containing the match): legitimate uses outside the two sections.
ALLOWED = (
    # the label the study `cc_fig4_quoted` writes on every quoted row
    ("choquettechoo2023.md", "quoted from the paper, not reproduced"),
)


def _sections(text: str) -> list[tuple[str, str]]:
    """Split a page into (level-2 heading, body) pairs; the preamble has heading ''."""
    sections: list[tuple[str, str]] = []
    heading, body = "", []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((heading, "\n".join(body)))
            heading, body = line[3:].strip(), []
        else:
            body.append(line)
    sections.append((heading, "\n".join(body)))
    return sections


def _items(body: str) -> list[str]:
    """Top-level bullet items of a section body (a bullet and its continuation lines)."""
    items: list[str] = []
    for line in body.splitlines():
        if line.startswith(("* ", "- ")):
            items.append(line[2:])
        elif items and line.strip():
            items[-1] += " " + line.strip()
    return [" ".join(item.split()) for item in items]


def open_item_problems(name: str, text: str) -> list[str]:
    """Every violation of the open-item rules on one page (empty when the page is clean)."""
    problems: list[str] = []
    allowed = [" ".join(p.split()).lower() for page, p in ALLOWED if page == name]
    headings = [h for h, _ in _sections(text)]
    for heading in (NOT_DONE, NOT_REPRODUCIBLE):
        if headings.count(heading) > 1:
            problems.append(f"{name}: heading '## {heading}' appears more than once")
    for heading, body in _sections(text):
        flat = " ".join(body.split())
        if heading == NOT_REPRODUCIBLE:
            items = _items(body)
            if not items:
                problems.append(f"{name}: '## {heading}' has no items")
            for item in items:
                for marker in ("Reason:", "To reproduce:"):
                    if marker not in item:
                        problems.append(f"{name}: item without {marker!r}: {item[:70]}")
        elif heading == NOT_DONE:
            items = _items(body)
            if not items:
                problems.append(f"{name}: '## {heading}' has no items")
            for item in items:
                if "Needs:" not in item or not re.search(r"\bissue 1[78]\b", item):
                    problems.append(f"{name}: item without 'Needs:' and its issue: {item[:70]}")
        else:
            for match in OPEN_ITEM.finditer(flat):
                if flat[max(0, match.start() - 1) : match.start()] == '"':
                    continue  # a reference to the section: see "Not done"
                window = flat[max(0, match.start() - 80) : match.end() + 80].lower()
                if not any(phrase in window for phrase in allowed):
                    context = flat[max(0, match.start() - 60) : match.end() + 20]
                    problems.append(
                        f"{name}, section '{heading or '(top)'}': open item "
                        f"{match.group(0)!r} outside '## {NOT_DONE}' / "
                        f"'## {NOT_REPRODUCIBLE}': ...{context}..."
                    )
    return problems


@pytest.mark.parametrize("name", PAGES)
def test_open_items_only_in_their_sections(name: str) -> None:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    assert open_item_problems(name, text) == []


def test_allow_list_phrases_occur() -> None:
    for name, phrase in ALLOWED:
        flat = " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())
        assert phrase in flat, (name, phrase)


def test_checker_flags_each_rule() -> None:
    bad_body = "# P\n\n## Results\nThe claim is NOT reproduced here.\n"
    assert any("open item" in p for p in open_item_problems("x.md", bad_body))
    reference = (
        '# P\n\n## Results\nSee section "Not done".\n\n## Not done\n* A. Needs: b (issue 17).\n'
    )
    assert open_item_problems("x.md", reference) == []
    no_reason = "# P\n\n## Not reproducible here\n* Big data. To reproduce: download it.\n"
    assert any("'Reason:'" in p for p in open_item_problems("x.md", no_reason))
    no_recipe = "# P\n\n## Not reproducible here\n* Big data.\n  Reason: no copy.\n"
    assert any("'To reproduce:'" in p for p in open_item_problems("x.md", no_recipe))
    no_needs = "# P\n\n## Not done\n* A solver (issue 17).\n"
    assert any("Needs:" in p for p in open_item_problems("x.md", no_needs))
    no_issue = "# P\n\n## Not done\n* A solver. Needs: time.\n"
    assert any("Needs:" in p for p in open_item_problems("x.md", no_issue))
    good = (
        "# P\n\n## Results\nAll fine.\n\n## Not done\n* A solver. Needs: a week\n"
        "  (issue 17).\n\n## Not reproducible here\n* Big data. Reason: no offline\n"
        "  copy. To reproduce: download it.\n"
    )
    assert open_item_problems("x.md", good) == []
    assert open_item_problems("x.md", good + "\n## Not done\n* B. Needs: x (issue 18).\n")
