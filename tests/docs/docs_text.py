"""The user documentation: the README (the front door) and the reference pages under docs/ it links to."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def page(name: str) -> str:
    """The text of `docs/{name}`; raises FileNotFoundError when the page is gone."""
    return (ROOT / "docs" / name).read_text()


def all_docs() -> str:
    """README plus every Markdown page under docs/, one string (what a user can read)."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    return "\n".join([README, *(p.read_text() for p in pages)])
