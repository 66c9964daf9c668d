"""Writer documents for the docs differential tests, built with python-docx as the OSWorld tasks
describe them (the task's gold file and realistic agent results), plus the same files as
LibreOffice Writer saves them (session fixture `lo_docs`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from docx import Document
from docx.enum.text import WD_BREAK, WD_COLOR_INDEX, WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt, RGBColor
from PIL import Image

from tests.oracle.office_support import libreoffice_convert

Run = tuple[str, dict[str, Any]]
Para = str | list[Run]


@dataclass
class Case:
    """One agent result of a task, and the score each metric use of the task must give it (None:
    no fixed expectation, only agreement with OSWorld)."""

    label: str
    result: str
    scores: list[float | None] = field(default_factory=list)


def _apply_run(run: Any, props: dict[str, Any]) -> None:
    for key, value in props.items():
        if key == "color":
            run.font.color.rgb = RGBColor(*value)
        elif key == "size":
            run.font.size = None if value is None else Pt(value)
        elif key == "highlight":
            run.font.highlight_color = value
        else:
            setattr(run.font, key, value)


def add_paragraph(document: Any, para: Para, **fmt: Any) -> Any:
    """A body paragraph: plain text or (text, font properties) runs; `fmt` sets paragraph_format."""
    paragraph = document.add_paragraph()
    for text, props in ([(para, {})] if isinstance(para, str) else para):
        _apply_run(paragraph.add_run(text), props)
    for key, value in fmt.items():
        setattr(paragraph.paragraph_format, key, value)
    return paragraph


def docx(path: Path, paragraphs: list[Para], **fmt: Any) -> str:
    """Save a document of `paragraphs` (each with paragraph format `fmt`) at `path`."""
    document = Document()
    for para in paragraphs:
        add_paragraph(document, para, **fmt)
    document.save(str(path))
    return str(path)


def add_table(document: Any, rows: list[list[str]],
              color_of: Callable[[str], tuple[int, int, int] | None] | None = None) -> Any:
    """A table of `rows` (cell texts, one run per cell, colored `color_of(text)` when given)."""
    table = document.add_table(rows=len(rows), cols=len(rows[0]) if rows else 0)
    for i, row in enumerate(rows):
        for j, text in enumerate(row):
            run = table.cell(i, j).paragraphs[0].add_run(text)
            color = color_of(text) if color_of else None
            if color is not None:
                run.font.color.rgb = RGBColor(*color)
    return table


def page_break_doc(path: Path, breaks: int, text: str = "Statutory declaration") -> str:
    """Paragraphs separated by `breaks` page breaks (`<w:br w:type="page"/>` runs, Writer's Ctrl+Enter)."""
    document = Document()
    document.add_paragraph(text)
    for i in range(breaks):
        document.add_paragraph().add_run().add_break(WD_BREAK.PAGE)
        document.add_paragraph(f"Page {i + 2}")
    document.save(str(path))
    return str(path)


def add_page_field(paragraph: Any, shown: str = "1") -> None:
    """A `PAGE` field as Writer writes it: begin, instruction, separate, current value, end."""
    for kind, text in (("begin", None), (None, " PAGE "), ("separate", None), (None, shown), ("end", None)):
        run = paragraph.add_run()
        if kind is not None:
            char = OxmlElement("w:fldChar")
            char.set(qn("w:fldCharType"), kind)
            run._r.append(char)
        elif text == " PAGE ":
            instr = OxmlElement("w:instrText")
            instr.text = text
            run._r.append(instr)
        else:
            run.text = text


def footer_doc(path: Path, sections: int, numbered: list[bool], field_value: str = "1") -> str:
    """`sections` sections whose footers hold a page number field where `numbered` says so."""
    document = Document()
    for index in range(sections):
        if index:
            document.add_section()
        document.add_paragraph(f"Section {index + 1} text")
        footer = document.sections[index].footer
        footer.is_linked_to_previous = False
        paragraph = footer.paragraphs[0]
        paragraph.alignment = WD_PARAGRAPH_ALIGNMENT.LEFT
        if numbered[index]:
            paragraph.add_run("Page ")
            add_page_field(paragraph, field_value)
        else:
            paragraph.add_run("LibreOffice open source word processing")
    document.save(str(path))
    return str(path)


def tab_doc(path: Path, lines: list[str], stops: list[tuple[Any, float]]) -> str:
    """Lines whose paragraphs carry tab stops `stops` ((alignment, position in pt))."""
    document = Document()
    for line in lines:
        paragraph = document.add_paragraph(line)
        for alignment, position in stops:
            paragraph.paragraph_format.tab_stops.add_tab_stop(Pt(position), alignment)
    document.save(str(path))
    return str(path)


def highlighted_docx(path: Path, paragraphs: list[list[tuple[str, bool]]]) -> str:
    """Paragraphs of (text, highlighted in yellow) runs, to be saved as .odt by LibreOffice."""
    document = Document()
    for runs in paragraphs:
        paragraph = document.add_paragraph()
        for text, marked in runs:
            run = paragraph.add_run(text)
            if marked:
                run.font.highlight_color = WD_COLOR_INDEX.YELLOW
    document.save(str(path))
    return str(path)


SCRIPT = [
    [("Hello, this is ", False), ("Jane", True), (" from the recruitment team.", False)],
    [("Do you have a few minutes to talk about the ", False), ("study", True), ("?", False)],
    [("Thank you for your time.", False)],
]
CLEAN_SCRIPT = [[(text, False) for text, _ in para] for para in SCRIPT]
TABS_RESULT = ["The course textbook\tcan be purchased at the campus bookstore.",
               "Students may also\tbuy the e-book from the publisher website."]
TABS_RESULT_BAD = ["The course textbook can\tbe purchased at the campus bookstore.",
                   "Students may also\tbuy the e-book from the publisher website."]


NOVEL = ["Novels unit: introduction packet", "Read the first three chapters before class.",
         "Keep a reading journal.", "Quiz on Friday."]


def novel_doc(path: Path, double: int) -> str:
    """The novels packet with its first `double` paragraphs double spaced."""
    document = Document()
    for index, text in enumerate(NOVEL):
        add_paragraph(document, text, **({"line_spacing": 2.0} if index < double else {}))
    document.save(str(path))
    return str(path)


def png_bytes(color: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    """A small PNG screenshot stand-in of one color."""
    buffer = BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def image_doc(path: Path, images: list[bytes], text: str = "Viewing your class schedule") -> str:
    """Text followed by the pictures `images` (PNG bytes), each in its own paragraph."""
    document = Document()
    document.add_paragraph(text)
    for blob in images:
        document.add_picture(BytesIO(blob))
    document.save(str(path))
    return str(path)


def table_doc(path: Path, tables: list[list[list[str]]], before: str = "Table of work effort") -> str:
    """A paragraph and then the given tables (rows of cell texts)."""
    document = Document()
    document.add_paragraph(before)
    for rows in tables:
        add_table(document, rows)
        document.add_paragraph("")
    document.save(str(path))
    return str(path)


def _lo_sources(root: Path) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    sources = [
        Path(page_break_doc(root / "breaks5.docx", 5)),
        Path(footer_doc(root / "footers_numbered.docx", 2, [True, True])),
        Path(footer_doc(root / "footers_partial.docx", 2, [True, False])),
        Path(tab_doc(root / "tabs_right.docx", TABS_RESULT, [(WD_TAB_ALIGNMENT.RIGHT, 468)])),
        Path(docx(root / "spacing_double.docx", ["Introduction", "Body of the essay", "Conclusion"],
                  line_spacing=2.0)),
        Path(docx(root / "h2o.docx", ["Water", [("H", {}), ("2", {"subscript": True}), ("O is water.", {})]])),
        Path(docx(root / "italic14.docx", [[("Plain ", {"size": 12}), ("slanted", {"italic": True, "size": 14})]])),
        Path(docx(root / "strike_last.docx", ["Course outline", [("Redundant last paragraph", {"strike": True})]])),
        Path(novel_doc(root / "novel_double2.docx", 2)),
        Path(image_doc(root / "image_red.docx", [png_bytes((200, 30, 30))])),
        Path(table_doc(root / "table_7x5.docx", [[[""] * 7 for _ in range(5)]])),
    ]
    return sources


def _lo_odt_sources(root: Path) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    return [Path(highlighted_docx(root / "script_marked.docx", SCRIPT)),
            Path(highlighted_docx(root / "script_clean.docx", CLEAN_SCRIPT)),
            Path(highlighted_docx(root / "script_edited.docx", [[("Hi, this is Jane.", False)]] + CLEAN_SCRIPT[1:]))]


_LO_DOCS: dict[str, str] = {}
"""Built once per test session, whichever test module asks first (each module imports the fixture)."""


@pytest.fixture(scope="session")
def lo_docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Documents as LibreOffice Writer saves them: file name -> path (`<name>.docx` re-saved by
    Writer, `script_*.odt` the highlighting scripts saved as OpenDocument)."""
    if not _LO_DOCS:
        root = tmp_path_factory.mktemp("lo_docs")
        profile = root / "profile"
        saved = libreoffice_convert(_lo_sources(root / "src"), root / "docx", profile)
        saved.update(libreoffice_convert(_lo_odt_sources(root / "odt_src"), root / "odt", profile, ext="odt"))
        _LO_DOCS.update({path.name: str(path) for path in saved.values()})
    yield dict(_LO_DOCS)
