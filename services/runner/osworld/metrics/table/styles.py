"""Cell styles of a sheet, conditional formatting included (OSWorld
`desktop_env/evaluators/metrics/utils.py`: `load_xlsx_styles`, `_process_xlsx_cf_operator`).

The style of a cell is the list of its `props` (see `cells.read_cell_style`). A cell a conditional
format applies to takes the format's differential style instead: `expression`, `containsText`,
`notContainsText`, `beginsWith`, `endsWith`, `containsErrors` and `notContainsErrors` rules are
evaluated with the `formulas` library (the cell's stored value first, then the values of the
formula's absolute ranges), `cellIs` rules compare the value with the formula results. Other rule
types (top10, aboveAverage, duplicateValues, colour scales, ...) are not evaluated: OSWorld then
reuses the previous rule's condition (or none), and so does this module, to score identically.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import formulas
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.cell_range import CellRange

from services.runner.osworld.metrics.table.cells import CellReader, read_cell_style

_ABSOLUTE_RANGE = re.compile(r"\$([A-Z]{1,3})\$(\d+)(?::\$([A-Z]{1,3})\$(\d+))?")
_FORMULA_TYPES = {"expression", "containsText", "notContainsText", "endsWith", "beginsWith", "containsErrors",
                  "notContainsErrors"}
_MAX_EMPTY_CELLS = 50  # OSWorld stops scanning a format's range after this many empty cells


def cf_operator_holds(operator: str, value: Any, refs: list[Any]) -> Any:
    """Whether `value` satisfies the `cellIs` operator against the reference values `refs` (the
    comparison's raw result, which may be a `formulas` array). Mismatched types or too few
    references do not hold.

    Raises: UnboundLocalError for an operator OSWorld does not implement (`containsText`, ...),
    as OSWorld (the caller then treats the cell as not matching).
    """
    try:
        if operator == "lessThanOrEqual":
            return value <= refs[0]
        if operator == "lessThan":
            return value < refs[0]
        if operator == "equal":
            return value == refs[0]
        if operator == "greaterThanOrEqual":
            return value >= refs[0]
        if operator == "notEqual":
            return value != refs[0]
        if operator == "greaterThan":
            return value > refs[0]
        if operator == "between":
            return value >= min(refs) and value <= max(refs)
        if operator == "notBetween":
            return value < min(refs) or value > max(refs)
    except (TypeError, IndexError):
        return False
    raise UnboundLocalError(f"conditional format operator {operator!r} is not implemented")


def _range_arguments(formula: str, reader: CellReader, book_path: Any, sheet_name: str) -> list[Any]:
    """Values of the absolute ranges (`$A$1:$B$9`) of a formula, one list per range.

    Raises: ValueError for a single absolute cell (`$A$1`), which OSWorld reads as the range "A1:".
    """
    arguments: list[Any] = []
    for col1, row1, col2, row2 in _ABSOLUTE_RANGE.findall(formula):
        cells = CellRange(f"{col1}{row1}:{col2}{row2}").cells
        arguments.append([reader.value(book_path, sheet_name, f"{get_column_letter(c[1])}{c[0]}") for c in cells])
    return arguments


def load_xlsx_styles(book: Any, sheet_name: str, book_path: Any, **options: Any) -> dict[str, list[Any]]:
    """`{coordinate: [style values in options["props"] order]}` for every cell of the sheet's used
    range (OpenPyXL `iter_cols`), conditional formatting applied; `{}` for a missing sheet.

    Raises: what OSWorld does not catch (an unknown style, a broken conditional format), for
    `compare_table` to report as an EvalError.
    """
    try:
        worksheet = book[sheet_name]
    except KeyError:
        return {}
    props: list[str] = options.get("props", [])
    styles: dict[str, list[Any]] = {}
    for column in worksheet.iter_cols():
        for cell in column:
            styles[cell.coordinate] = [read_cell_style(prop, cell) for prop in props]

    reader = CellReader()
    parser = formulas.Parser()
    # Like OSWorld, these names live across the rules: a rule of an unevaluated type reuses the
    # previous rule's `is_active`, whose closure sees the latest `condition` / `arguments` / ...
    is_active: Callable[[Any], Any] | None = None
    condition: Any = None
    arguments: list[Any] = []
    operator = ""
    references: list[Any] = []
    for conditional in worksheet.conditional_formatting:
        for rule in conditional.rules:
            compiled: list[Any] = []
            argument_lists: list[list[Any]] = []
            broken = False
            for formula in rule.formula:
                try:
                    function = parser.ast("=" + formula)[1].compile()
                except Exception:  # OSWorld skips a rule whose formula does not parse
                    broken = True
                    break
                arguments = _range_arguments(formula, reader, book_path, sheet_name)
                compiled.append(function)
                argument_lists.append(arguments)
            if broken:
                continue
            if rule.type in _FORMULA_TYPES:
                condition, arguments = compiled[0], argument_lists[0]
                is_active = lambda v: condition(v, *arguments)  # noqa: E731, B023 (late binding, as OSWorld)
            elif rule.type == "cellIs":
                operator = rule.operator
                try:
                    references = [function() for function in compiled]
                except Exception:  # OSWorld skips a rule whose references do not compute
                    continue
                is_active = lambda v: cf_operator_holds(operator, v, references)  # noqa: E731, B023

            active = []
            empty = 0
            for cell_range in conditional.cells:
                for row, col in cell_range.cells:
                    cell = worksheet.cell(row=row, column=col)
                    value = reader.value(book_path, sheet_name, f"{get_column_letter(col)}{row}")
                    if value is None:
                        empty += 1
                        if empty > _MAX_EMPTY_CELLS:
                            break
                        continue
                    try:
                        holds = is_active(value)  # type: ignore[misc]  # None: no condition yet -> no match
                    except Exception:
                        holds = False
                    if holds:
                        active.append(cell)
            for cell in active:
                styles[cell.coordinate] = [read_cell_style(prop, cell, rule.dxf) for prop in props]
    return styles
