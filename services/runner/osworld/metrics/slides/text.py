"""Text, font and bullet checks of `compare_pptx_files` (OSWorld
`desktop_env/evaluators/metrics/slides.py`): table cells, text frames, and the text shapes of a
slide including those inside groups.

Each function answers whether OSWorld's comparison returns 0 at that point, reading the same
python-pptx properties in the same order (some of them, like a paragraph's `level` or a run's font
color, add empty XML elements as they are read; the bullet check reads the slide's XML after them,
as OSWorld's does).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from pptx.enum.text import PP_ALIGN

from services.runner.osworld.metrics.slides.options import PptxOptions

DRAWING_NS = {
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
}


def text_shapes(slide: Any) -> list[Any]:
    """Shapes with text of `slide`, depth first, including those inside groups (OSWorld's
    `get_all_text_shapes`)."""

    def collect(shape: Any) -> list[Any]:
        found = [shape] if hasattr(shape, "text") and hasattr(shape, "text_frame") else []
        if hasattr(shape, "shapes"):
            for child in shape.shapes:
                found.extend(collect(child))
        return found

    return [found for shape in slide.shapes for found in collect(shape)]


def _flag_differs(value1: Any, value2: Any) -> bool:
    """Bold / italic differ, None and False counting as the same."""
    return value1 != value2 and not ((value1 is None or value1 is False) and (value2 is None or value2 is False))


def _underline_differs(value1: Any, value2: Any) -> bool:
    """Underline differs: both set to different values, or one None and the other True."""
    if value1 == value2:
        return False
    if value1 is not None and value2 is not None:
        return True
    return (value1 is None and value2 is True) or (value1 is True and value2 is None)


def _color_differs(run1: Any, run2: Any) -> bool:
    """Both runs have an RGB font color and the colors differ (no RGB on either side: no check)."""
    if hasattr(run1.font.color, "rgb") and hasattr(run2.font.color, "rgb"):
        return bool(run1.font.color.rgb != run2.font.color.rgb)
    return False


def table_fails(table1: Any, table2: Any, opts: PptxOptions) -> bool:
    """Whether two tables differ in OSWorld's table check: row/column counts, paragraph and run
    counts per cell, run colors (when `examine_color_rgb`), bold, italic, underline (always)."""
    if len(table1.rows) != len(table2.rows) or len(table1.columns) != len(table2.columns):
        return True
    for row in range(len(table1.rows)):
        for column in range(len(table1.columns)):
            paragraphs1 = table1.cell(row, column).text_frame.paragraphs
            paragraphs2 = table2.cell(row, column).text_frame.paragraphs
            if len(paragraphs1) != len(paragraphs2):
                return True
            for para1, para2 in zip(paragraphs1, paragraphs2, strict=True):
                if len(para1.runs) != len(para2.runs):
                    return True
                for run1, run2 in zip(para1.runs, para2.runs, strict=True):
                    if _color_differs(run1, run2) and opts.examine_color_rgb:
                        return True
                    if _flag_differs(run1.font.bold, run2.font.bold):
                        return True
                    if _flag_differs(run1.font.italic, run2.font.italic):
                        return True
                    if _underline_differs(run1.font.underline, run2.font.underline):
                        return True
    return False


def _alignment(paragraph: Any) -> Any:
    """Paragraph alignment, None read as LEFT (the default)."""
    alignment = paragraph.alignment
    return PP_ALIGN.LEFT if alignment is None else alignment


def extract_bullets(xml_text: str) -> list[tuple[Any, Any, str, Any]]:
    """(level, bullet char, text, bullet color) of every non-blank `<a:p>` in a slide's XML, with
    OSWorld's placeholders ("No Level", "No Bullet", "No Color") for what a paragraph lacks."""
    bullets: list[tuple[Any, Any, str, Any]] = []
    for paragraph in ET.fromstring(xml_text).findall(".//a:p", DRAWING_NS):
        pPr = paragraph.find("a:pPr", DRAWING_NS)
        if pPr is not None:
            char_elem = pPr.find("a:buChar", DRAWING_NS)
            color_elem = pPr.find("a:buClr/a:srgbClr", DRAWING_NS)
            level = pPr.get("lvl")
            char = char_elem.get("char") if char_elem is not None else "No Bullet"
            color = color_elem.get("val") if color_elem is not None else "No Color"
        else:
            level, char, color = "No Level", "No Bullet", "No Color"
        text = "".join(t.text for t in paragraph.findall(".//a:t", DRAWING_NS))  # type: ignore[misc]
        if text.strip():
            bullets.append((level, char, text, color))
    return bullets


def bullets_match(bullets1: list[tuple[Any, Any, str, Any]], bullets2: list[tuple[Any, Any, str, Any]]) -> bool:
    """Same count, texts and bullet chars, and levels with None read as "0"; colors are not compared."""
    if len(bullets1) != len(bullets2):
        return False
    for (level1, char1, text1, _), (level2, char2, text2, _) in zip(bullets1, bullets2, strict=True):
        if text1 != text2 or char1 != char2:
            return False
        if ("0" if level1 is None else level1) != ("0" if level2 is None else level2):
            return False
    return True


def _bullets_fail(run1: Any, run2: Any) -> bool:
    """The bullets of the two runs' slides differ. Any failure to read them skips the check."""
    try:
        bullets1 = extract_bullets(run1.part.blob.decode("utf-8"))
        bullets2 = extract_bullets(run2.part.blob.decode("utf-8"))
        return not bullets_match(bullets1, bullets2)
    except Exception:  # OSWorld: a bare `except: pass` around the bullet comparison
        return False


def _run_fails(run1: Any, run2: Any, opts: PptxOptions) -> bool:
    """Font name, size, bold, italic, RGB color, underline, strike-through, bullets of a run pair."""
    if run1.font.name != run2.font.name and opts.examine_font_name:
        return True
    if run1.font.size != run2.font.size and opts.examine_font_size:
        return True
    if _flag_differs(run1.font.bold, run2.font.bold) and opts.examine_font_bold:
        return True
    if _flag_differs(run1.font.italic, run2.font.italic) and opts.examine_font_italic:
        return True
    if _color_differs(run1, run2) and opts.examine_color_rgb:
        return True
    if _underline_differs(run1.font.underline, run2.font.underline) and opts.examine_font_underline:
        return True
    strike1 = run1.font._element.attrib.get("strike", "noStrike")
    strike2 = run2.font._element.attrib.get("strike", "noStrike")
    if strike1 != strike2 and opts.examine_strike_through:
        return True
    return bool(opts.examine_bullets and _bullets_fail(run1, run2))


def text_frame_fails(shape1: Any, shape2: Any, opts: PptxOptions) -> bool:
    """Whether two text shapes differ: stripped text, paragraph count, and per paragraph alignment,
    text, level, run count and every run's formatting (each check as its option allows)."""
    if shape1.text.strip() != shape2.text.strip() and opts.examine_text:
        return True
    paragraphs1, paragraphs2 = shape1.text_frame.paragraphs, shape2.text_frame.paragraphs
    if len(paragraphs1) != len(paragraphs2):
        return True
    for para1, para2 in zip(paragraphs1, paragraphs2, strict=True):
        if opts.examine_alignment and _alignment(para1) != _alignment(para2):
            return True
        if para1.text != para2.text and opts.examine_text:
            return True
        if para1.level != para2.level and opts.examine_indent:
            return True
        if len(para1.runs) != len(para2.runs):
            return True
        for run1, run2 in zip(para1.runs, para2.runs, strict=True):
            if _run_fails(run1, run2, opts):
                return True
    return False


def all_text_shapes_fail(shapes1: list[Any], shapes2: list[Any], opts: PptxOptions) -> bool:
    """OSWorld's closing check of a slide over all text shapes, groups included: with
    `examine_alignment` and equal counts, stripped texts (when `examine_text`), paragraph counts and
    alignments must agree; otherwise only the counts must."""
    if opts.examine_alignment and len(shapes1) == len(shapes2):
        for shape1, shape2 in zip(shapes1, shapes2, strict=True):
            if shape1.text.strip() != shape2.text.strip() and opts.examine_text:
                return True
            paragraphs1, paragraphs2 = shape1.text_frame.paragraphs, shape2.text_frame.paragraphs
            if len(paragraphs1) != len(paragraphs2):
                return True
            if any(_alignment(p1) != _alignment(p2) for p1, p2 in zip(paragraphs1, paragraphs2, strict=True)):
                return True
        return False
    return len(shapes1) != len(shapes2)
