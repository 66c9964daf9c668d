"""Differential tests of the value metrics of `metrics/general` against OSWorld's own functions: for
every use in `test_nogdrive.json`, the task's rules verbatim (a `rule_relativeTime` rule resolved at
a fixed instant, as its getter does) and getter values an agent's env could give: one that passes
and realistic wrong ones; plus edge cases (None values, malformed rules, wrong types)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from services.runner.osworld.errors import EvalError
from services.runner.osworld.getters.relative_time import resolve_relative_time
from services.runner.osworld.metrics import general
from tests.oracle.client import Oracle, same_value
from tests.oracle.tasks import MetricUse, metric_uses

NOW = datetime(2025, 3, 12, 15, 30, tzinfo=UTC)


def agree(oracle: Oracle, name: str, *args: Any, **options: Any) -> Any:
    """Ours and OSWorld's give the same value, or both raise (ours EvalError): returns the value or
    OSWorld's exception class name."""
    theirs = oracle.call("metrics.general", name, *args, **options)
    metric = getattr(general, name)
    if not theirs.ok:
        with pytest.raises(EvalError):
            metric(*args, **options)
        return theirs.type
    ours = metric(*args, **options)
    assert same_value(ours, theirs.value), f"{name}: ours {ours!r} != OSWorld {theirs.value!r}"
    return ours


def _expected_state(use: MetricUse) -> Any:
    getter = use.expected or {}
    if getter.get("type") == "rule":
        return getter["rules"]
    if getter.get("type") == "rule_relativeTime":
        return resolve_relative_time(getter["rules"], NOW)
    if getter.get("type") == "info_from_website":
        return list(getter["backups"])  # what OSWorld's getter gives when the page cannot be read
    if getter.get("type") == "gotoRecreationPage_and_get_html_content":
        return {"expected": {"order": "Sort by Available"}}
    raise AssertionError(f"{use.task_id}: no expected state for {getter}")


def _include_exclude(rules: dict[str, Any]) -> dict[str, tuple[Any, float]]:
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    right = "".join(f"{item}\n" for item in include) or "Successfully imported\n"
    found = {"right": (right, 1.0), "none": (None, 0.0)}
    if include:
        found["missing-first"] = (right.replace(include[0], include[0][:-1] + "?"), 0.0)
    if exclude:
        found["excluded-too"] = (f"{right}{exclude[0]}\n", 0.0)
    return found


def _exact(rules: dict[str, Any]) -> dict[str, tuple[Any, float]]:
    expected = rules["expected"]
    other_newline = expected.rstrip("\n") if expected.endswith("\n") else f"{expected}\n"
    return {"right": (expected, 1.0), "newline-differs": (other_newline, 0.0), "none": (None, 0.0),
            "upper": (expected.upper(), 1.0 if expected.upper() == expected else 0.0)}


def _inside(value: Any) -> Any:
    return f"Result: {value} (selected)" if isinstance(value, str) else [value[-1], "extra"] \
        if isinstance(value, list) else value


def _json_object(rules: dict[str, Any]) -> dict[str, tuple[Any, float]]:
    expected = rules["expected"]
    first = next(iter(expected))
    if rules.get("expect_in_result"):
        right = {key: _inside(value) for key, value in expected.items()}
        wrong = {**right, first: "something else"}
    else:
        right = dict(expected)
        wrong = {**right, first: "x" if expected[first] != "x" else "y"}
    candidates = {"right": (right, 1.0), "one-key-wrong": (wrong, 0.0), "none": (None, 0.0),
                  "missing-key": ({k: v for k, v in right.items() if k != first}, 0.0)}
    if all(isinstance(v, str | bool) or v is None for v in right.values()) and not any("'" in str(v) for v in
                                                                                        right.values()):

        candidates["as-text"] = (json.dumps(right).replace('"', "'"), 1.0)
    if any(isinstance(v, list) and len(v) > 1 for v in expected.values()) and not rules.get("expect_in_result"):
        candidates["reordered"] = ({k: list(reversed(v)) if isinstance(v, list) else v for k, v in right.items()},
                                   0.0)  # rules-level "ignore_list_order" is not read by OSWorld
    return candidates


def _listed(metric: str, rules: Any) -> dict[str, tuple[Any, float]]:
    if metric == "match_in_list":
        return {"right": (rules["expected"][0], 1.0), "google": ("Google", 0.0), "none": (None, 0.0)}
    if metric == "is_in_list":
        path = rules["expected"]
        return {"right": (["/home/user/.config/ext", path], 1.0), "sibling": ([path + "2"], 0.0),
                "as-text": (f"{path}\n", 1.0)}
    backups = rules
    return {"right": ([str(v).upper() for v in backups], 1.0), "missing-one": (backups[:-1], 0.0),
            "one-differs": ([*backups[:-1], "https://arxiv.org/abs/x"], 0.0), "tuple": (tuple(backups), 1.0)}


USES = [(metric, use) for metric in ("check_include_exclude", "exact_match", "check_direct_json_object",
                                     "match_in_list", "is_in_list", "literal_match")
        for use in metric_uses(metric)]


def test_value_metric_uses_are_all_here() -> None:
    assert [len(metric_uses(m)) for m in ("check_include_exclude", "exact_match", "check_direct_json_object")] == \
        [21, 17, 22]


@pytest.mark.parametrize(("metric", "use"), USES, ids=[f"{m}-{u.task_id}" for m, u in USES])
def test_value_metrics_match_osworld_on_task_values(oracle: Oracle, metric: str, use: MetricUse) -> None:
    expected = _expected_state(use)
    if metric == "check_include_exclude":
        candidates = _include_exclude(expected)
    elif metric == "exact_match":
        candidates = _exact(expected)
    elif metric == "check_direct_json_object":
        candidates = _json_object(expected)
    else:
        candidates = _listed(metric, expected)
    for label, (value, score) in candidates.items():
        assert agree(oracle, metric, value, expected, **use.options) == score, label


@pytest.mark.parametrize(
    ("metric", "result", "rules", "options"),
    [
        ("check_include_exclude", None, None, {}),
        ("check_include_exclude", "abc", None, {}),
        ("check_include_exclude", 42, {"include": ["4"]}, {}),
        ("check_include_exclude", ["a", "b"], {"include": ["a"], "exclude": ["c"]}, {}),
        ("check_include_exclude", "abc", {"include": None}, {}),
        ("exact_match", None, {"expected": None}, {}),
        ("exact_match", 1, {"expected": 1.0}, {}),
        ("exact_match", "a", {}, {}),
        ("match_in_list", None, {"expected": [None]}, {}),
        ("match_in_list", "a", {"expected": "cat"}, {}),
        ("match_in_list", "a", {"expected": 3}, {}),
        ("is_in_list", None, {"expected": "a"}, {}),
        ("is_in_list", "cat", {"expected": "a"}, {}),
        ("literal_match", None, None, {}),
        ("literal_match", 1, "1", {}),
        ("literal_match", ["A", 1], ("a", "1"), {"type": "list", "ignore_case": True}),
        ("literal_match", "a", ["a"], {"type": "list"}),
        ("literal_match", "a", "a", {"type": "dict"}),
        ("fuzzy_match", "kitten", {"expected": "sitting"}, {}),
        ("fuzzy_match", None, {"expected": "x"}, {}),
        ("fuzzy_match", ["a", "b"], {"expected": ["a", "c"]}, {}),
        ("fuzzy_match", "a", {}, {}),
        ("check_direct_json_object", "{'a': 'b'}", {"expected": {"a": "b"}}, {}),
        ("check_direct_json_object", "not json", {"expected": {"a": "b"}}, {}),
        ("check_direct_json_object", {"a": "b"}, None, {}),
        ("check_direct_json_object", {"a": "b"}, {"expected": {"a": "__EVALUATION_FAILED__"}}, {}),
        ("check_direct_json_object", {"a": [1, 2]}, {"expected": {"a": [2, 1], "ignore_list_order": True}}, {}),
        ("check_direct_json_object", {"a": None}, {"expected": {"a": "b"}, "expect_in_result": True}, {}),
        ("check_direct_json_object", {"a": 5}, {"expected": {"a": 5}, "expect_in_result": True}, {}),
        ("check_direct_json_object", ["a"], {"expected": {"a": "b"}}, {}),
    ],
)
def test_value_metric_edges_match_osworld(oracle: Oracle, metric: str, result: Any, rules: Any,
                                          options: dict[str, Any]) -> None:
    agree(oracle, metric, result, rules, **options)
