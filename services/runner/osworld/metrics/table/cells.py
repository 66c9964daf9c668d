"""Cell values read from the xlsx XML, and cell style properties (OSWorld
`desktop_env/evaluators/metrics/utils.py`: `read_cell_value`, `_read_cell_style`).

`read_cell_value` reads the value LibreOffice / Excel stored in the file (for a formula, its cached
result), typed by the cell's `t` attribute: a number as float, a shared / inline / formula string as
str, an error as its text; None for an empty or missing cell, a boolean, a missing sheet or an
unreadable file. The sheet's part is found by its `sheetId` (`xl/worksheets/sheet<id>.xml`), as
OSWorld does.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from typing import Any

import lxml.cssselect
import lxml.etree
import xmltodict
from openpyxl.cell.cell import MergedCell

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
NAMESPACES = {
    "oo": _MAIN,
    "x14": "http://schemas.microsoft.com/office/spreadsheetml/2009/9/main",
    "xm": "http://schemas.microsoft.com/office/excel/2006/main",
}
"""Prefix -> namespace of the SpreadsheetML parts read here."""

PREFIXES: dict[str, str | None] = {_MAIN: None, NAMESPACES["x14"]: "x14", NAMESPACES["xm"]: "xm"}
"""Namespace -> prefix for `xmltodict` (the main namespace unprefixed)."""

SHEETS = lxml.cssselect.CSSSelector("oo|sheets>oo|sheet", namespaces=NAMESPACES)
_SHARED_STRINGS = lxml.cssselect.CSSSelector("oo|sst>oo|si", namespaces=NAMESPACES)
_TEXTS = lxml.cssselect.CSSSelector("oo|t", namespaces=NAMESPACES)
_CELLS = lxml.cssselect.CSSSelector("oo|row>oo|c", namespaces=NAMESPACES)


def sheet_part(archive: zipfile.ZipFile, sheet_name: str) -> str:
    """Zip member of sheet `sheet_name`: `xl/worksheets/sheet<sheetId>.xml`. Raises: KeyError."""
    workbook = lxml.etree.fromstring(archive.read("xl/workbook.xml"))
    sheet_ids = {sheet.get("name"): sheet.get("sheetId") for sheet in SHEETS(workbook)}
    return f"xl/worksheets/sheet{sheet_ids[sheet_name]}.xml"


@dataclass(frozen=True)
class _SheetXml:
    shared_strings: list[str]
    cells: dict[str, Any]  # coordinate -> first <c r=coordinate> element of a row


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    try:
        root = lxml.etree.fromstring(archive.read("xl/sharedStrings.xml"))
        return ["".join(text.text for text in _TEXTS(item)) for item in _SHARED_STRINGS(root)]
    except Exception:  # OSWorld: no or unreadable shared strings -> none
        return []


def _load_sheet_xml(path: str, sheet_name: str) -> _SheetXml | None:
    """Raises: TypeError when `path` is not a path (as OSWorld's `os.path.exists`)."""
    if not os.path.exists(path):
        return None
    try:
        with zipfile.ZipFile(path, "r") as archive:
            shared = _shared_strings(archive)
            root = lxml.etree.fromstring(archive.read(sheet_part(archive, sheet_name)))
    except Exception:  # OSWorld: a bad zip, a missing sheet or part, bad XML -> no value
        return None
    cells: dict[str, Any] = {}
    for cell in _CELLS(root):
        cells.setdefault(cell.get("r"), cell)
    return _SheetXml(shared, cells)


def _typed_value(element: Any, shared_strings: list[str]) -> Any:
    cell = xmltodict.parse(lxml.etree.tostring(element, encoding="unicode"), process_namespaces=True,
                           namespaces=PREFIXES)["c"]
    try:
        kind = cell["@t"] if "@t" in cell else "n"
        if kind == "n":
            return float(cell["v"])
        if kind == "s":
            return shared_strings[int(cell["v"])]
        if kind in ("str", "e"):
            return cell["v"]
        if kind == "inlineStr":
            return cell["is"]["t"]
    except (KeyError, ValueError):
        return None
    return None


class CellReader:
    """`value(path, sheet, coordinate)` as OSWorld's `read_cell_value`, each (file, sheet) parsed once."""

    def __init__(self) -> None:
        self._sheets: dict[tuple[str, str], _SheetXml | None] = {}

    def value(self, path: Any, sheet_name: str, coordinate: str) -> Any:
        """The stored value of cell `coordinate` (e.g. "B3"), see the module docstring.

        Raises: TypeError for a `path` that is no path; IndexError for a shared-string index past
        the table (both as OSWorld).
        """
        key = (path, sheet_name)
        if key not in self._sheets:
            self._sheets[key] = _load_sheet_xml(path, sheet_name)
        sheet = self._sheets[key]
        if sheet is None:
            return None
        element = sheet.cells.get(coordinate)
        return None if element is None else _typed_value(element, sheet.shared_strings)


def read_cell_value(path: Any, sheet_name: str, coordinate: str) -> Any:
    """OSWorld `read_cell_value` for one cell (see `CellReader.value`)."""
    return CellReader().value(path, sheet_name, coordinate)


def read_cell_style(style: str, cell: Any, diff_style: Any = None) -> Any:
    """Property `style` of an OpenPyXL cell, or of the conditional-format style `diff_style` applied
    to it. Styles: `number_format` (numeric cells), `font_name`, `font_family`, `font_color` (aRGB),
    `font_bold`, `font_italic`, `font_underline`, `font_size` (None for an empty cell), `fill_type`,
    `bgcolor` / `fgcolor` (aRGB; the fill's foreground colour of a cell, the background colour of a
    conditional style), `hyperlink`, `merge` (a merged cell other than the range's first).

    Raises: NotImplementedError for an unknown style, AttributeError for a missing part of a
    conditional style (both as OSWorld; callers decide whether that scores 0 or fails).
    """
    if style == "number_format":
        if cell.value is None or cell.data_type != "n":
            return None
        return cell.number_format if diff_style is None else diff_style.numFmt.formatCode
    font_attribute = {"font_name": "name", "font_family": "family", "font_bold": "bold", "font_italic": "italic",
                      "font_underline": "underline", "font_size": "size"}.get(style)
    if font_attribute is not None:
        return getattr((diff_style or cell).font, font_attribute) if cell.value is not None else None
    if style == "font_color":
        return (diff_style or cell).font.color.rgb if cell.value is not None else None
    if style == "fill_type":
        try:
            return (diff_style or cell).fill.tagname
        except Exception:
            return None
    if style in ("bgcolor", "fgcolor"):
        try:
            return cell.fill.fgColor.rgb if diff_style is None else diff_style.fill.bgColor.rgb
        except Exception:
            return None
    if style == "hyperlink":
        return cell.hyperlink or ("" if cell.value is not None else None)
    if style == "merge":
        return isinstance(cell, MergedCell)
    raise NotImplementedError(f"unsupported cell style {style!r}")
