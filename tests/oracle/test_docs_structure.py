"""Differential tests of the docs structure and settings metrics (`metrics/docs/structure.py`) and
of `compare_image_text` (`metrics/docs/ocr.py`) against OSWorld's
`desktop_env/evaluators/metrics/docs.py`, on each task that uses them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from docx import Document
from PIL import Image, ImageDraw, ImageFont

from services.runner.osworld.metrics.docs import (
    compare_docx_images,
    compare_docx_tables,
    compare_image_text,
    contains_page_break,
    find_default_font,
    has_page_numbers_in_footers,
)
from services.runner.osworld.metrics.docs.ocr import read_xwd
from tests.oracle.client import Oracle
from tests.oracle.docx_fixtures import (
    docx,
    footer_doc,
    image_doc,
    lo_docs,
    page_break_doc,
    png_bytes,
    table_doc,
)
from tests.oracle.office_support import agree, metric_uses, oracle_raises, rules_of, tasks_using

__all__ = ["lo_docs"]

DOCS = "metrics.docs"
STUBS = ("easyocr",)

GRAPHEMES = [["Grapheme", "Sound", "Example"], ["a", "/a/", "apple"], ["ai", "/ay/", "rain"]]
GPT4 = [["Model", "Success rate"], ["GPT-4", "12.24%"], ["GPT-4V", "12.17%"]]
PRICES = [["Item", "Price"], ["Apple", "$1.00"], ["Pear", "$1.25"]]
EMPTY_7X5 = [[""] * 7 for _ in range(5)]


def _table_cases(task_id: str, tmp: Path) -> tuple[list[str], dict[str, tuple[str, float | None]]]:
    """(gold per use, label -> (result, best expected score over the uses)) of a compare_docx_tables task."""
    if task_id.startswith("66399b0d"):
        return ([table_doc(tmp / "gold.docx", [EMPTY_7X5])],
                {"7 columns x 5 rows": (table_doc(tmp / "good.docx", [EMPTY_7X5]), 1.0),
                 "5 columns x 7 rows": (table_doc(tmp / "swap.docx", [[[""] * 5 for _ in range(7)]]), 0.0),
                 "no table": (docx(tmp / "none.docx", ["Table of work effort"]), 0.0)})
    if task_id.startswith("936321ce"):
        spaced = [[f" {cell} " for cell in row] for row in GRAPHEMES]
        return ([table_doc(tmp / "gold.docx", [GRAPHEMES]), table_doc(tmp / "gold2.docx", [GRAPHEMES[1:]])],
                {"header kept": (table_doc(tmp / "good.docx", [spaced]), 1.0),
                 "header dropped": (table_doc(tmp / "nohead.docx", [GRAPHEMES[1:]]), 1.0),
                 "commas left in": (table_doc(tmp / "commas.docx", [[[", ".join(row)] for row in GRAPHEMES]]), 0.0)})
    if task_id.startswith("00fa164e"):
        return ([table_doc(tmp / "gold.docx", [GPT4])],
                {"GPT-4 rows": (table_doc(tmp / "good.docx", [GPT4]), 1.0),
                 "a value rounded": (table_doc(tmp / "round.docx", [GPT4[:2] + [["GPT-4V", "12.2%"]]]), 0.0),
                 "two tables": (table_doc(tmp / "two.docx", [GPT4, GPT4]), 0.0)})
    return ([table_doc(tmp / "gold.docx", [PRICES])],
            {"prices": (table_doc(tmp / "good.docx", [PRICES]), 1.0),
             "numbers lost their format": (table_doc(tmp / "plain.docx", [PRICES[:1] + [["Apple", "1"],
                                                                                       ["Pear", "1.25"]]]), 0.0)})


@pytest.mark.parametrize("task_id", tasks_using("compare_docx_tables"))
def test_compare_docx_tables_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                          lo_docs: dict[str, str]) -> None:
    uses = metric_uses(task_id, "compare_docx_tables")
    golds, cases = _table_cases(task_id, tmp_path)
    assert len(golds) == len(uses)
    for label, (result, expected) in cases.items():
        values = [agree(oracle, DOCS, compare_docx_tables, result, gold, stubs=STUBS) for gold in golds]
        assert max(values) == expected, label
    merged = Document(golds[0])
    table = merged.tables[0]
    table.cell(0, 0).merge(table.cell(0, 1))
    merged.save(str(tmp_path / "merged.docx"))
    for gold in golds:
        agree(oracle, DOCS, compare_docx_tables, lo_docs["table_7x5.docx"], gold, stubs=STUBS)
        agree(oracle, DOCS, compare_docx_tables, str(tmp_path / "merged.docx"), gold, stubs=STUBS)
        agree(oracle, DOCS, compare_docx_tables, None, gold, stubs=STUBS)


@pytest.mark.parametrize("task_id", tasks_using("compare_docx_images"))
def test_compare_docx_images_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                          lo_docs: dict[str, str]) -> None:
    screenshot, other = png_bytes((200, 30, 30)), png_bytes((30, 30, 200))
    gold = image_doc(tmp_path / "gold.docx", [screenshot])
    cases = {"the screenshot": (image_doc(tmp_path / "good.docx", [screenshot]), 1.0),
             "as Writer saves it": (lo_docs["image_red.docx"], 1.0),
             "same pixels as JPEG-free BMP": (image_doc(tmp_path / "bmp.docx", [_bmp((200, 30, 30))]), 1.0),
             "another image": (image_doc(tmp_path / "other.docx", [other]), 0.0),
             "pasted twice (one image part)": (image_doc(tmp_path / "twice.docx", [screenshot, screenshot]), 1.0),
             "and another one": (image_doc(tmp_path / "two.docx", [screenshot, other]), 0.0),
             "no image": (docx(tmp_path / "none.docx", ["Viewing your class schedule"]), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, compare_docx_images, result, gold, stubs=STUBS) == expected, label
    assert agree(oracle, DOCS, compare_docx_images, None, gold, stubs=STUBS) == 0.0


def _bmp(color: tuple[int, int, int]) -> bytes:
    from io import BytesIO

    buffer = BytesIO()
    Image.new("RGB", (40, 30), color).save(buffer, "BMP")
    return buffer.getvalue()


@pytest.mark.parametrize("task_id", tasks_using("contains_page_break"))
def test_contains_page_break_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                          lo_docs: dict[str, str]) -> None:
    [rules] = rules_of(task_id, "contains_page_break")
    expected_count = rules["page_break_count"]
    cases = {"one more break": (page_break_doc(tmp_path / "good.docx", expected_count), 1.0),
             "as Writer saves it": (lo_docs["breaks5.docx"], None),
             "no new break": (page_break_doc(tmp_path / "same.docx", expected_count - 1), 0.0),
             "two new breaks": (page_break_doc(tmp_path / "two.docx", expected_count + 1), 0.0),
             "no break at all": (docx(tmp_path / "none.docx", ["Declaration"]), 0.0)}
    for label, (result, expected) in cases.items():
        value = agree(oracle, DOCS, contains_page_break, result, rules, stubs=STUBS)
        if expected is not None:
            assert value == expected, label
        agree(oracle, DOCS, contains_page_break, result, {}, stubs=STUBS)  # no count: any break
        agree(oracle, DOCS, contains_page_break, result, None, stubs=STUBS)
    assert agree(oracle, DOCS, contains_page_break, None, rules, stubs=STUBS) == 0.0


@pytest.mark.parametrize("task_id", tasks_using("has_page_numbers_in_footers"))
def test_has_page_numbers_in_footers_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path,
                                                  lo_docs: dict[str, str]) -> None:
    cases = {"page field in every footer": (footer_doc(tmp_path / "good.docx", 2, [True, True]), 1.0),
             "as Writer saves it": (lo_docs["footers_numbered.docx"], 1.0),
             "Writer, one section without": (lo_docs["footers_partial.docx"], 0.0),
             "one section without": (footer_doc(tmp_path / "partial.docx", 2, [True, False]), 0.0),
             "no footer at all": (docx(tmp_path / "none.docx", ["Text"]), 0.0),
             "missing": (str(tmp_path / "missing.docx"), 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, has_page_numbers_in_footers, result, stubs=STUBS) == expected, label


def _registry(path: Path, items: str) -> str:
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/'
                    'registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" '
                    f'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n{items}\n</oor:items>\n')
    return str(path)


def _font_item(font: str) -> str:
    return ('<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Standard" oor:op="fuse">'
            f'<value>{font}</value></prop></item>')


OTHER_ITEM = ('<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse">'
              '<value>false</value></prop></item>')


@pytest.mark.parametrize("task_id", tasks_using("find_default_font"))
def test_find_default_font_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    [rules] = rules_of(task_id, "find_default_font")
    cases = {"set": (_registry(tmp_path / "good.xcu", OTHER_ITEM + _font_item("Times New Roman")), 1.0),
             "set twice, last wins": (_registry(tmp_path / "twice.xcu", _font_item("Arial") +
                                                _font_item("Times New Roman")), 1.0),
             "other font": (_registry(tmp_path / "arial.xcu", _font_item("Liberation Serif")), 0.0),
             "never set": (_registry(tmp_path / "none.xcu", OTHER_ITEM), 0.0),
             "not XML": (_write(tmp_path / "bad.xcu", "<oor:items"), 0.0),
             "missing": (str(tmp_path / "missing.xcu"), 0.0), "no file": (None, 0.0)}
    for label, (result, expected) in cases.items():
        assert agree(oracle, DOCS, find_default_font, result, rules, stubs=STUBS) == expected, label
    oracle_raises(oracle, DOCS, find_default_font, cases["set"][0], {}, stubs=STUBS)


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _terminal_screenshot(path: Path, lines: list[str], fmt: str = "PNG") -> str:
    """A terminal window: light text on a dark background, in DejaVu Sans Mono when installed."""
    try:
        font: ImageFont.FreeTypeFont | ImageFont.ImageFont = ImageFont.truetype("DejaVuSansMono.ttf", 18)
    except OSError:
        font = ImageFont.load_default(18)
    image = Image.new("RGB", (720, 40 + 28 * len(lines)), (48, 10, 36))
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((12, 16 + 28 * index), line, fill=(238, 238, 236), font=font)
    image.save(path, fmt)
    return str(path)


def _xwd(path: Path, image: Image.Image) -> str:
    """`image` as a 32-bit X11 window dump (BGRA pixels after a 100-byte header)."""
    header = struct.pack(">25I", 100, 7, 2, 32, image.width, image.height, *([0] * 19))
    pixels = bytes(channel for r, g, b in image.convert("RGB").getdata() for channel in (b, g, r, 0))
    path.write_bytes(header + pixels)
    return str(path)


@pytest.mark.parametrize("task_id", tasks_using("compare_image_text"))
def test_compare_image_text_on_the_tasks(task_id: str, oracle: Oracle, tmp_path: Path) -> None:
    """OSWorld reads the text with easyocr (stubbed in the oracle: it fetches models at run time),
    so only the paths before OCR are compared with the oracle; the OCR itself (Tesseract here) is
    checked on rendered terminal screenshots: the deliberate difference of `metrics/docs/ocr.py`."""
    all_rules = rules_of(task_id, "compare_image_text")
    assert [r["text"] for r in all_rules] == ["ls", "1s", "1s"]
    shot = _terminal_screenshot(tmp_path / "ls.png", ["user@user-virtual-machine:~$ ls",
                                                      "Desktop  Documents  Downloads  Music  Pictures"])
    blank = _terminal_screenshot(tmp_path / "blank.png", ["user@user-virtual-machine:~$"])
    distinct = [dict(t) for t in {tuple(sorted(rules.items())) for rules in all_rules}]
    assert any(compare_image_text(shot, rules) == 1.0 for rules in all_rules)  # "or" of the task's uses
    assert all(compare_image_text(blank, rules) == 0.0 for rules in distinct)
    with Image.open(shot) as image:
        dump = _xwd(tmp_path / "ls_xwd.png", image)
        assert read_xwd(dump).tobytes() == image.convert("RGB").tobytes()
    assert any(compare_image_text(dump, rules) == 1.0 for rules in all_rules)
    for rules in all_rules:
        assert agree(oracle, DOCS, compare_image_text, None, rules, stubs=STUBS) == 0.0
        assert agree(oracle, DOCS, compare_image_text, str(tmp_path / "missing.png"), rules, stubs=STUBS) == 0.0
    # a file that is no image, and a rule of another type: no text read, 0 (OSWorld's OCR errors score 0)
    assert agree(oracle, DOCS, compare_image_text, _write(tmp_path / "notes.png", "text"), all_rules[0],
                 stubs=STUBS) == 0.0
    assert compare_image_text(shot, {"type": "regex", "text": "ls"}) == 0.0
    assert oracle_raises(oracle, DOCS, compare_image_text, [shot], all_rules[0], stubs=STUBS) == "TypeError"
