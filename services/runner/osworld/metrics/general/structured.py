"""Structured-document checks of OSWorld `desktop_env/evaluators/metrics/general.py`: `check_json`
(JSON / YAML files against key-path rules) and `check_accessibility_tree` (CSS / XPath queries on
the accessibility tree XML)."""

from __future__ import annotations

import json
import os
from typing import Any

import lxml.etree
import yaml
from lxml.cssselect import CSSSelector
from rapidfuzz import fuzz

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.metrics.base import FilePath, Metric, given, score
from services.runner.osworld.rules import match_value_to_rule

_A11Y_HOSTS = {"ubuntu": "ubuntu", "windows": "windows", "macos": "macos"}
_A11Y_PARTS = ("st", "state"), ("attr", "attributes"), ("cp", "component"), ("doc", "document"), \
    ("docattr", "document/attributes"), ("txt", "text"), ("val", "value"), ("act", "action")
A11Y_NAMESPACES: dict[str, dict[str, str]] = {
    os_name: {prefix: f"https://accessibility.{host}.example.org/ns/{part}" for prefix, part in _A11Y_PARTS}
    for os_name, host in _A11Y_HOSTS.items()
}
"""Namespace prefixes of OSWorld's accessibility tree XML, per OS (as in its `general.py`)."""
A11Y_NAMESPACES["windows"]["class"] = "https://accessibility.windows.example.org/ns/class"
A11Y_NAMESPACES["macos"]["role"] = "https://accessibility.macos.example.org/ns/role"
del A11Y_NAMESPACES["macos"]["docattr"]


def _load(path: FilePath, is_yaml: bool) -> tuple[bool, Any]:
    """`(usable, document)`: unusable when the file cannot be read or parsed, or is YAML without
    content (OSWorld scores those 0; JSON `null` is a document)."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle) if is_yaml else json.load(handle)
    except Exception:
        return False, None
    return not (is_yaml and document is None), document


_ABSENT = object()


def _walk(document: Any, keys: Any, missing: Any) -> Any:
    """`document[k0][k1]...`; `missing` when a key is absent or a value cannot be indexed.
    Raises: IndexError for a list index out of range (OSWorld does not guard it)."""
    value = document
    for key in keys:
        try:
            value = value[key]
        except (KeyError, TypeError):
            return missing
    return value


@crashes_as_eval_error("check_json")
def check_json(result: FilePath | None, rules: dict[str, Any] | None = None, is_yaml: bool = False) -> float:
    """1.0 iff the JSON (or YAML, `is_yaml`) file satisfies every `rules["expect"]` rule and no
    `rules["unexpect"]` rule. A rule is `{"key": [k0, k1, ...], "method", "ref"}` (see
    `rules.match_value_to_rule`); an expected key path that is absent fails, an unexpected one is
    tested as None. A missing, unreadable or empty file, or any error applying a rule, scores 0.0.
    """
    if result is None or not os.path.exists(result):
        return 0.0
    usable, document = _load(result, is_yaml)
    if not usable:
        return 0.0
    rules = given(rules, "rules")
    expect, unexpect = rules.get("expect", {}), rules.get("unexpect", {})
    passed = True
    try:
        for rule in expect:
            value = _walk(document, rule["key"], _ABSENT)
            if value is _ABSENT:
                return 0.0
            passed = passed and match_value_to_rule(value, rule)
        for rule in unexpect:
            value = _walk(document, rule["key"], None)
            passed = passed and not match_value_to_rule(value, rule)
    except Exception:  # OSWorld: any error applying a rule scores 0
        return 0.0
    return score(passed)


def _text_score(rule: dict[str, Any], text: str | None) -> Any:
    if rule["exact"]:
        return rule["text"] == text
    return fuzz.ratio(rule["text"], text) / 100.0  # type: ignore[arg-type]  # None scores 0


@crashes_as_eval_error("check_accessibility_tree")
def check_accessibility_tree(result: str | None, rules: list[dict[str, Any]] | None = None,
                             osname: str = "ubuntu") -> float:
    """Product over `rules` of how well the accessibility tree XML matches each: a rule selects
    elements by `xpath` or by CSS `selectors` (joined with ", "), scores 0.0 when none is found, and
    with `text` scores the best element text match (`exact`: equality, else rapidfuzz ratio / 100).

    Raises: EvalError for XML that does not parse, a rule with neither xpath nor selectors, or a
    `text` rule without `exact` (as OSWorld).
    """
    namespaces = A11Y_NAMESPACES[osname]
    tree = lxml.etree.fromstring(result)
    total: Any = 1.0
    for rule in given(rules, "rules"):
        if "xpath" in rule:
            elements = tree.xpath(rule["xpath"], namespaces=namespaces)
        elif "selectors" in rule:
            elements = CSSSelector(", ".join(rule["selectors"]), namespaces=namespaces)(tree)
        else:
            raise ValueError(f"rule {rule!r} has neither 'xpath' nor 'selectors'")
        if len(elements) == 0:
            return 0.0
        best: Any = 1.0
        if "text" in rule:
            best = 0
            for element in elements:
                best = max(best, _text_score(rule, element.text or None))
        total *= best
    return float(total)


METRICS: dict[str, Metric] = {
    "check_json": check_json,
    "check_accessibility_tree": check_accessibility_tree,
}
