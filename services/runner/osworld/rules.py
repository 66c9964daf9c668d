"""Value-vs-rule and record matching shared by the metric modules (OSWorld
`desktop_env/evaluators/metrics/utils.py`: `_match_value_to_rule`, `_match_record`,
`_multicellrange_containsby`).

A rule is `{"method": <method>, "ref": <reference>}` with method one of:
- `re` or any method starting with `re`, optionally `.<FLAG>` suffixes (`re.I.M`): `re.search(ref, value)`
  with the flags named by `re` attribute;
- `eq` `ne` `le` `lt` `ge` `gt`: `value OP ref`;
- `approx:<tol>`: `|float(value) - ref| <= tol` (a value that is no number does not match);
- `spreadsheet_range`: `value` (an openpyxl `MultiCellRange`) covers `ref[0]` and lies within `ref[1]`;
- `range.<l><r>` with `l`, `r` in {`t`, `e`}: `ref[0] <l> value <r> ref[1]` (`t` strict, `e` inclusive);
- `str_list_eq` / `str_set_eq`: `value` (a string) with quotes stripped at both ends and split on commas
  equals `ref` as a list / set.

Where OSWorld's function raises (a missing method, an unknown method or flag, a value of the wrong
type for the method, e.g. a regex on a number), `match_value_to_rule` raises `RuleError`: callers
that OSWorld wraps in `try` (e.g. `check_json`, `compare_table`'s `check_cell`) catch it and score
0; the others let it end the evaluation as an `EvalError`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from openpyxl.worksheet.cell_range import MultiCellRange

from services.runner.osworld.errors import EvalError

__all__ = ["RuleError", "match_record", "match_value_to_rule", "multicellrange_contained_by"]


class RuleError(EvalError):
    """A rule cannot be applied to a value (OSWorld's `_match_value_to_rule` raises on it)."""


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "le": operator.le, "lt": operator.lt, "ge": operator.ge, "gt": operator.gt,
}
_RANGE_SIDE: dict[str, Callable[[Any, Any], Any]] = {"t": operator.lt, "e": operator.le}


def multicellrange_contained_by(subset: Iterable[Any], superset: Any) -> bool:
    """Whether every range of `subset` lies within some range of `superset` (OpenPyXL's `in`)."""
    return all(cell_range in superset for cell_range in subset)


def match_record(pattern: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """Whether `item` has every key of `pattern` with an equal value (OSWorld `_match_record`)."""
    return all(key in item and item[key] == value for key, value in pattern.items())


def _regex_flags(method: str) -> re.RegexFlag:
    flags = re.RegexFlag(0)
    for name in method.split(".")[1:]:
        flags = operator.or_(flags, getattr(re, name))
    return flags


def _approx(method: str, value: Any, ref: Any) -> bool:
    tolerance = float(method.split(":")[1])
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return bool(abs(number - ref) <= tolerance)


def _apply(method: str, value: Any, rule: Mapping[str, Any]) -> bool:
    if method.startswith("re"):
        return re.search(rule["ref"], value, _regex_flags(method)) is not None
    if method in _COMPARE:
        return bool(_COMPARE[method](value, rule["ref"]))
    if method.startswith("approx"):
        return _approx(method, value, rule["ref"])
    if method == "spreadsheet_range":
        smallest, largest = MultiCellRange(rule["ref"][0]), MultiCellRange(rule["ref"][1])
        return multicellrange_contained_by(smallest, value) and multicellrange_contained_by(value, largest)
    if method.startswith("range."):
        left, right = _RANGE_SIDE[method[6]], _RANGE_SIDE[method[7]]
        return bool(left(rule["ref"][0], value)) and bool(right(value, rule["ref"][1]))
    if method == "str_list_eq":
        return value.strip("\"'").split(",") == list(rule["ref"])
    if method == "str_set_eq":
        return set(value.strip("\"'").split(",")) == set(rule["ref"])
    raise RuleError(f"unsupported rule method {method!r}")


def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """Whether `value` satisfies `rule` (see the module docstring for the methods).

    Raises: RuleError (an EvalError) naming the rule and the problem where OSWorld's function raises.
    """
    try:
        method = rule["method"]
        if not isinstance(method, str):
            raise RuleError(f"rule method must be a string, got {method!r}")
        return _apply(method, value, rule)
    except RuleError:
        raise
    except Exception as exc:  # OSWorld raises here too: the rule does not fit the value
        raise RuleError(f"rule {dict(rule)!r} cannot be applied to {value!r}: {type(exc).__name__}: {exc}") from exc
