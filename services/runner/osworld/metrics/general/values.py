"""Value checks of OSWorld `desktop_env/evaluators/metrics/general.py`: exact / list / literal /
fuzzy matches of a getter value against a rule, and `check_direct_json_object`.

Calling convention (OSWorld `DesktopEnv.evaluate`): `metric(result, expected, **options)`, where
`expected` is usually a `rule` getter's `rules` dict. Each metric returns what OSWorld's returns
for the same inputs; where OSWorld's function raises (a rule without `expected`, a value of a type
the check cannot handle), ours raises EvalError (`crash.crashes_as_eval_error`).
"""

from __future__ import annotations

import json
from typing import Any

from rapidfuzz import fuzz

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import Metric, given, score

_EVALUATION_FAILED = "__EVALUATION_FAILED__"


@crashes_as_eval_error("exact_match")
def exact_match(result: Any, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff `result == rules["expected"]` (no normalisation: a trailing newline matters)."""
    return score(result == given(rules, "rules")["expected"])


@crashes_as_eval_error("check_include_exclude")
def check_include_exclude(result: Any, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff every item of `rules["include"]` is `in` the result (substring of a text, element of
    a list) and no item of `rules["exclude"]` is; both default to empty; a None result scores 0.0."""
    if result is None:
        return 0.0
    rules = given(rules, "rules")
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    return score(all(item in result for item in include) and all(item not in result for item in exclude))


@crashes_as_eval_error("match_in_list")
def match_in_list(result: Any, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff `result` is `in rules["expected"]` (a list of accepted values)."""
    return score(result in given(rules, "rules")["expected"])


@crashes_as_eval_error("is_in_list")
def is_in_list(result: Any, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff `rules["expected"]` is `in` the result (an element of a list, a substring of a text)."""
    return score(given(rules, "rules")["expected"] in result)


@crashes_as_eval_error("literal_match")
def literal_match(result: Any, expected: Any = None, **options: Any) -> float:
    """Compare `result` with `expected` literally. Options: `type` `"str"` (default; both as str)
    or `"list"` (both lists or tuples of the same length, items compared as str), `ignore_case`
    (default False). Raises: EvalError for another `type`."""
    kind = options.get("type", "str")
    ignore_case = options.get("ignore_case", False)

    def text(value: Any) -> str:
        return str(value).lower() if ignore_case else str(value)

    if kind == "str":
        return score(text(result) == text(expected))
    if kind == "list":
        if type(result) not in (list, tuple) or type(expected) not in (list, tuple) or len(result) != len(expected):
            return 0.0
        return score([text(v) for v in result] == [text(v) for v in expected])
    raise NotImplementedError(f"unsupported type {kind!r} (want 'str' or 'list')")


@crashes_as_eval_error("fuzzy_match")
def fuzzy_match(result: Any, rules: dict[str, Any] | None = None) -> float:
    """Similarity in [0, 1] of `result` and `rules["expected"]`: rapidfuzz `fuzz.ratio / 100`
    (the normalised Indel similarity; 0 when either is None)."""
    return float(fuzz.ratio(result, given(rules, "rules")["expected"]) / 100.0)


def _expected_marks_failure(rules: Any) -> bool:
    """Whether a value of `rules["expected"]` is OSWorld's `__EVALUATION_FAILED__` marker (or the
    rules cannot be read, which OSWorld scores 0 too)."""
    try:
        expected = rules.get("expected", {})
        return bool(expected) and any(value == _EVALUATION_FAILED for value in expected.values())
    except Exception:
        return True


def _all_equal(result: Any, expected: dict[str, Any]) -> bool:
    for key in expected.keys():
        if expected.get("ignore_list_order", False):
            if sorted(expected[key]) != sorted(result.get(key)):
                return False
        elif expected.get(key) != result.get(key):
            return False
    return True


def _all_in_result(result: Any, expected: dict[str, Any]) -> bool:
    for key in expected.keys():
        wanted, actual = expected.get(key), result.get(key)
        if isinstance(wanted, list):
            if not any((isinstance(actual, list) and item in actual) or (isinstance(actual, str) and item == actual)
                       for item in wanted):
                return False
        elif isinstance(wanted, str):
            if wanted not in actual:
                return False
        else:
            return False
    return True


@crashes_as_eval_error("check_direct_json_object")
def check_direct_json_object(result: Any, rules: dict[str, Any] | None = None) -> float:
    """1.0 iff the object `result` (a dict, or JSON text with `'` read as `"`) matches
    `rules["expected"]`: with `expect_in_result` false (default) every expected key has an equal
    value (`ignore_list_order`, as in OSWorld, is itself a key and so never holds); with it true,
    a string must be a substring of the result's value and a list must have an item equal to the
    result's string or contained in its list. A None result, an `__EVALUATION_FAILED__` expected
    value, or any error comparing scores 0.0.

    Raises: EvalError when a text result is not JSON (as OSWorld).
    """
    if isinstance(result, str):
        result = json.loads(result.strip().replace("'", '"'))
    if result is None or _expected_marks_failure(rules):
        return 0.0
    try:
        rules = given(rules, "rules")
        expected = rules["expected"]
        in_result = rules.get("expect_in_result", False)
        matched = _all_in_result(result, expected) if in_result else _all_equal(result, expected)
    except Exception:  # OSWorld: any error while comparing scores 0
        return 0.0
    return score(matched)


METRICS: dict[str, Metric] = {
    "exact_match": exact_match,
    "check_include_exclude": check_include_exclude,
    "match_in_list": match_in_list,
    "is_in_list": is_in_list,
    "literal_match": literal_match,
    "fuzzy_match": fuzzy_match,
    "check_direct_json_object": check_direct_json_object,
}
