"""Structure checks of .docx documents (OSWorld `desktop_env/evaluators/metrics/docs.py`): tables,
embedded images, page breaks, page numbers in footers, and Writer's default font setting.

Scores are 1.0 / 0.0; a missing or unreadable document scores 0.0; an input OSWorld's function
crashes on (an image Pillow cannot decode, a ragged table) raises EvalError.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from PIL import Image

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics import lo_registry
from services.runner.osworld.metrics.docs.load import open_docx

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


@crashes_as_eval_error("compare_docx_tables")
def compare_docx_tables(docx_file1: Any, docx_file2: Any) -> float:
    """OSWorld `compare_docx_tables`: same number of body tables, each with the same row and column
    counts and the same stripped cell texts (python-docx `table.cell(i, j)`)."""
    if not docx_file1 or not docx_file2:
        return 0.0
    doc1, doc2 = open_docx(docx_file1), open_docx(docx_file2)
    if doc1 is None or doc2 is None:
        return 0.0
    tables1, tables2 = doc1.tables, doc2.tables
    if len(tables1) != len(tables2):
        return 0.0
    for table1, table2 in zip(tables1, tables2, strict=True):
        if len(table1.rows) != len(table2.rows) or len(table1.columns) != len(table2.columns):
            return 0.0
        for i in range(len(table1.rows)):
            for j in range(len(table1.columns)):
                if table1.cell(i, j).text.strip() != table2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


def _image_blobs(document: Any) -> list[bytes]:
    """Bytes of every image the main document part relates to, in relationship order."""
    return [rel.target_part.blob for rel in document.part.rels.values() if "image" in rel.reltype]


@crashes_as_eval_error("compare_docx_images")
def compare_docx_images(docx_file1: Any, docx_file2: Any) -> float:
    """OSWorld `compare_docx_images`: the main parts of both files relate to the same number of
    images with the same decoded pixels (Pillow `Image.open(...).tobytes()`), pairwise in order.
    Raises: EvalError for an image Pillow cannot decode or an external image link."""
    if not docx_file1 or not docx_file2:
        return 0.0
    doc1, doc2 = open_docx(docx_file1), open_docx(docx_file2)
    if doc1 is None or doc2 is None:
        return 0.0
    images1, images2 = _image_blobs(doc1), _image_blobs(doc2)
    if len(images1) != len(images2):
        return 0.0
    for blob1, blob2 in zip(images1, images2, strict=True):
        if Image.open(BytesIO(blob1)).tobytes() != Image.open(BytesIO(blob2)).tobytes():
            return 0.0
    return 1.0


@crashes_as_eval_error("contains_page_break")
def contains_page_break(docx_file: Any, rules: Any) -> float:
    """OSWorld `contains_page_break`: the body paragraphs' runs hold `<w:br w:type="page"/>` page
    breaks: at least one, and exactly `rules["page_break_count"]` when `rules` gives that count."""
    if not docx_file:
        return 0.0
    document = open_docx(docx_file)
    if document is None:
        return 0.0
    try:
        expected = rules["page_break_count"]
    except Exception:  # OSWorld: any failure to read the count means "no count"
        expected = None
    count = 0
    for paragraph in document.paragraphs:
        for run in paragraph.runs:
            for br in run.element.findall(".//w:br", {"w": W_NS}):
                if br.get(f"{{{W_NS}}}type") == "page":
                    count += 1
    if expected is not None and count != expected:
        return 0.0
    return 1.0 if count > 0 else 0.0


@crashes_as_eval_error("has_page_numbers_in_footers")
def has_page_numbers_in_footers(docx_file: Any) -> float:
    """OSWorld `has_page_numbers_in_footers`: the first footer paragraph of every section holds a
    digit (a page number field's current value, e.g. LibreOffice's `PAGE` field result "1")."""
    if not docx_file:
        return 0.0
    document = open_docx(docx_file)
    if document is None:
        return 0.0
    for section in document.sections:
        footer = section.footer
        text = footer.paragraphs[0].text if footer.paragraphs else ""
        if not any(char.isdigit() for char in text):
            return 0.0
    return 1.0


@crashes_as_eval_error("find_default_font")
def find_default_font(config_file_path: Any, rules: Any) -> float:
    """OSWorld `find_default_font`: Writer's default font (`registrymodifications.xcu`, item
    `/org.openoffice.Office.Writer/DefaultFont`, prop `Standard`, its last value) equals
    `rules["font_name"]`. An unreadable settings file counts as no default font.
    Raises: EvalError when `rules` has no `font_name`."""
    expected = rules["font_name"]
    if not config_file_path:
        return 0.0
    default_font = None
    try:
        root = lo_registry.parse(config_file_path)
        for prop in lo_registry.props(root, "/org.openoffice.Office.Writer/DefaultFont", "Standard", nested=True):
            for value in prop.findall("value"):
                default_font = value.text
    except Exception:  # OSWorld: any error while reading the file is logged; the value found so far stays
        pass
    return 1.0 if default_font == expected else 0.0
