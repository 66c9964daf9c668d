"""`compare_table`: a result workbook checked against rules, mostly by comparison with an expected
workbook (OSWorld `desktop_env/evaluators/metrics/table.py`, `compare_table`).

Rules (`options["rules"]`, applied in order; the first failing rule ends with 0.0):
- `sheet_name`: both books have the same sheet names in the same order;
- `sheet_data`: two sheets' cell values (pandas, first row as header) are equal after rounding to
  `precision` decimals (default 4), dtypes included;
- `sheet_print`: two sheets' CSV exports (the displayed text) are equal, optionally `ignore_case`;
- `sheet_fuzzy`: per cell of the `rules[].range`s, the two sheets' values compared as text by
  `includes` / `included_by` / `fuzzy_match` (rapidfuzz ratio >= `threshold`, default 85) /
  `exact_match`, after `normalization` replacements, `trim_leadings` / `trim_trailings`,
  `ignore_chars` and `ignore_case`;
- `sparkline`, `chart` (`chart_props`), `style` (`props`, conditional formats applied),
  `row_props` / `col_props` (`props`), `filter`, `pivot_table` (`pivot_props`): the two sheets'
  summaries (see `features`, `styles`) are equal;
- `freeze`: the two sheets have the same frozen panes;
- `zoom`: the sheet's zoom (100 when unset) satisfies the rule's `method` / `ref`;
- `data_validation`: the sheet has at least as many validations as `dv_props` and each validation
  matches one of them (`{attribute: rule}`, see `rules.match_value_to_rule`);
- `check_cell`: the cell `coordinate` satisfies `props` (`value` or a style name -> rule); any
  error scores 0.

Sheets are addressed as in `workbook.resolve_sheet`. A missing or unreadable result file scores 0.0;
an unreadable expected file, an unknown rule type, or an error OSWorld does not catch raises EvalError.
LibreOffice is not needed here: the CSV exports `sheet_print` reads are made in the env by the
task's `postconfig`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import openpyxl
import pandas as pd
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.cell_range import MultiCellRange
from rapidfuzz import fuzz

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.table import features, styles
from services.runner.osworld.metrics.table.cells import CellReader, read_cell_style
from services.runner.osworld.metrics.table.workbook import Book, load_sheet, resolve_sheet
from services.runner.osworld.rules import match_value_to_rule


class _ScoreZero(Exception):
    """A rule found its first sheet missing: OSWorld's `compare_table` returns 0.0 at once."""


@dataclass
class _Books:
    """The result and expected workbooks in their three views (pandas, OpenPyXL, path)."""

    result_path: str
    expected_path: str | None
    result_pd: pd.ExcelFile
    result_xl: Any
    expected_pd: pd.ExcelFile | None
    expected_xl: Any
    result_names: list[str]
    expected_names: list[str] | None
    cells: CellReader

    def sheet(self, index: Any, view: str) -> tuple[Book, str]:
        """`(book, sheet name)` of sheet `index` in `view` ("pd", "xl" or "path")."""
        result, expected = {"pd": (self.result_pd, self.expected_pd), "xl": (self.result_xl, self.expected_xl),
                            "path": (self.result_path, self.expected_path)}[view]
        return resolve_sheet(index, result, expected, self.result_names, self.expected_names)

    def close(self) -> None:
        for book in (self.result_pd, self.expected_pd):
            if book is not None:
                book.close()


def _required_sheet(books: _Books, index: Any, view: str) -> Any:
    sheet = load_sheet(*books.sheet(index, view))
    if sheet is None:
        raise _ScoreZero
    return sheet


def _sheet_data(books: _Books, rule: dict[str, Any]) -> bool:
    precision = rule.get("precision", 4)
    first = _required_sheet(books, rule["sheet_idx0"], "pd").round(precision)
    second = load_sheet(*books.sheet(rule["sheet_idx1"], "pd")).round(precision)
    return bool(first.equals(second))


def _sheet_print(books: _Books, rule: dict[str, Any]) -> bool:
    first = _required_sheet(books, rule["sheet_idx0"], "path")
    second = load_sheet(*books.sheet(rule["sheet_idx1"], "path"))
    if rule.get("ignore_case", False):
        first, second = [line.lower() for line in first], [line.lower() for line in second]
    return bool(first == second)


def _fuzzy_values(first: str, second: str, check: dict[str, Any]) -> tuple[str, str]:
    for replacement in check.get("normalization", []):
        first, second = (first.replace(replacement[0], replacement[1]),
                         second.replace(replacement[0], replacement[1]))
    if "trim_leadings" in check:
        first, second = first.lstrip(check["trim_leadings"]), second.lstrip(check["trim_leadings"])
    if "trim_trailings" in check:
        first, second = first.rstrip(check["trim_trailings"]), second.rstrip(check["trim_trailings"])
    if "ignore_chars" in check:
        ignored = set(check["ignore_chars"])
        first = "".join(ch for ch in first if ch not in ignored)
        second = "".join(ch for ch in second if ch not in ignored)
    if check.get("ignore_case", False):
        first, second = first.lower(), second.lower()
    return first, second


def _fuzzy_cell(first: str, second: str, check: dict[str, Any]) -> bool:
    kind = check["type"]
    if kind == "includes":
        return second in first
    if kind == "included_by":
        return first in second
    if kind == "fuzzy_match":
        return bool(fuzz.ratio(first, second) >= check.get("threshold", 85.0))
    if kind == "exact_match":
        return first == second
    # OSWorld silently reuses the previous cell's verdict here (or crashes on the first cell).
    raise EvalError(f"compare_table sheet_fuzzy: unknown type {kind!r} (want includes, included_by, "
                    "fuzzy_match or exact_match)")


def _sheet_fuzzy(books: _Books, rule: dict[str, Any]) -> bool:
    first_sheet, second_sheet = books.sheet(rule["sheet_idx0"], "path"), books.sheet(rule["sheet_idx1"], "path")
    passed = True
    for check in rule["rules"]:
        for cell_range in MultiCellRange(check["range"]):
            for row, col in cell_range.cells:
                coordinate = f"{get_column_letter(col)}{row:d}"
                first, second = _fuzzy_values(str(books.cells.value(*first_sheet, coordinate)),
                                              str(books.cells.value(*second_sheet, coordinate)), check)
                passed = _fuzzy_cell(first, second, check) and passed
    return passed


def _pair(books: _Books, rule: dict[str, Any], loader: Any, **extra: Any) -> bool:
    """Whether `loader` summarises the sheets `sheet_idx0` and `sheet_idx1` (OpenPyXL view) alike."""
    first = loader(*books.sheet(rule["sheet_idx0"], "xl"), **extra, **rule)
    second = loader(*books.sheet(rule["sheet_idx1"], "xl"), **extra, **rule)
    return bool(first == second)


def _style(books: _Books, rule: dict[str, Any]) -> bool:
    summaries = []
    for key in ("sheet_idx0", "sheet_idx1"):
        book, name = books.sheet(rule[key], "xl")
        path = books.sheet(rule[key], "path")[0]
        summaries.append(styles.load_xlsx_styles(book, name, path, **rule))
    return bool(summaries[0] == summaries[1])


def _freeze(books: _Books, rule: dict[str, Any]) -> bool:
    first = _required_sheet(books, rule["sheet_idx0"], "xl")
    second = load_sheet(*books.sheet(rule["sheet_idx1"], "xl"))
    return bool(first.freeze_panes == second.freeze_panes)


def _zoom(books: _Books, rule: dict[str, Any]) -> bool:
    sheet = _required_sheet(books, rule["sheet_idx"], "xl")
    return match_value_to_rule(sheet.sheet_view.zoomScale or 100.0, rule)


def _data_validation(books: _Books, rule: dict[str, Any]) -> bool:
    sheet = _required_sheet(books, rule["sheet_idx"], "xl")
    validations = sheet.data_validations.dataValidation
    wanted = rule["dv_props"]
    passed = len(validations) >= len(wanted)
    for validation in validations:
        matched = False
        for props in wanted:
            matched = matched or all(match_value_to_rule(getattr(validation, name), check)
                                     for name, check in props.items())
            if matched:
                break
        passed = passed and matched
        if not passed:
            break
    return passed


def _check_cell(books: _Books, rule: dict[str, Any]) -> bool:
    """OSWorld wraps the whole check in `try`: any error scores 0 (`_ScoreZero`)."""
    try:
        sheet = _required_sheet(books, rule["sheet_idx"], "xl")
        cell = sheet[rule["coordinate"]]
        passed = True
        for prop, check in rule["props"].items():
            try:
                if prop == "value":
                    value = books.cells.value(*books.sheet(rule["sheet_idx"], "path"), rule["coordinate"])
                else:
                    value = read_cell_style(prop, cell)
            except Exception:  # OSWorld: an unreadable value or style is None
                value = None
            passed = passed and match_value_to_rule(value, check)
        return passed
    except Exception:  # OSWorld: any error in check_cell (a bad rule or index too) scores 0
        raise _ScoreZero from None


def _apply_rule(books: _Books, rule: dict[str, Any]) -> bool:
    kind = rule["type"]
    if kind == "sheet_name":
        return books.result_names == books.expected_names
    if kind == "sparkline":
        return bool(features.load_sparklines(*books.sheet(rule["sheet_idx0"], "path"))
                    == features.load_sparklines(*books.sheet(rule["sheet_idx1"], "path")))
    if kind == "chart":
        return _pair(books, rule, features.load_charts)
    if kind == "row_props":
        return _pair(books, rule, features.load_rows_or_cols, obj="row")
    if kind == "col_props":
        return _pair(books, rule, features.load_rows_or_cols, obj="column")
    if kind == "filter":
        return _pair(books, rule, features.load_filters)
    if kind == "pivot_table":
        return _pair(books, rule, features.load_pivot_tables)
    checks = {"sheet_data": _sheet_data, "sheet_print": _sheet_print, "sheet_fuzzy": _sheet_fuzzy, "style": _style,
              "freeze": _freeze, "zoom": _zoom, "data_validation": _data_validation, "check_cell": _check_cell}
    if kind not in checks:
        raise EvalError(f"compare_table: unimplemented sheet check {kind!r}")
    return checks[kind](books, rule)


def _open_books(result: str, expected: str | None) -> _Books | None:
    """Both workbooks in their views; None when the result cannot be read.
    Raises: EvalError when the expected workbook cannot be read."""
    try:
        result_xl = openpyxl.load_workbook(filename=result)
        result_pd = pd.ExcelFile(result)
    except Exception:  # OSWorld: an unreadable result scores 0
        return None
    expected_xl = expected_pd = None
    if expected is not None:
        try:
            expected_xl = openpyxl.load_workbook(filename=expected)
            expected_pd = pd.ExcelFile(expected)
        except Exception as exc:
            result_pd.close()
            raise EvalError(f"compare_table: cannot read the expected workbook {expected!r}: {exc}") from exc
    return _Books(result, expected, result_pd, result_xl, expected_pd, expected_xl, list(result_pd.sheet_names),
                  None if expected_pd is None else list(expected_pd.sheet_names), CellReader())


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """1.0 iff the result workbook passes every rule of `options["rules"]` (see the module docstring).

    Raises: EvalError for a missing `rules`, an unknown rule, an unreadable expected workbook, or an
    error OSWorld's function does not catch (e.g. a rule naming the expected book when there is none).
    """
    if result is None:
        return 0.0
    try:
        if not os.path.exists(result):
            return 0.0
    except TypeError as exc:
        raise EvalError(f"compare_table: result must be a file path, got {result!r}") from exc
    books = _open_books(result, expected)
    if books is None:
        return 0.0
    try:
        try:
            rules = list(options["rules"])
        except (KeyError, TypeError) as exc:
            raise EvalError(f"compare_table: options must have a list of 'rules', got {options!r}") from exc
        for index, rule in enumerate(rules):
            try:
                if not _apply_rule(books, rule):
                    return 0.0
            except _ScoreZero:
                return 0.0
            except EvalError:
                raise
            except Exception as exc:  # OSWorld raises here too: the rule does not fit the files
                raise EvalError(f"compare_table: rule {index} {rule!r} failed: {type(exc).__name__}: {exc}") from exc
        return 1.0
    finally:
        books.close()
