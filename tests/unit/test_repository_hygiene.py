"""Knowledge lives in the repository: no citation of files a user of the repo does not have.

Code and docs cite the papers and the repository's own pages. The project's reading
notes are ``docs/notes/<paper>.md``, cited as ``docs/notes/<paper>.md §N.M``,
``§N item K`` or ``PK``; every such citation must point at a section that exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".smk", ".rst", ".csv", ".toml", ".sh", ".cfg"}
NOTES_DIR = REPO / "docs" / "notes"
PAPERS = ("brown2024", "choquettechoo2023", "lev2026", "liang2025", "varshney2022")

#: Places outside the repository that a citation must never point at.
OUT_OF_REPO = re.compile(r"shared/notes|shared/papers|DESIGN\.md|\.\./shared/(?!data/mirror)")
#: "notes" used as a citation of reading notes without the in-repo path: with a locator
#: (§x, Px, section x, a number), possessive ("the notes' values"), in parentheses, named
#: after a paper ("lev2026 notes", "notes lev2026"), a file ("reading notes ``x.md``"), or
#: "(notes" at a line's end with the locator on the next line.
BARE_NOTES = re.compile(
    r"(?<![/\w])notes?(?:\s*(?:§|P\d+\b|section\b|sec\b|\d|\(P?\d|``)|')"
    r"|\(notes\)|[(;,]\s*notes\s*$"
    r"|\bnotes\s+(?:lev2026|liang2025|brown2024|varshney2022|choquettechoo2023)\b"
    r"|\b(?:lev2026|liang2025|brown2024|varshney2022|choquettechoo2023) notes\b",
    re.IGNORECASE,
)
CITATION = re.compile(
    r"docs/notes/(?P<paper>[a-z0-9]+)\.md`?\s+(?:(?P<p>P\d+)|§(?P<sec>\d+(?:\.\d+)?)"
    r"(?:\s+items?\s+(?P<item>\d+))?)"
)


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.split("\n")
        files = [REPO / line for line in out if line]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        files = [p for p in REPO.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts]
    return [
        p
        for p in files
        if p.is_file()
        and p.suffix in TEXT_SUFFIXES
        and p.relative_to(REPO).as_posix() != THIS
        and not p.relative_to(REPO).as_posix().startswith("benchmarks/results/")
    ]


def _offences() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in _tracked_files():
        rel = path.relative_to(REPO).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUT_OF_REPO.search(line) or (
                not rel.startswith("docs/notes/") and BARE_NOTES.search(line)
            ):
                found.setdefault(rel, []).append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_citation_points_outside_the_repository():
    found = [line for _, lines in sorted(_offences().items()) for line in lines]
    assert not found, (
        "citations of files outside the repository (cite the paper or"
        " docs/notes/<paper>.md §x instead):\n" + "\n".join(found)
    )


def _items(text: str, section: str) -> set[int]:
    """Numbers of the ordered-list items of a section (and its subsections)."""
    items: set[int] = set()
    inside = False
    for line in text.splitlines():
        heading = re.match(r"#{2,4}\s+((\d+)(?:\.\d+)?)\.?\s", line)
        if heading:
            number, top = heading.group(1), heading.group(2)
            inside = number == section or ("." not in section and top == section)
            continue
        if inside:
            item = re.match(r"(\d+)\.\s", line)
            if item:
                items.add(int(item.group(1)))
    return items


@pytest.mark.parametrize("paper", PAPERS)
def test_reading_notes_exist_for_every_paper(paper):
    path = NOTES_DIR / f"{paper}.md"
    assert path.is_file(), f"docs/notes/{paper}.md is missing"
    assert re.search(r"^## 1\.", path.read_text(), re.MULTILINE), "no numbered sections"


def test_every_notes_citation_points_at_an_existing_section():
    texts = {p: (NOTES_DIR / f"{p}.md").read_text() for p in PAPERS}
    bad = []
    for path in _tracked_files():
        rel = path.relative_to(REPO).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for cite in CITATION.finditer(line):
                paper = cite.group("paper")
                where = f"{rel}:{number}: {cite.group(0)}"
                if paper not in texts:
                    bad.append(f"{where} (no such notes file)")
                    continue
                text = texts[paper]
                if cite.group("p"):
                    if not re.search(rf"\*\*{cite.group('p')}\b", text):
                        bad.append(f"{where} (no {cite.group('p')})")
                    continue
                sec = cite.group("sec")
                pattern = rf"^#{{2,4}}\s+{re.escape(sec)}\.?\s"
                if not re.search(pattern, text, re.MULTILINE):
                    bad.append(f"{where} (no section {sec})")
                elif cite.group("item") and int(cite.group("item")) not in _items(text, sec):
                    bad.append(f"{where} (no item {cite.group('item')} in section {sec})")
    assert not bad, "citations of missing sections:\n" + "\n".join(bad)
