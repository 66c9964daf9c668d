"""Opening text documents as OSWorld's docs metrics do (`desktop_env/evaluators/metrics/docs.py`).

OSWorld opens .docx files with python-docx's `Document(path)` and scores 0 when that fails, and
reads .odt paragraphs with odfpy. These helpers keep those rules in one place.
"""

from __future__ import annotations

import logging
from typing import Any

from docx import Document
from docx.document import Document as DocxDocument
from odf.opendocument import OpenDocument, load
from odf.text import P

logger = logging.getLogger(__name__)


def open_docx(path: Any) -> DocxDocument | None:
    """python-docx document at `path`, or None when python-docx cannot open it (OSWorld logs the
    error and scores 0). `path` None opens python-docx's default template, as OSWorld would."""
    try:
        return Document(path)
    except Exception as exc:  # OSWorld: `except Exception` -> logger.error, return 0
        logger.info("cannot open %r as .docx: %s", path, exc)
        return None


def open_odt(path: Any) -> OpenDocument | None:
    """odfpy document at `path`, or None when odfpy cannot open it (OSWorld scores 0)."""
    try:
        return load(path)
    except Exception as exc:  # OSWorld: `except Exception` -> logger.error, return 0
        logger.info("cannot open %r as .odt: %s", path, exc)
        return None


def odt_paragraph_texts(document: OpenDocument) -> list[str]:
    """Text of every `<text:p>` of `document`: its own text nodes and those directly inside its
    `<text:span>` children, nothing deeper (OSWorld's `get_paragraph_texts_odt`)."""
    texts: list[str] = []
    for paragraph in document.getElementsByType(P):
        parts: list[str] = []
        for node in paragraph.childNodes:
            if node.nodeType == node.TEXT_NODE:
                parts.append(node.data)
            elif node.nodeType == node.ELEMENT_NODE and node.tagName == "text:span":
                parts.extend(child.data for child in node.childNodes if child.nodeType == child.TEXT_NODE)
        texts.append("".join(parts))
    return texts


def docx_paragraph_texts(document: DocxDocument) -> list[str]:
    """`paragraph.text` of every body paragraph (python-docx: runs and hyperlinks, not tables)."""
    return [paragraph.text for paragraph in document.paragraphs]
