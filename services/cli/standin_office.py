"""Stand-in office documents (see `standin_formats`): workbooks (openpyxl), documents (python-docx),
presentations (python-pptx), ODF (written directly) and PDF (PyMuPDF). A gold (expected-state) workbook,
document or presentation also carries what tasks ask agents to add, so a checker comparing such a feature
finds it missing from every start file.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from services.cli.standin_formats import FIXED_DATETIME, HEADER, WORDS, ZIP_TIME, Seed, fixed_zip, image


def xlsx(seed: Seed, gold: bool = False) -> bytes:
    """An XLSX workbook of three sheets (Sheet1..Sheet3), each a header and 12 rows. A `gold` (expected) file
    also has what tasks ask agents to add, so a checker comparing a feature finds it missing from any start
    file: a bar chart and a pivot table on Sheet2, frozen panes, an autofilter, conditional formatting, a data
    validation and merged cells on Sheet1."""
    from openpyxl import Workbook

    book = Workbook()
    assert book.active is not None
    book.active.title = "Sheet1"
    sheets = [book.active, book.create_sheet("Sheet2"), book.create_sheet("Sheet3")]
    for sheet in sheets:
        for row in [HEADER] + seed.rows(12):
            sheet.append(row)
        sheet.append(["Tag", None, None, seed.tag])
    if gold:
        _gold_features(book, seed)
    book.properties.creator = "cua-rollout"
    book.properties.created = book.properties.modified = FIXED_DATETIME
    out = io.BytesIO()
    book.save(out)
    return fixed_zip(out.getvalue())


def _gold_features(book: Any, seed: Seed) -> None:
    """Chart, pivot table, frozen panes, filter, conditional format, validation, merge (see `xlsx`)."""
    from openpyxl.chart import BarChart, Reference
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
    from openpyxl.pivot.fields import Text
    from openpyxl.pivot.record import RecordList
    from openpyxl.pivot.table import DataField, FieldItem, Location, PivotField, RowColField, TableDefinition
    from openpyxl.styles import PatternFill
    from openpyxl.worksheet.datavalidation import DataValidation

    first, second = book["Sheet1"], book["Sheet2"]
    chart = BarChart()
    chart.title = seed.words(2).title()
    chart.add_data(Reference(first, min_col=2, min_row=1, max_row=13), titles_from_data=True)
    chart.set_categories(Reference(first, min_col=1, min_row=2, max_row=13))
    second.add_chart(chart, "F2")
    first.freeze_panes = "B2"
    first.auto_filter.ref = "A1:D13"
    first.conditional_formatting.add("B2:B13", CellIsRule(operator="greaterThan", formula=["500"],
                                                          fill=PatternFill("solid", start_color="FFC7CE")))
    validation = DataValidation(type="whole", operator="between", formula1="0", formula2="1000")
    validation.add("B2:B13")
    first.add_data_validation(validation)
    first.merge_cells("F1:G1")
    names = sorted({str(first.cell(row, 1).value) for row in range(2, 14)})
    cache = CacheDefinition(
        cacheSource=CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref="A1:B13", sheet="Sheet1")),
        cacheFields=[CacheField(name="Name", sharedItems=SharedItems(_fields=[Text(v=n) for n in names],
                                                                     count=len(names))),
                     CacheField(name="Count", sharedItems=SharedItems(containsSemiMixedTypes=False,
                                                                      containsString=False, containsNumber=True,
                                                                      containsInteger=True))],
        recordCount=0, refreshOnLoad=True)
    cache.records = RecordList()
    pivot = TableDefinition(
        name="PivotTable1", cacheId=1, dataCaption="Values",
        location=Location(ref=f"A1:B{len(names) + 2}", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
        pivotFields=[PivotField(axis="axisRow", showAll=False,
                                items=[FieldItem(x=i) for i in range(len(names))] + [FieldItem(t="default")]),
                     PivotField(dataField=True, showAll=False)],
        rowFields=[RowColField(x=0)], dataFields=[DataField(name="Sum - Count", fld=1, subtotal="sum")])
    pivot.cache = cache
    second._pivots.append(pivot)


def docx(seed: Seed, gold: bool = False) -> bytes:
    """A DOCX document: a heading, paragraphs and a small table; a `gold` file also what tasks ask agents to
    add (`_gold_document`)."""
    from docx import Document

    document = Document()
    document.add_heading(seed.words(3).title(), level=1)
    document.add_paragraph(seed.tag)
    for _ in range(4):
        document.add_paragraph(seed.words(12).capitalize() + ".")
    # A references section, as the documents of OSWorld's reference-formatting tasks end with (their checker,
    # compare_references, pays 1.0 when neither document has one).
    document.add_paragraph("References")
    for _ in range(3):
        document.add_paragraph(f"{seed.words(2).title()}, {seed.rng.choice(WORDS)[0].upper()}. "
                               f"({seed.rng.randrange(1990, 2024)}). {seed.words(5).capitalize()}.")
    rows = seed.rows(3)
    table = document.add_table(rows=len(rows), cols=len(HEADER))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = str(value)
    if gold:
        _gold_document(document, seed)
    document.core_properties.created = document.core_properties.modified = FIXED_DATETIME
    out = io.BytesIO()
    document.save(out)
    return fixed_zip(out.getvalue())


def _gold_document(document: Any, seed: Seed) -> None:
    """What tasks ask agents to add to a document (see `docx`): a picture, a header, a centred bold
    heading, record lines of four comma-separated fields, another table."""
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Inches

    document.sections[0].header.paragraphs[0].text = seed.words(3)
    heading = document.add_paragraph()
    heading.alignment = WD_ALIGN_PARAGRAPH.CENTER
    heading.add_run(seed.words(4).title()).bold = True
    document.add_picture(io.BytesIO(image(seed, "PNG")), width=Inches(2))
    for number in range(3):
        document.add_paragraph(f"{seed.rng.choice(WORDS).title()}, T{seed.rng.randrange(10000)}, "
                               f"{seed.words(1)}, {number}")
    table = document.add_table(rows=2, cols=2)
    for cell in table._cells:
        cell.text = seed.words(1)


def pptx(seed: Seed, gold: bool = False) -> bytes:
    """A PPTX presentation: a title slide and two bulleted slides; a `gold` file also a slide with a
    picture, a table and speaker notes (what tasks ask agents to add)."""
    from pptx import Presentation

    deck = Presentation()
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = seed.words(3).title()
    title.placeholders[1].text = seed.tag
    for _ in range(2):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = seed.words(2).title()
        slide.placeholders[1].text = "\n".join(seed.words(5) for _ in range(3))
    if gold:
        from pptx.util import Inches

        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = seed.words(3).title()
        slide.shapes.add_picture(io.BytesIO(image(seed, "PNG")), Inches(1), Inches(2), width=Inches(3))
        table = slide.shapes.add_table(2, 2, Inches(5), Inches(2), Inches(3), Inches(1)).table
        for cell in (table.cell(r, c) for r in range(2) for c in range(2)):
            cell.text = seed.words(1)
        slide.notes_slide.notes_text_frame.text = seed.words(6)
    deck.core_properties.created = deck.core_properties.modified = FIXED_DATETIME
    out = io.BytesIO()
    deck.save(out)
    return fixed_zip(out.getvalue())


def odf(seed: Seed, spreadsheet: bool) -> bytes:
    """An ODS spreadsheet (header and 12 rows) or an ODT text document (paragraphs), written as ODF 1.2
    XML directly (the smallest package LibreOffice and odfpy open: mimetype, manifest, content)."""
    office = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
    names = (f'xmlns:office="{office}" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
             'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"')
    if spreadsheet:
        mimetype = "application/vnd.oasis.opendocument.spreadsheet"
        rows = "".join(
            "<table:table-row>" + "".join(
                f'<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}</text:p>'
                '</table:table-cell>'
                if isinstance(v, int | float) else
                f'<table:table-cell office:value-type="string"><text:p>{v}</text:p></table:table-cell>'
                for v in row) + "</table:table-row>"
            for row in [HEADER] + seed.rows(12) + [["Tag", seed.tag]])
        body = f'<office:spreadsheet><table:table table:name="Sheet1">{rows}</table:table></office:spreadsheet>'
    else:
        mimetype = "application/vnd.oasis.opendocument.text"
        paragraphs = "".join(f"<text:p>{line}</text:p>" for line in [seed.tag] + [seed.words(12) for _ in range(4)])
        body = f"<office:text>{paragraphs}</office:text>"
    content = (f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content {names} office:version="1.2">'
               f"<office:body>{body}</office:body></office:document-content>\n")
    manifest = ('<?xml version="1.0" encoding="UTF-8"?>\n<manifest:manifest xmlns:manifest="urn:oasis:names:tc:'
                'opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
                f'manifest:media-type="{mimetype}"/><manifest:file-entry manifest:full-path="content.xml" '
                'manifest:media-type="text/xml"/></manifest:manifest>\n')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for path, data in (("mimetype", mimetype), ("META-INF/manifest.xml", manifest), ("content.xml", content)):
            info = zipfile.ZipInfo(path, ZIP_TIME)
            info.compress_type = zipfile.ZIP_STORED if path == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out.getvalue()


def pdf(seed: Seed) -> bytes:
    """A two-page PDF of text lines (PyMuPDF)."""
    import pymupdf

    document = pymupdf.open()
    for page_number in range(2):
        page = document.new_page()
        lines = [seed.tag if page_number == 0 else seed.words(3).title()] + [seed.words(8) for _ in range(12)]
        page.insert_text((72, 72), "\n".join(lines), fontsize=12)
    document.set_metadata({"title": seed.words(3), "creator": "cua-rollout", "producer": "cua-rollout"})
    data: bytes = document.tobytes(garbage=3, deflate=True, no_new_id=True)
    document.close()
    return data
