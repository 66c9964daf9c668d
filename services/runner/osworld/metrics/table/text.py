"""CSV and city-list checks of OSWorld `desktop_env/evaluators/metrics/table.py`: `compare_csv`,
`compare_conference_city_in_order`."""

from __future__ import annotations

from typing import Any

import openpyxl

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import given
from services.runner.osworld.metrics.table.workbook import read_lines


def _normalised(lines: list[str], options: dict[str, Any]) -> list[str]:
    if not options.get("strict", True):
        lines = [line.strip() for line in lines]
    if options.get("ignore_case", False):
        lines = [line.lower() for line in lines]
    return lines


def compare_csv(result: str | None, expected: str | list[str] | None = None, **options: Any) -> float:
    """1.0 iff the result CSV's lines equal those of the expected file, or of any of a list of
    expected files (an unreadable expected file is skipped). Options: `strict` (default True; False
    strips each line), `ignore_case` (default False). A missing or unreadable result scores 0.0.

    Raises: EvalError when `result` or an expected entry is not a path (OSWorld crashes on it).
    """
    if result is None:
        return 0.0
    try:
        result_lines = read_lines(result)
    except OSError:
        return 0.0
    except (TypeError, ValueError) as exc:
        raise EvalError(f"compare_csv: result must be a file path, got {result!r}") from exc
    candidates = [expected] if isinstance(expected, str) else expected
    try:
        for candidate in given(candidates, "expected"):
            try:
                expected_lines = read_lines(candidate)
            except OSError:
                continue
            if _normalised(result_lines, options) == _normalised(expected_lines, options):
                return 1.0
    except (TypeError, ValueError) as exc:
        raise EvalError(f"compare_csv: expected must be a file path or a list of them, got {expected!r}") from exc
    return 0.0


def compare_conference_city_in_order(actual_city_list_path: str | None,
                                     expected_city: dict[str, Any] | None = None) -> float:
    """1.0 iff each of the cells C2:C22 of the workbook's active sheet contains the expected city at
    the same position of `expected_city["expected"]` (a string, or a list of accepted strings). Any
    mismatch, empty cell or short list scores 0.0.

    Raises: EvalError when the workbook cannot be read or the rule has no `expected` (as OSWorld).
    """
    try:
        wanted = given(expected_city, "expected_city")["expected"]
        sheet = openpyxl.load_workbook(given(actual_city_list_path, "actual_city_list_path")).active
    except Exception as exc:
        raise EvalError(f"compare_conference_city_in_order: cannot read {actual_city_list_path!r} "
                        f"with rules {expected_city!r}: {type(exc).__name__}: {exc}") from exc
    actual = [cell.value for row in sheet["C2:C22"] for cell in row]
    try:
        for index, city in enumerate(actual):
            accepted = wanted[index]
            if isinstance(accepted, str):
                if accepted not in city:
                    return 0.0
            elif isinstance(accepted, list):
                if not any(option in city for option in accepted):
                    return 0.0
            else:
                return 0.0  # OSWorld raises TypeError inside its try: scores 0
    except Exception:  # OSWorld: a short list, an empty cell, ... scores 0
        return 0.0
    return 1.0
