"""OSWorld `desktop_env/evaluators/metrics/docs.py`: text documents (LibreOffice Writer .docx/.odt).

Sub-modules by concern: `text` (paragraph texts, references, train records), `formatting`
(spacing, fonts, sub/strike-through, alignment, tab stops, colors, highlighting), `structure`
(tables, images, page breaks, footers, Writer's default font), `ocr` (text in a screenshot),
`load` (opening documents as OSWorld does). Each metric returns what OSWorld's function of the same
name returns on the same inputs (proven by `tests/oracle/test_docs.py`), except where its
docstring names a deliberate difference.
"""

from __future__ import annotations

from services.runner.osworld.metrics.base import Metric
from services.runner.osworld.metrics.docs.formatting import (
    check_highlighted_words,
    check_italic_font_size_14,
    check_tabstops,
    compare_font_names,
    compare_line_spacing,
    compare_subscript_contains,
    evaluate_colored_words_in_tables,
    evaluate_strike_through_last_paragraph,
    is_first_line_centered,
)
from services.runner.osworld.metrics.docs.ocr import compare_image_text
from services.runner.osworld.metrics.docs.structure import (
    compare_docx_images,
    compare_docx_tables,
    contains_page_break,
    find_default_font,
    has_page_numbers_in_footers,
)
from services.runner.osworld.metrics.docs.text import (
    compare_docx_files,
    compare_docx_files_and_ignore_new_lines,
    compare_references,
    compare_unique_train_records,
)
from services.runner.osworld.requirements import EASYOCR, Needs

METRICS: dict[str, Metric] = {
    "check_highlighted_words": check_highlighted_words,
    "check_italic_font_size_14": check_italic_font_size_14,
    "check_tabstops": check_tabstops,
    "compare_docx_files": compare_docx_files,
    "compare_docx_files_and_ignore_new_lines": compare_docx_files_and_ignore_new_lines,
    "compare_docx_images": compare_docx_images,
    "compare_docx_tables": compare_docx_tables,
    "compare_font_names": compare_font_names,
    "compare_image_text": compare_image_text,
    "compare_line_spacing": compare_line_spacing,
    "compare_references": compare_references,
    "compare_subscript_contains": compare_subscript_contains,
    "compare_unique_train_records": compare_unique_train_records,
    "contains_page_break": contains_page_break,
    "evaluate_colored_words_in_tables": evaluate_colored_words_in_tables,
    "evaluate_strike_through_last_paragraph": evaluate_strike_through_last_paragraph,
    "find_default_font": find_default_font,
    "has_page_numbers_in_footers": has_page_numbers_in_footers,
    "is_first_line_centered": is_first_line_centered,
}
NEEDS: dict[str, Needs] = {
    "compare_image_text": frozenset({EASYOCR}),  # Tesseract stands in for easyocr (see docs/ocr.py)
}
