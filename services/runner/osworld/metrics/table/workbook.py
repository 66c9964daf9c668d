"""Sheet addressing and loading for `compare_table` (OSWorld `desktop_env/evaluators/metrics/table.py`:
`_parse_sheet_idx`, `_load_sheet`, `_safe_read_file`).

A rule names a sheet by `sheet_idx`: an int (index into the result's sheets), `"RI<n>"` / `"RN<name>"`
(result book by index / name) or `"EI<n>"` / `"EN<name>"` (expected book). The same index resolves
against one of three views of each book, chosen by the rule type: the pandas `ExcelFile` (cell
values), the OpenPyXL `Workbook` (formats, charts, ...), or the file path, where a sheet is the CSV
export `<book without extension>-<sheet name>.csv` next to it (what LibreOffice's
`--convert-to csv` writes and the tasks fetch alongside the workbook).
"""

from __future__ import annotations

import itertools
import os
from typing import Any, TypeAlias

import pandas as pd
from openpyxl import Workbook

from services.runner.osworld.errors import EvalError

Book: TypeAlias = pd.ExcelFile | Workbook | str | None
"""One view of a workbook: pandas, OpenPyXL, or its path (for CSV exports and raw XML reads)."""


def resolve_sheet(
    sheet_idx: Any, result: Book, expected: Book, result_names: list[str], expected_names: list[str] | None
) -> tuple[Book, str]:
    """`(book, sheet name)` named by `sheet_idx`; the name is `""` when an index is out of range
    (loading it then fails as a missing sheet, as in OSWorld).

    Raises: EvalError for an index that is neither an int nor a string with a known prefix.
    """
    if isinstance(sheet_idx, int):
        try:
            return result, result_names[sheet_idx] if result_names and sheet_idx < len(result_names) else ""
        except IndexError:
            return result, ""
    if not isinstance(sheet_idx, str):
        raise EvalError(f"compare_table: sheet index must be an int or a string, got {sheet_idx!r}")
    prefix, rest = sheet_idx[:2], sheet_idx[2:]
    if prefix in ("RI", "EI"):
        names = result_names if prefix == "RI" else expected_names
        try:
            name = names[int(rest)]  # type: ignore[index]
        except Exception:  # OSWorld: any failure (bad number, out of range, no expected book) -> ""
            name = ""
        return (result if prefix == "RI" else expected), name
    if prefix == "RN":
        return result, rest
    if prefix == "EN":
        return expected, rest
    raise EvalError(f"compare_table: unrecognized sheet index {sheet_idx!r} "
                    "(want an int, RI<n>, RN<name>, EI<n> or EN<name>)")


def read_lines(path: str) -> list[str]:
    """Lines of a text file, decoded as UTF-8 or, failing that, Latin-1 (OSWorld `_safe_read_file`
    tries UTF-8 and then encodings of which Latin-1 always succeeds).

    Raises: OSError when the file cannot be read; TypeError when `path` is no path.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.splitlines()


def csv_export_lines(book_path: str, sheet_name: str) -> list[str] | None:
    """Lines of the CSV export of `sheet_name` of `book_path`, stripped, last line first, trailing
    blank lines dropped (OSWorld's order, so two exports compare line by line); None when missing."""
    csv_path = f"{os.path.splitext(book_path)[0]}-{sheet_name}.csv"
    try:
        lines = read_lines(csv_path)
    except (OSError, TypeError, ValueError):
        return None
    return list(itertools.dropwhile(lambda line: len(line) == 0, (line.strip() for line in reversed(lines))))


def load_sheet(book: Book, name: str) -> Any:
    """The sheet `name` of `book` in the book's view: a DataFrame (pandas, first row as header), a
    Worksheet (OpenPyXL), or CSV lines (path); None when it cannot be loaded.

    Raises: EvalError when `book` is None (a rule names the expected book of an evaluator without one).
    """
    if isinstance(book, str):
        return csv_export_lines(book, name)
    if isinstance(book, pd.ExcelFile):
        try:
            return pd.read_excel(book, name)
        except Exception:  # OSWorld: any failure to read the sheet -> None
            return None
    if isinstance(book, Workbook):
        try:
            return book[name]
        except Exception:  # OSWorld: any failure -> None
            return None
    raise EvalError(f"compare_table: a rule names a sheet of a book that is not there ({book!r})")
