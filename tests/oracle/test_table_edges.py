"""Differential tests of `metrics/table` beyond the tasks' fixtures: the cell reader on every kind
of stored cell, every `compare_table` rule type and property with matching and differing sheets,
and the inputs on which OSWorld scores 0 or raises (ours then raises EvalError)."""

from __future__ import annotations

import datetime
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.chart import BarChart, Reference
from openpyxl.formatting.rule import Rule
from openpyxl.styles import Font, PatternFill
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.worksheet.filters import CustomFilter, CustomFilters, FilterColumn, Filters, SortCondition, SortState

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.table import compare_table
from services.runner.osworld.metrics.table.cells import read_cell_value
from tests.oracle.client import Oracle, same_value
from tests.oracle.workbooks import Conditional, libreoffice_cache, libreoffice_convert, sheet, write_book


def agree(oracle: Oracle, result: Any, expected: Any, **options: Any) -> Any:
    """Score with ours and OSWorld's; both must return the same value or both raise (ours EvalError)."""
    theirs = oracle.call("metrics.table", "compare_table", result, expected, **options)
    if theirs.ok:
        ours = compare_table(result, expected, **options)
        assert same_value(ours, theirs.value), f"ours {ours} != OSWorld {theirs.value}"
        return ours
    with pytest.raises(EvalError):
        compare_table(result, expected, **options)
    return theirs.type


# --- the cell reader --------------------------------------------------------------------------

_CELLS = sheet("Data", [["text", 1, 2.5, True, datetime.datetime(2024, 2, 29, 13, 30)],
                        ["=A1&\"!\"", "=B1/0", "=B1+C1", None, " padded "],
                        ["Ünïcödé", -0.0001, 1e20, False, "=TRUE()"]],
               formats=[("E1", "YYYY-MM-DD HH:MM"), ("C1", "0.00")])


@pytest.fixture(scope="module")
def cell_books(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cells")
    written = write_book((_CELLS, sheet("Second", [["x"]])), root / "openpyxl" / "cells.xlsx")
    libreoffice_convert([written], "xlsx", root / "libreoffice", libreoffice_cache(request, tmp_path_factory))
    (root / "broken.xlsx").write_text("not a zip")
    return {"openpyxl": written, "libreoffice": root / "libreoffice" / "cells.xlsx", "broken": root / "broken.xlsx"}


@pytest.mark.parametrize("variant", ["openpyxl", "libreoffice"])
def test_read_cell_value_matches_osworld_on_every_kind_of_cell(oracle: Oracle, cell_books: dict[str, Path],
                                                               variant: str) -> None:
    path = str(cell_books[variant])
    for coordinate in [f"{c}{r}" for c in "ABCDEF" for r in (1, 2, 3, 4)]:
        theirs = oracle.call("metrics.utils", "read_cell_value", path, "Data", coordinate)
        if theirs.ok:
            assert same_value(read_cell_value(path, "Data", coordinate), theirs.value), coordinate
        else:  # e.g. an OpenPyXL formula cell has an empty <v>: OSWorld's float(None) raises
            with pytest.raises(Exception) as raised:
                read_cell_value(path, "Data", coordinate)
            assert type(raised.value).__name__ == theirs.type, coordinate


@pytest.mark.parametrize(("which", "sheet_name"), [("libreoffice", "Missing"), ("broken", "Data"),
                                                   ("absent", "Data"), ("openpyxl", "Second")])
def test_read_cell_value_of_missing_things_matches_osworld(oracle: Oracle, cell_books: dict[str, Path], which: str,
                                                           sheet_name: str) -> None:
    path = str(cell_books.get(which, cell_books["broken"].with_name("absent.xlsx")))
    theirs = oracle.call("metrics.utils", "read_cell_value", path, sheet_name, "A1")
    assert theirs.ok and same_value(read_cell_value(path, sheet_name, "A1"), theirs.value)


# --- inputs OSWorld scores 0 or rejects ----------------------------------------------------------

DATA = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[str, str]:
    book = (sheet("Sheet1", [["a", "b"], [1, 2]]),)
    return str(write_book(book, tmp_path / "r.xlsx")), str(write_book(book, tmp_path / "e.xlsx"))


@pytest.mark.parametrize(
    ("result", "expected", "options", "want"),
    [
        (None, "e", {"rules": DATA}, 0.0),
        ("absent", "e", {"rules": DATA}, 0.0),
        ("text", "e", {"rules": DATA}, 0.0),
        ("r", "absent", {"rules": DATA}, "FileNotFoundError"),
        ("r", "e", {}, "KeyError"),
        ("r", "e", {"rules": [{"type": "sheet_colour"}]}, "NotImplementedError"),
        ("r", "e", {"rules": [{"type": "sheet_data", "sheet_idx0": "XX0", "sheet_idx1": "EI0"}]}, "ValueError"),
        ("r", None, {"rules": DATA}, "NotImplementedError"),
        ("r", "e", {"rules": [{"type": "sheet_data", "sheet_idx0": "RNNope", "sheet_idx1": "EI0"}]}, 0.0),
        ("r", "e", {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "ENNope"}]}, "AttributeError"),
        ("r", "e", {"rules": [{"type": "sheet_data", "sheet_idx0": 5, "sheet_idx1": "EI9"}]}, 0.0),
        ("r", "e", {"rules": [{"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, 0.0),
        ("r", "e", {"rules": [{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "ENNope"}]}, "AttributeError"),
        ("r", "e", {"rules": [{"type": "zoom", "sheet_idx": 0, "method": "re", "ref": "1"}]}, "TypeError"),
        ("r", "e", {"rules": [{"type": "zoom", "sheet_idx": "RNNope", "method": "lt", "ref": 1}]}, 0.0),
        ("r", "e", {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                               "props": {"value": {"method": "nope", "ref": 1}}}]}, 0.0),
        ("r", "e", {"rules": [{"type": "check_cell", "sheet_idx": "RNNope", "coordinate": "A1", "props": {}}]}, 0.0),
        ("r", "e", {"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1",
                               "props": {"shadow": {"method": "eq", "ref": None}}}]}, 1.0),
        ("r", "e", {"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["title"]}]}, 1.0),
        ("r", "e", {"rules": [{"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["gap"]}]}, 1.0),
        ("r", "e", {"rules": {}}, 1.0),
    ],
)
def test_bad_inputs_score_or_raise_as_osworld(oracle: Oracle, pair: tuple[str, str], tmp_path: Path, result: Any,
                                              expected: Any, options: dict[str, Any], want: Any) -> None:
    names = {"r": pair[0], "e": pair[1], "absent": str(tmp_path / "absent.xlsx"), "text": str(tmp_path / "t.xlsx")}
    (tmp_path / "t.xlsx").write_text("plain text")
    assert agree(oracle, names.get(result, result), names.get(expected, expected), **options) == want


def test_sheet_print_with_ignore_case_and_no_export_raises_as_osworld(oracle: Oracle, pair: tuple[str, str]) -> None:
    Path(pair[0]).with_name("r-Sheet1.csv").write_text("a,b\n1,2\n")
    rule = {"type": "sheet_print", "sheet_idx0": 0, "sheet_idx1": "EI0", "ignore_case": True}
    assert agree(oracle, pair[0], pair[1], rules=[rule]) == "TypeError"
    Path(pair[1]).with_name("e-Sheet1.csv").write_text("A,B\n1,2\n\n\n")
    assert agree(oracle, pair[0], pair[1], rules=[rule]) == 1.0
    assert agree(oracle, pair[0], pair[1], rules=[{**rule, "ignore_case": False}]) == 0.0


# --- every rule type and property ----------------------------------------------------------------


def _write(tmp_path: Path, name: str, build: Any) -> str:
    workbook = openpyxl.Workbook()
    build(workbook.active)
    path = tmp_path / name
    workbook.save(path)
    return str(path)


def _fill_values(ws: Any) -> None:
    for row in [["name", "qty", "note"], ["bolt", 4, "x"], ["nut", 9, None], ["pin", 2, "y"]]:
        ws.append(row)


def _filtered(descending: bool) -> Any:
    def build(ws: Any) -> None:
        _fill_values(ws)
        ws.auto_filter.ref = "A1:C4"
        ws.auto_filter.filterColumn.append(FilterColumn(colId=0, filters=Filters(filter=["bolt", "nut"])))
        ws.auto_filter.filterColumn.append(FilterColumn(colId=1, customFilters=CustomFilters(
            customFilter=[CustomFilter(operator="greaterThan", val="3")])))
        ws.auto_filter.sortState = SortState(ref="A2:C4", sortCondition=[SortCondition(ref="B2:B4",
                                                                                        descending=descending)])
    return build


def _charted(title: str, width: float, legend: str | None) -> Any:
    def build(ws: Any) -> None:
        _fill_values(ws)
        chart = BarChart()
        chart.type, chart.title, chart.width = "bar", title, width
        chart.x_axis.title, chart.y_axis.title = "Item", "Count"
        chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
        if legend is None:
            chart.legend = None
        else:
            chart.legend.position = legend
        ws.add_chart(chart, "E2")
    return build


def _styled(colour: str, link: str | None, conditional: Conditional | None = None) -> Any:
    def build(ws: Any) -> None:
        _fill_values(ws)
        ws["B2"].number_format = "0.00"
        ws["A2"].font = Font(name="Liberation Sans", bold=True, italic=True, underline="single", size=12, color=colour)
        ws["A3"].fill = PatternFill(fill_type="solid", start_color=colour)
        ws["C2"].hyperlink = link
        ws.merge_cells("A5:B5")
        if conditional is not None:
            fill = PatternFill(bgColor=conditional.fill) if conditional.fill else None
            rule = Rule(type=conditional.kind, operator=conditional.operator, formula=list(conditional.formula),
                        dxf=DifferentialStyle(font=Font(color=conditional.font), fill=fill))
            ws.conditional_formatting.add(conditional.cells, rule)
    return build


def _dimensions(width: float, hidden: bool, height: float = 30) -> Any:
    def build(ws: Any) -> None:
        _fill_values(ws)
        ws.column_dimensions["B"].width = width
        ws.column_dimensions["C"].hidden = hidden
        ws.row_dimensions[3].height = height
    return build


STYLE_PROPS = ["number_format", "font_name", "font_family", "font_color", "font_bold", "font_italic", "font_underline",
               "font_size", "fill_type", "bgcolor", "fgcolor", "hyperlink", "merge"]
CHART_PROPS = ["title", "legend", "width", "height", "type", "direction", "xtitle", "ytitle", "ztitle"]


def _cf(kind: str, cells: str, *formula: str, operator: str | None = None, fill: str | None = None) -> Any:
    return _styled("FF000000", None, Conditional(cells, kind, formula, operator=operator, font="FFFF0000", fill=fill))


@pytest.mark.parametrize(
    ("rule", "same", "different", "outcomes"),
    [
        ({"type": "filter"}, _filtered(False), _filtered(True), (1.0, 0.0)),
        ({"type": "chart", "chart_props": CHART_PROPS}, _charted("T", 15, "r"), _charted("T", 15, None), (1.0, 0.0)),
        ({"type": "style", "props": STYLE_PROPS}, _styled("FF112233", "https://a.org"),
         _styled("FF112234", "https://a.org"), (1.0, 0.0)),
        # a hyperlink compares by its XML attributes, its target (a relationship) is not one of them
        ({"type": "style", "props": ["hyperlink"]}, _styled("FF112233", "https://a.org"),
         _styled("FF112233", "https://b.org"), (1.0, 1.0)),
        ({"type": "style", "props": ["font_color", "bgcolor"]},
         _cf("cellIs", "B2:B4", "4", operator="greaterThan", fill="FF00FF00"),
         _cf("cellIs", "B2:B4", "4", "9", operator="between", fill="FF00FF00"), (1.0, 0.0)),
        # an unevaluated rule type (top10) reuses no condition: nothing is highlighted
        ({"type": "style", "props": ["font_color"]}, _cf("containsText", "C2:C4", 'NOT(ISERROR(SEARCH("x",C2)))'),
         _cf("top10", "C2:C4"), (1.0, 0.0)),
        # OSWorld reads "$B$2" as the range "B2:" (ValueError); a range argument makes an array condition
        ({"type": "style", "props": ["font_color"]}, _cf("expression", "B2:B4", "B2>5"),
         _cf("expression", "B2:B4", "B2>$B$2"), (1.0, "ValueError")),
        ({"type": "style", "props": ["font_color"]}, _cf("expression", "B2:B4", "AND(B2>1,B2<$B$3:$B$3)"),
         _cf("expression", "B2:B4", "B2>$B$2:$B$3"), (1.0, "ValueError")),
        ({"type": "col_props", "props": ["width", "hidden", "min", "max", "auto_size", "collapsed"]},
         _dimensions(20, True), _dimensions(21, True), (1.0, 0.0)),
        ({"type": "row_props", "props": ["height", "hidden", "collapsed"]}, _dimensions(20, True),
         _dimensions(20, True, height=31), (1.0, 0.0)),
    ],
)
def test_every_rule_type_matches_osworld(oracle: Oracle, tmp_path: Path, rule: dict[str, Any], same: Any,
                                         different: Any, outcomes: tuple[Any, Any]) -> None:
    expected = _write(tmp_path, "e.xlsx", same)
    rules = [{**rule, "sheet_idx0": 0, "sheet_idx1": "EI0"}]
    assert agree(oracle, _write(tmp_path, "r.xlsx", same), expected, rules=rules) == outcomes[0]
    assert agree(oracle, _write(tmp_path, "d.xlsx", different), expected, rules=rules) == outcomes[1]


def test_chart_anchor_of_a_one_cell_anchor_raises_as_osworld(oracle: Oracle, tmp_path: Path) -> None:
    path = _write(tmp_path, "c.xlsx", _charted("T", 15, "r"))
    rules = [{"type": "chart", "chart_props": ["anchor"], "sheet_idx0": 0, "sheet_idx1": "EI0"}]
    assert agree(oracle, path, path, rules=rules) == "AttributeError"


@pytest.mark.filterwarnings("ignore:Sparkline Group extension")
def test_sparklines_match_osworld(oracle: Oracle, tmp_path: Path) -> None:
    group = ('<extLst><ext uri="{{05C60535-1F16-4fd2-B633-F4F36F0B64E0}}" xmlns:x14="http://schemas.microsoft.com/'
             'office/spreadsheetml/2009/9/main"><x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/'
             'excel/2006/main"><x14:sparklineGroup><x14:sparklines><x14:sparkline><xm:f>Sheet!{f}</xm:f>'
             '<xm:sqref>{at}</xm:sqref></x14:sparkline></x14:sparklines></x14:sparklineGroup></x14:sparklineGroups>'
             '</ext></extLst></worksheet>')
    paths = []
    for name, data in (("a", "B2:B4"), ("b", "B2:B4"), ("c", "B2:B3")):
        plain = Path(_write(tmp_path, f"plain-{name}.xlsx", _fill_values))
        with zipfile.ZipFile(plain) as source, zipfile.ZipFile(tmp_path / f"{name}.xlsx", "w") as target:
            for item in source.infolist():
                content = source.read(item.filename)
                if item.filename == "xl/worksheets/sheet1.xml":
                    content = content.replace(b"</worksheet>", group.format(f=data, at="E2").encode())
                target.writestr(item, content)
        paths.append(str(tmp_path / f"{name}.xlsx"))
    rules = [{"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}]
    assert agree(oracle, paths[0], paths[1], rules=rules) == 1.0
    assert agree(oracle, paths[2], paths[1], rules=rules) == 0.0
    assert agree(oracle, paths[0], paths[1], rules=[{**rules[0], "sheet_idx1": "ENNope"}]) == "KeyError"


@pytest.mark.parametrize("kind", ["includes", "included_by", "fuzzy_match", "exact_match", "regex"])
def test_sheet_fuzzy_kinds_match_osworld(oracle: Oracle, tmp_path: Path, kind: str) -> None:
    def build(values: list[str]) -> Any:
        return lambda ws: [ws.append([v]) for v in values]

    expected = _write(tmp_path, "e.xlsx", build(["Main Street 1", "(852) 2345-6789", "Kowloon"]))
    result = _write(tmp_path, "r.xlsx", build(["main st 1", "+852 2345 6789", "Kowloon Bay"]))
    check = {"range": ["A1:A3", "B1:B2"], "type": kind, "normalization": [["St", "Street"]], "trim_leadings": "+ ",
             "trim_trailings": " ", "ignore_chars": " ()-", "ignore_case": True, "threshold": 80}
    agree(oracle, result, expected, rules=[{"type": "sheet_fuzzy", "sheet_idx0": "RNSheet", "sheet_idx1": "ENSheet",
                                            "rules": [check]}])
