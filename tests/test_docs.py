"""The docs stay true: the code's numbers in docs/typing.md are the code's, the README's first screen is what a new
user needs, and every link between the docs reaches a file and a heading that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_typing_docs_numbers_are_the_codes():
    r = subprocess.run([sys.executable, "scripts/code_stats.py", "--check"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


def test_the_readme_first_screen_has_the_two_commands_a_picture_and_where_to_go():
    first = (ROOT / "README.md").read_text().splitlines()[:40]
    text = "\n".join(first)
    block = re.search(r"```bash\n(.*?)\n```", text, re.S)
    assert block, "the README's first 40 lines hold no ```bash block"
    commands = block.group(1).splitlines()
    assert len(commands) == 2, commands
    assert "streamlit run" in commands[0] and "pip install -r requirements.txt" in commands[0], commands[0]
    assert commands[1] == "bash scripts/test.sh", commands[1]
    assert first.index("```bash") < 5, "the commands open the README"
    assert re.search(r"!\[[^\]]+\]\(docs/screenshots/[\w-]+\.png\)", text), "no picture in the first 40 lines"
    assert "Where next" in text, "the first screen says where to go next"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out: set[str] = set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _links(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", path.read_text(), flags=re.S))  # code is not a link
    return [(m.group(1), m.group(2) or "") for m in re.finditer(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)", text)
            if not m.group(1).startswith(("http:", "https:", "mailto:"))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_in_the_docs_reaches_a_file_and_heading(doc):
    broken = []
    for target, anchor in _links(doc):
        dest = (doc.parent / target).resolve() if target else doc
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}#{anchor} (no such heading in {dest.name})")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)
