"""Workbook fixtures for the spreadsheet differential tests: small declarative specs written with
OpenPyXL, and LibreOffice round trips of them (the files OSWorld's tasks score are saved by
LibreOffice Calc; `soffice --convert-to` gives the same XML, computed formula values and CSV exports).

A `Book` is a tuple of `Sheet`s; `edit` / `restyle` derive a variant (a realistic agent mistake)
from a spec without touching it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.formatting.rule import CellIsRule, FormulaRule
from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
from openpyxl.pivot.fields import Text
from openpyxl.pivot.table import DataField, FieldItem, Location, PageField, PivotField, RowColField, TableDefinition
from openpyxl.styles import Font, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation

# The CSV filter the tasks' postconfig uses (UTF-8, comma, quote ", formatted text, first sheet).
CSV_FILTER = "csv:Text - txt - csv (StarCalc):44,34,UTF-8,,,,false,true,true,false,false,1"


@dataclass(frozen=True)
class Chart:
    """A chart of the sheet: `kind` "bar" (horizontal), "col" (vertical bars) or "line"; data
    columns `data` (min_col, min_row, max_col, max_row, titles in the first row), categories
    `cats` (same shape), placed at `anchor`."""

    kind: str
    data: tuple[int, int, int, int]
    cats: tuple[int, int, int, int] | None = None
    title: str | None = None
    anchor: str = "H2"
    source: str | None = None  # sheet holding the data (default: the chart's sheet)


@dataclass(frozen=True)
class Pivot:
    """A pivot table over `source` (e.g. "A1:C9") of sheet `source_sheet`: fields are the source
    columns by index; `rows`, `cols`, `filters` are field indexes, `data` (field, subtotal) pairs."""

    source_sheet: str
    source: str
    headers: tuple[str, ...]
    items: tuple[tuple[str, ...], ...]  # distinct values of each field (empty for numeric fields)
    rows: tuple[int, ...] = ()
    cols: tuple[int, ...] = ()
    filters: tuple[int, ...] = ()
    data: tuple[tuple[int, str, str], ...] = ()  # (field, subtotal, showDataAs)
    location: str = "A3:C8"
    name: str = "DataPilot1"


@dataclass(frozen=True)
class Conditional:
    """A conditional format on `cells`: `kind` "formula" (`formula` e.g. "WEEKDAY(A2;2)>5") or
    "cellIs" (`operator`, `formula` the reference), with `fill` / `font` colours (aRGB)."""

    cells: str
    kind: str
    formula: tuple[str, ...]
    operator: str | None = None
    fill: str | None = None
    font: str | None = None


@dataclass(frozen=True)
class Sheet:
    """One worksheet: `rows` from row 1 (None: empty cell; "=..." a formula) and its features."""

    name: str
    rows: tuple[tuple[Any, ...], ...]
    formats: tuple[tuple[str, str], ...] = ()  # (coordinate, number format)
    fills: tuple[tuple[str, str], ...] = ()  # (coordinate, aRGB solid fill)
    fonts: tuple[tuple[str, str | None, bool], ...] = ()  # (coordinate, aRGB colour, bold)
    merges: tuple[str, ...] = ()
    freeze: str | None = None
    zoom: int | None = None
    hidden_rows: tuple[int, ...] = ()
    validations: tuple[tuple[str, str, str], ...] = ()  # (sqref, type, formula1)
    charts: tuple[Chart, ...] = ()
    pivots: tuple[Pivot, ...] = ()
    conditionals: tuple[Conditional, ...] = ()


Book = tuple[Sheet, ...]


def sheet(name: str, rows: Sequence[Sequence[Any]], **features: Any) -> Sheet:
    """A `Sheet` from lists (features as `Sheet` fields, lists accepted)."""
    frozen = {key: tuple(tuple(v) if isinstance(v, list) else v for v in value) if isinstance(value, list) else value
              for key, value in features.items()}
    return Sheet(name, tuple(tuple(row) for row in rows), **frozen)


def edit(book: Book, changes: dict[str, Any], index: int = 0) -> Book:
    """`book` with cells of sheet `index` changed (`{"B3": value}`; rows grow as needed)."""
    rows = [list(row) for row in book[index].rows]
    for coordinate, value in changes.items():
        col, row = openpyxl.utils.cell.coordinate_from_string(coordinate)
        col_index, row_index = openpyxl.utils.column_index_from_string(col) - 1, row - 1
        while len(rows) <= row_index:
            rows.append([])
        while len(rows[row_index]) <= col_index:
            rows[row_index].append(None)
        rows[row_index][col_index] = value
    return restyle(book, index, rows=tuple(tuple(row) for row in rows))


def restyle(book: Book, index: int = 0, **features: Any) -> Book:
    """`book` with fields of sheet `index` replaced."""
    sheets = list(book)
    sheets[index] = dataclasses.replace(sheets[index], **features)
    return tuple(sheets)


def _chart(spec: Chart, ws: Any) -> Any:
    ws = ws.parent[spec.source] if spec.source else ws
    chart = LineChart() if spec.kind == "line" else BarChart()
    if spec.kind in ("bar", "col"):
        chart.type = spec.kind
    min_col, min_row, max_col, max_row = spec.data
    chart.add_data(Reference(ws, min_col=min_col, min_row=min_row, max_col=max_col, max_row=max_row),
                   titles_from_data=True)
    if spec.cats is not None:
        c_min_col, c_min_row, c_max_col, c_max_row = spec.cats
        chart.set_categories(Reference(ws, min_col=c_min_col, min_row=c_min_row, max_col=c_max_col,
                                       max_row=c_max_row))
    if spec.title is not None:
        chart.title = spec.title
    return chart


def _pivot(spec: Pivot) -> TableDefinition:
    fields = [CacheField(name=name, sharedItems=SharedItems(_fields=[Text(v=v) for v in values]) if values
                         else SharedItems(containsNumber=True, containsSemiMixedTypes=False, containsString=False))
              for name, values in zip(spec.headers, spec.items, strict=True)]
    cache = CacheDefinition(cacheSource=CacheSource(type="worksheet", worksheetSource=WorksheetSource(
        ref=spec.source, sheet=spec.source_sheet)), cacheFields=fields, recordCount=0)
    table = TableDefinition(name=spec.name, cacheId=1, dataCaption="Data",
                            location=Location(ref=spec.location, firstHeaderRow=1, firstDataRow=1, firstDataCol=1))
    data_fields = {field for field, _, _ in spec.data}
    pivot_fields = []
    for index, values in enumerate(spec.items):
        axis = "axisRow" if index in spec.rows else "axisCol" if index in spec.cols else \
            "axisPage" if index in spec.filters else None
        items = [FieldItem(x=i) for i in range(len(values))] + [FieldItem(t="default")] if axis else []
        pivot_fields.append(PivotField(axis=axis, dataField=index in data_fields or None, showAll=False, items=items))
    table.pivotFields = pivot_fields
    table.rowFields = [RowColField(x=i) for i in spec.rows]
    table.colFields = [RowColField(x=i) for i in spec.cols]
    table.pageFields = [PageField(fld=i, hier=-1) for i in spec.filters]
    table.dataFields = [DataField(name=f"{subtotal.title()} - {spec.headers[f]}", fld=f, subtotal=subtotal,
                                  showDataAs=show_as) for f, subtotal, show_as in spec.data]
    table.cache = cache
    return table


def _conditional(spec: Conditional) -> Any:
    fill = PatternFill(start_color=spec.fill, end_color=spec.fill, fill_type="solid") if spec.fill else None
    font = Font(color=spec.font) if spec.font else None
    if spec.kind == "cellIs":
        return CellIsRule(operator=spec.operator, formula=list(spec.formula), fill=fill, font=font)
    return FormulaRule(formula=list(spec.formula), fill=fill, font=font)


def write_book(book: Book, path: Path) -> Path:
    """Write `book` as an xlsx file at `path` (OpenPyXL)."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for spec in book:
        ws = workbook.create_sheet(spec.name)
        for row in spec.rows:
            ws.append(list(row))
        for coordinate, number_format in spec.formats:
            ws[coordinate].number_format = number_format
        for coordinate, colour in spec.fills:
            ws[coordinate].fill = PatternFill(start_color=colour, end_color=colour, fill_type="solid")
        for coordinate, colour, bold in spec.fonts:
            ws[coordinate].font = Font(color=colour, bold=bold)
        for merged in spec.merges:
            ws.merge_cells(merged)
        if spec.freeze:
            ws.freeze_panes = spec.freeze
        if spec.zoom:
            ws.sheet_view.zoomScale = ws.sheet_view.zoomScaleNormal = spec.zoom
        for row_number in spec.hidden_rows:
            ws.row_dimensions[row_number].hidden = True
        for sqref, kind, formula in spec.validations:
            validation = DataValidation(type=kind, formula1=formula, allow_blank=True)
            validation.add(sqref)
            ws.add_data_validation(validation)
        for chart in spec.charts:
            ws.add_chart(_chart(chart, ws), chart.anchor)
        for pivot in spec.pivots:
            ws._pivots.append(_pivot(pivot))
        for conditional in spec.conditionals:
            ws.conditional_formatting.add(conditional.cells, _conditional(conditional))
    path.parent.mkdir(parents=True, exist_ok=True)
    workbook.save(path)
    return path


def _soffice(args: list[str], work: Path) -> None:
    profile = work / "lo-profile"
    command = ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", *args]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"soffice failed ({completed.returncode}): {completed.stderr[-2000:]}")


def libreoffice_cache(request: Any, tmp_path_factory: Any) -> Path:
    """Directory for `libreoffice_convert`'s cache: pytest's cache dir (kept between runs), or a
    temporary one when the cache plugin is off (`-p no:cacheprovider`)."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("osworld-libreoffice"))
    return Path(tmp_path_factory.mktemp("osworld-libreoffice"))


def _content_key(path: Path, target: str) -> str:
    """Hash of an xlsx file's parts but its timestamps (`docProps/core.xml`), and of `target`."""
    digest = hashlib.sha256(target.encode())
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if name != "docProps/core.xml":
                digest.update(name.encode() + b"\0" + archive.read(name))
    return digest.hexdigest()[:24]


def libreoffice_convert(files: list[Path], target: str, out_dir: Path, cache_dir: Path) -> None:
    """Convert `files` with LibreOffice (`--convert-to target`) into `out_dir`, the ones not yet
    converted in one soffice run. Each file's outputs (`<stem>.<ext>`, or `<stem>-<sheet>.csv` for a
    CSV export) are kept in `cache_dir` under a hash of its content and the target, so a rerun with
    unchanged fixtures does not start LibreOffice."""
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = {path: cache_dir / _content_key(path, target) for path in files}
    missing = [path for path, entry in entries.items() if not (entry / "done").exists()]
    if missing:
        # a staging dir of this call's own: pytest-xdist workers share the cache dir and convert at the same time
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=cache_dir))
        (staging / "out").mkdir(parents=True)
        _soffice(["--convert-to", target, "--outdir", str(staging / "out"), *map(str, missing)], staging)
        produced = sorted((staging / "out").iterdir())
        for path in missing:
            entry = entries[path]
            shutil.rmtree(entry, ignore_errors=True)
            entry.mkdir(parents=True)
            for output in produced:
                if output.stem == path.stem or output.name.startswith(f"{path.stem}-Sheet"):
                    shutil.copyfile(output, entry / output.name.replace(path.stem, "@", 1))
            (entry / "done").touch()
        shutil.rmtree(staging, ignore_errors=True)
    for path, entry in entries.items():
        for output in entry.iterdir():
            if output.name != "done":
                shutil.copyfile(output, out_dir / output.name.replace("@", path.stem, 1))
