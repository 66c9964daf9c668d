"""Character and paragraph formatting checks of documents (OSWorld
`desktop_env/evaluators/metrics/docs.py`): line spacing, font names and sizes, subscript,
strike-through, alignment, tab stops, word colors in tables, highlighting in .odt.

Every check reads direct formatting through python-docx (odfpy for .odt) as OSWorld does; styles
inherited from paragraph or character styles are not resolved (OSWorld does not either). Scores are
1.0 / 0.0 (`check_tabstops`: a closeness in [0, 1]); a missing or unreadable file scores 0.0; an
input OSWorld's function crashes on raises EvalError.
"""

from __future__ import annotations

import re
from typing import Any

from docx.document import Document as DocxDocument
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.shared import RGBColor
from odf.opendocument import load
from odf.text import Span
from skimage.color import deltaE_ciede2000, rgb2lab

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.docs.load import open_docx
from services.runner.osworld.metrics.docs.text import compare_docx_files


def _same_text_result(result_path: Any, expected_path: Any) -> DocxDocument | None:
    """The result document when both paths are given and its text matches the expected file's
    (`compare_docx_files` defaults), else None: the preamble of OSWorld's formatting checks."""
    if not result_path or not expected_path or not compare_docx_files(result_path, expected_path):
        return None
    return open_docx(result_path)


@crashes_as_eval_error("compare_line_spacing")
def compare_line_spacing(docx_file1: Any, docx_file2: Any) -> float:
    """OSWorld `compare_line_spacing`: same text (`compare_docx_files` defaults), same paragraph
    count and the same direct `paragraph_format.line_spacing` (multiple or Length) in every paragraph."""
    if not docx_file1 or not docx_file2:
        return 0.0
    if not compare_docx_files(docx_file1, docx_file2):
        return 0.0
    doc1, doc2 = open_docx(docx_file1), open_docx(docx_file2)
    if doc1 is None or doc2 is None:
        return 0.0
    if len(doc1.paragraphs) != len(doc2.paragraphs):
        return 0.0
    for para1, para2 in zip(doc1.paragraphs, doc2.paragraphs, strict=True):
        if para1.paragraph_format.line_spacing != para2.paragraph_format.line_spacing:
            return 0.0
    return 1.0


@crashes_as_eval_error("compare_font_names")
def compare_font_names(docx_file: Any, rules: Any) -> float:
    """OSWorld `compare_font_names`: every run of every body paragraph has the direct font name
    `rules["font_name"]`. Raises: EvalError when `rules` has no `font_name` (OSWorld's KeyError)."""
    if not docx_file:
        return 0.0
    document = open_docx(docx_file)
    if document is None:
        return 0.0
    expected = rules["font_name"]
    for paragraph in document.paragraphs:
        for run in paragraph.runs:
            if run.font.name != expected:
                return 0.0
    return 1.0


@crashes_as_eval_error("compare_subscript_contains")
def compare_subscript_contains(docx_file1: Any, docx_file2: Any) -> float:
    """OSWorld `compare_subscript_contains`: some run, at the same paragraph and run index in both
    files, is subscript in both."""
    if not docx_file1 or not docx_file2:
        return 0.0
    doc1, doc2 = open_docx(docx_file1), open_docx(docx_file2)
    if doc1 is None or doc2 is None:
        return 0.0
    for para1, para2 in zip(doc1.paragraphs, doc2.paragraphs, strict=False):
        for run1, run2 in zip(para1.runs, para2.runs, strict=False):
            if run1.font.subscript and run2.font.subscript:
                return 1.0
    return 0.0


@crashes_as_eval_error("is_first_line_centered")
def is_first_line_centered(docx_file: Any) -> float:
    """OSWorld `is_first_line_centered`: the first body paragraph is directly centered.
    Raises: EvalError for a document without paragraphs (OSWorld's IndexError)."""
    if not docx_file:
        return 0.0
    document = open_docx(docx_file)
    if document is None:
        return 0.0
    first = document.paragraphs[0]
    return 1.0 if first.paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER else 0.0


@crashes_as_eval_error("check_italic_font_size_14")
def check_italic_font_size_14(path1: Any, path2: Any) -> float:
    """OSWorld `check_italic_font_size_14`: same text as the expected file and every directly
    italic run has a direct font size of 14 pt."""
    document = _same_text_result(path1, path2)
    if document is None:
        return 0.0
    for paragraph in document.paragraphs:
        for run in paragraph.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


@crashes_as_eval_error("evaluate_strike_through_last_paragraph")
def evaluate_strike_through_last_paragraph(file_path1: Any, file_path2: Any) -> float:
    """OSWorld `evaluate_strike_through_last_paragraph`: same text as the expected file and every run
    of the last body paragraph is struck through. Raises: EvalError for a document without paragraphs."""
    document = _same_text_result(file_path1, file_path2)
    if document is None:
        return 0.0
    last = document.paragraphs[-1]
    return 1.0 if all(run.font.strike for run in last.runs) else 0.0


def _color_difference(rgb1: Any, rgb2: Any) -> Any:
    """CIEDE2000 color difference of two 0-255 RGB triples (scikit-image `rgb2lab`, `deltaE_ciede2000`)."""
    lab1 = rgb2lab([rgb1[0] / 255.0, rgb1[1] / 255.0, rgb1[2] / 255.0])
    lab2 = rgb2lab([rgb2[0] / 255.0, rgb2[1] / 255.0, rgb2[2] / 255.0])
    return deltaE_ciede2000(lab1, lab2)


@crashes_as_eval_error("evaluate_colored_words_in_tables")
def evaluate_colored_words_in_tables(file_path1: Any, file_path2: Any, **options: Any) -> float:
    """OSWorld `evaluate_colored_words_in_tables`: same text as the expected file, and in every table
    cell each run whose text starts with a vowel is red, every other non-empty run blue (CIEDE2000
    difference at most `threshold`, default 3.5). Raises: EvalError when a table run has no
    direct RGB color (OSWorld's TypeError)."""
    document = _same_text_result(file_path1, file_path2)
    if document is None:
        return 0.0
    threshold = options.get("threshold", 3.5)
    for table in document.tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        word = run.text
                        if not word:
                            continue
                        target = RGBColor(255, 0, 0) if word[0].lower() in "aeiou" else RGBColor(0, 0, 255)
                        if _color_difference(run.font.color.rgb, target) > threshold:
                            return 0.0
    return 1.0


def _span_highlighted(document: Any, style_name: str) -> bool:
    """Whether an automatic style named `style_name` has a property element with background color
    `#ffff00`. Visits every automatic style, as OSWorld's loop does (its `break` leaves only the
    property loop), so a style whose attributes odfpy rejects fails the same way."""
    highlighted = False
    for automatic_style in document.automaticstyles.childNodes:
        if automatic_style.getAttribute("name") != style_name:
            continue
        for element in automatic_style.childNodes:
            if element.getAttribute("backgroundcolor") == "#ffff00":
                highlighted = True
                break
    return highlighted


@crashes_as_eval_error("check_highlighted_words")
def check_highlighted_words(file_path1: Any, file_path2: Any) -> float:
    """OSWorld `check_highlighted_words` (.odt): same text as the expected file and no `<text:span>`
    whose automatic style has the yellow background `#ffff00`. Scores 1.0 when nothing is
    highlighted. Raises: EvalError when the result cannot be read by odfpy after the text matched."""
    if not file_path1 or not file_path2:
        return 0.0
    if not compare_docx_files(file_path1, file_path2):
        return 0.0
    document = load(file_path1)
    for span in document.getElementsByType(Span):
        style_name = span.getAttribute("stylename")
        if style_name and _span_highlighted(document, style_name):
            return 0.0
    return 1.0


def _counted_tab(tab: Any) -> bool:
    """A tab stop that counts: not a CLEAR stop, not the default left stop at position 0."""
    return not (tab.alignment == WD_TAB_ALIGNMENT.CLEAR or (tab.alignment == WD_TAB_ALIGNMENT.LEFT
                                                            and tab.position == 0))


@crashes_as_eval_error("check_tabstops")
def check_tabstops(docx_file1: Any, docx_file2: Any, **options: Any) -> float:
    """OSWorld `check_tabstops`: the non-blank paragraphs of the result (1) and the expected file (2)
    have tab stops of the same kinds at close positions.

    Options: `word_number_split_by_tabstop` (int: each result paragraph's `index`-th tab-separated
    part, default 0, must hold that many words). Score: `1 - mean over paragraphs of (sum of
    |position differences| / text width of file 2's first section)`, EMU over EMU; 0.0 when the
    counts or kinds differ. Raises: EvalError when there are no non-blank paragraphs (OSWorld divides by 0).
    """
    if not docx_file1 or not docx_file2:
        return 0.0
    doc1, doc2 = open_docx(docx_file1), open_docx(docx_file2)
    if doc1 is None or doc2 is None:
        return 0.0
    paragraphs1 = [p for p in doc1.paragraphs if p.text.strip()]
    paragraphs2 = [p for p in doc2.paragraphs if p.text.strip()]
    if len(paragraphs1) != len(paragraphs2):
        return 0.0
    if options.get("word_number_split_by_tabstop", None) is not None:
        number = options["word_number_split_by_tabstop"]
        index = options.get("index", 0)
        for paragraph in paragraphs1:
            part = paragraph.text.split("\t")[index]
            if len([word for word in re.split(r"\s", part) if word.strip()]) != number:
                return 0.0
    section: Any = doc2.sections[0]
    width = section.page_width - section.left_margin - section.right_margin
    minus = 0.0
    for para1, para2 in zip(paragraphs1, paragraphs2, strict=True):
        tabs1 = [tab for tab in para1.paragraph_format.tab_stops if _counted_tab(tab)]
        tabs2 = [tab for tab in para2.paragraph_format.tab_stops if _counted_tab(tab)]
        if len(tabs1) != len(tabs2):
            return 0.0
        difference = 0.0
        for tab1, tab2 in zip(tabs1, tabs2, strict=True):
            if tab1.alignment != tab2.alignment:
                return 0.0
            difference += abs(tab1.position - tab2.position)
        minus += difference / width
    return float(1 - minus / len(paragraphs1))
