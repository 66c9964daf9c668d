"""Sheet features compared by `compare_table` rules (OSWorld `desktop_env/evaluators/metrics/utils.py`:
`load_charts`, `load_pivot_tables`, `load_sparklines`, `load_rows_or_cols`, `load_filters`).

Each loader summarises one feature of a sheet as a plain value so that the result's and the
expected sheet's summaries compare with `==`. A sheet missing from the book gives `{}`. Errors
OSWorld does not catch (a property that does not exist, a one-cell chart anchor asked for its end)
propagate, and `compare_table` reports them as an EvalError.
"""

from __future__ import annotations

import itertools
import zipfile
from collections.abc import Callable, Iterable
from typing import Any

import lxml.cssselect
import lxml.etree
import xmltodict
from openpyxl import Workbook
from openpyxl.utils import coordinate_to_tuple

from services.runner.osworld.metrics.table.cells import NAMESPACES, PREFIXES, sheet_part

_SPARKLINES = lxml.cssselect.CSSSelector("x14|sparkline", namespaces=NAMESPACES)


def _worksheet(book: Any, sheet_name: str) -> Any:
    """`book[sheet_name]`, None when the sheet is missing. Raises: TypeError when `book` is None."""
    try:
        return book[sheet_name]
    except KeyError:
        return None


def load_sparklines(path: Any, sheet_name: str) -> dict[str, str]:
    """Sparklines of a sheet read from the xlsx XML: `{location: data range}`, e.g. `{"F3": "Sheet1!C3:E3"}`;
    `{}` for a file that is no zip. Raises: KeyError for a missing sheet (as OSWorld)."""
    try:
        with zipfile.ZipFile(path, "r") as archive:
            sheet = lxml.etree.fromstring(archive.read(sheet_part(archive, sheet_name)))
    except zipfile.BadZipFile:
        return {}
    found: dict[str, str] = {}
    for element in _SPARKLINES(sheet):
        parsed = xmltodict.parse(lxml.etree.tostring(element, encoding="unicode"), process_namespaces=True,
                                 namespaces=PREFIXES)["x14:sparkline"]
        found[parsed["xm:sqref"]] = parsed["xm:f"]
    return found


def _reference(data: Any) -> Any:
    """Formula of a series' values / categories (`numRef` before `strRef`), "" when it has none."""
    for kind in ("numRef", "strRef"):
        ref = getattr(data, kind, None)
        if hasattr(ref, "f"):
            return ref.f  # type: ignore[union-attr]
    return ""


def _title_text(title_of: Callable[[], Any]) -> Any:
    """Text of the first run of the title `title_of()` returns, None when it (or its owner) is absent."""
    try:
        return title_of().tx.rich.p[0].r[0].t
    except Exception:  # OSWorld: no title, or one without rich text -> None
        return None


def load_charts(book: Workbook, sheet_name: str, **options: Any) -> dict[str, Any]:
    """Charts of a sheet: `{"<values>,<categories>;...": {prop: value}}` keyed by the series' data
    references, props from `options["chart_props"]`: `title`, `legend` (position), `anchor`
    (`[editAs, from col, to row, to col, to row]`, as OSWorld), `width`, `height`, `type` (XML tag,
    e.g. "barChart"), `direction` ("bar" | "col"), `xtitle`, `ytitle`, `ztitle`."""
    worksheet = _worksheet(book, sheet_name)
    if worksheet is None:
        return {}
    props = set(options.get("chart_props", ()))
    charts: dict[str, Any] = {}
    for chart in worksheet._charts:
        series = ";".join(f"{_reference(s.val)},{_reference(s.cat)}" for s in chart.series)
        info: dict[str, Any] = {}
        if "title" in props:
            info["title"] = _title_text(lambda: chart.title)  # noqa: B023 (called at once)
        if "legend" in props:
            info["legend"] = chart.legend.position if chart.legend is not None else None
        if "anchor" in props:
            anchor = chart.anchor
            info["anchor"] = [anchor.editAs, anchor._from.col, anchor.to.row, anchor.to.col, anchor.to.row]
        if "width" in props:
            info["width"] = chart.width
        if "height" in props:
            info["height"] = chart.height
        if "type" in props:
            info["type"] = chart.tagname
        if "direction" in props:
            info["direction"] = chart.barDir
        for axis in ("x", "y", "z"):
            if f"{axis}title" in props:
                info[f"{axis}title"] = _title_text(lambda: getattr(chart, f"{axis}_axis").title)  # noqa: B023
        charts[series] = info
    return charts


def _trim_empty(rows: list[list[Any]]) -> tuple[list[list[Any]], int, int]:
    """`rows` without leading and trailing empty lists, and how many were cut at each end."""
    head = list(itertools.dropwhile(lambda row: len(row) == 0, rows))
    body = list(itertools.dropwhile(lambda row: len(row) == 0, reversed(head)))[::-1]
    return body, len(rows) - len(head), len(head) - len(body)


def load_pivot_tables(book: Workbook, sheet_name: str, **options: Any) -> dict[str, Any]:
    """Pivot tables of a sheet: `{"<source type>;(row, col):(row, col);<source sheet>": {prop: value}}`
    (the source range narrowed to the fields with selected items), props from `options["pivot_props"]`:
    `name`, `show_total`, `show_empty_row`, `show_empty_col`, `show_headers`, `location`, `selection`
    / `filter` (per field, the set of `(hidden, item index)`, a list with `ordered`), `filter` also
    gives `filter_fields`, `col_fields`, `row_fields` (field indexes), `data_fields`
    (`"<field>;<name if data_fields_name>;<subtotal>;<show data as>"`)."""
    worksheet = _worksheet(book, sheet_name)
    if worksheet is None:
        return {}
    props = set(options.get("pivot_props", []))
    pivots: dict[str, Any] = {}
    for pivot in worksheet._pivots:
        items = [[(item.h, item.x) for item in field.items if item.x is not None] for field in pivot.pivotFields]
        selection, left, right = _trim_empty(items)
        source = pivot.cache.cacheSource
        first, last = source.worksheetSource.ref.split(":")
        top, left_col = coordinate_to_tuple(first)
        bottom, right_col = coordinate_to_tuple(last)
        key = f"{source.type};{(top, left_col + left)}:{(bottom, right_col - right)};{source.worksheetSource.sheet}"
        info: dict[str, Any] = {}
        for prop, attribute in (("name", "name"), ("show_total", "visualTotals"), ("show_empty_row", "showEmptyRow"),
                                ("show_empty_col", "showEmptyCol"), ("show_headers", "showHeaders"),
                                ("location", "location")):
            if prop in props:
                info[prop] = getattr(pivot, attribute)
        if "filter" in props or "selection" in props:
            info["selection"] = selection if "ordered" in props else [set(row) for row in selection]
        if "filter" in props:
            info["filter_fields"] = {field.fld for field in pivot.pageFields}
        if "col_fields" in props:
            info["col_fields"] = [field.x - left for field in pivot.colFields]
        if "row_fields" in props:
            info["row_fields"] = [field.x - left for field in pivot.rowFields]
        if "data_fields" in props:
            named = "data_fields_name" in props
            info["data_fields"] = [f"{field.fld - left:d};{field.name if named else ''};{field.subtotal};"
                                   f"{field.showDataAs}" for field in pivot.dataFields]
        pivots[key] = info
    return pivots


def load_rows_or_cols(book: Workbook, sheet_name: str, **options: Any) -> dict[Any, dict[str, Any]]:
    """Row or column dimensions of a sheet (`options["obj"]`: "row" | "column"): `{index: {prop:
    value}}` for the props in `options["props"]` (row: `hidden`, `collapsed`, `height`; column:
    `width`, `auto_size`, `hidden`, `collapsed`, `min`, `max`)."""
    worksheet = _worksheet(book, sheet_name)
    if worksheet is None:
        return {}
    dimensions = getattr(worksheet, f"{options['obj']}_dimensions")
    props: Iterable[str] = set(options.get("props", []))
    return {index: {prop: getattr(dimension, prop) for prop in props} for index, dimension in dimensions.items()}


def load_filters(book: Workbook, sheet_name: str, **options: Any) -> dict[str, Any]:
    """The sheet's auto filter: its `ref`, its filter columns (sorted by column) and its sort state."""
    worksheet = _worksheet(book, sheet_name)
    if worksheet is None:
        return {}
    auto_filter = worksheet.auto_filter
    columns: list[dict[str, Any]] = []
    for column in auto_filter.filterColumn:
        entry: dict[str, Any] = {"col_id": column.colId, "hidden_button": column.hiddenButton,
                                 "show_button": column.showButton}
        if column.filters is not None:
            entry["filters_blank"] = column.filters.blank
            entry["filters"] = set(column.filters.filter)
        if column.customFilters is not None:
            entry["custom_filters_op"] = column.customFilters._and
            entry["custom_filters"] = {(custom.operator, custom.val) for custom in column.customFilters.customFilter}
        columns.append(entry)
    found: dict[str, Any] = {"ref": auto_filter.ref, "filter_column": sorted(columns, key=lambda d: d["col_id"])}
    sort_state = auto_filter.sortState
    if sort_state is not None:
        found["sort_state"] = {
            "sort": sort_state.columnSort, "case": sort_state.caseSensitive, "method": sort_state.sortMethod,
            "ref": sort_state.ref,
            "condition": [{"descending": c.descending, "key": c.sortBy, "ref": c.ref, "custom_list": c.customList,
                           "dxf_id": c.dxfId, "icon": c.iconSet, "iconid": c.iconId} for c in sort_state.sortCondition],
        }
    return found
