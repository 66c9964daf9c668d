"""OSWorld `desktop_env/evaluators/metrics/others.py`: EPUB contents and MP3 (ID3) metadata.

Semantics of `compare_epub` and `check_mp3_meta`; a None result path scores 0.0, and where OSWorld's
function crashes on an input, ours raises EvalError.
"""

from __future__ import annotations

import difflib
import zipfile
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html
from mutagen import MutagenError
from mutagen.easyid3 import EasyID3

from services.runner.osworld.crash import input_errors
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.rules import match_value_to_rule

FilePath = str | Path


def _kept_lines(text: str, dropped: str) -> list[str]:
    return [line for line in text.splitlines() if dropped not in line]


def _pretty_html(raw: bytes) -> list[str]:
    flat = "".join(ch for ch in raw.decode() if ch not in "\r\n")
    tree = lxml.html.fromstring(flat.encode())
    return lxml.html.tostring(tree, pretty_print=True, encoding="unicode").splitlines()


def epub_parts(path: FilePath) -> list[list[str]]:
    """The comparable parts of an EPUB, as lists of lines, in the order of their member names:
    root `toc.ncx` without `navPoint` lines, root `content.opf` without `dc:identifier` lines, and
    every `.html` member flattened (newlines removed) and pretty-printed by lxml. An archive that is
    not a zip has no parts.

    As OSWorld (which writes each part to `<epub>.dir/<member name>`), an `.html` member inside a
    folder fails: OSWorld cannot create that file and crashes, so this raises EvalError.
    Raises: EvalError for that, or a member that is not UTF-8 / not parseable HTML.
    """
    parts: dict[str, list[str]] = {}
    order: list[str] = []
    try:
        with zipfile.ZipFile(path) as epub:
            names = epub.namelist()
            for name, dropped in (("toc.ncx", "navPoint"), ("content.opf", "dc:identifier")):
                if name in names:
                    parts[name] = _kept_lines(epub.read(name).decode(), dropped)
                    order.append(name)
            for name in names:
                if name.endswith(".html"):
                    if "/" in name:
                        raise EvalError(f"compare_epub: {path}: HTML member {name!r} is in a folder "
                                        "(OSWorld's copy of it fails)")
                    parts[name] = _pretty_html(epub.read(name))
                    order.append(name)
    except zipfile.BadZipFile:
        return []
    return [parts[name] for name in sorted(order)]


def compare_epub(result: FilePath | None, expected: FilePath | None) -> float:
    """Mean over the parts of the result EPUB (see `epub_parts`), paired in name order with the
    expected EPUB's, of difflib's line similarity ratio; 0.0 when the result has no parts.

    Raises: EvalError for an unreadable file or a part OSWorld cannot process.
    """
    if result is None:
        return 0.0
    with input_errors("compare_epub", lxml.etree.ParserError):
        ours, theirs = epub_parts(result), epub_parts(expected)  # type: ignore[arg-type]
    total = sum(difflib.SequenceMatcher(a=a, b=b).ratio() for a, b in zip(ours, theirs))  # noqa: B905
    return total / len(ours) if ours else 0.0


def check_mp3_meta(result: FilePath | None, meta: Any) -> float:
    """1.0 iff every ID3 field of `meta` (EasyID3 name, e.g. `title`, `artist` -> `{"method", "ref"}`,
    see `rules.match_value_to_rule`) matches; a missing field is "", several values are
    joined with ",".

    Raises: EvalError for a file without an ID3 tag, an unreadable file, or a rule that cannot be
    applied.
    """
    if result is None:
        return 0.0
    with input_errors("check_mp3_meta", MutagenError):
        tags = EasyID3(result)
        for field, rule in meta.items():
            value = tags.get(field, "")
            if isinstance(value, list):
                value = ",".join(value)
            if not match_value_to_rule(value, rule):
                return 0.0
    return 1.0


METRICS: dict[str, Metric] = {
    "check_mp3_meta": check_mp3_meta,
    "compare_epub": compare_epub,
}
