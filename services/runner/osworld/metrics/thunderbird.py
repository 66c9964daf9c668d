"""OSWorld `desktop_env/evaluators/metrics/thunderbird.py`: Thunderbird's preferences (`prefs.js`)
and message filters (`msgFilterRules.dat`).

Semantics of `check_thunderbird_prefs` and `check_thunderbird_filter`; a None path scores 0.0, and
where OSWorld's function crashes on an input (an unreadable file, a preference value that is not
JSON, a filter line before any `name=`, a rule that cannot be applied), ours raises EvalError.
`check_thunderbird_folder` (mail folder files) is used only by Google Drive tasks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from services.runner.osworld.crash import input_errors
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import Metric, score
from services.runner.osworld.rules import match_value_to_rule

PREF_LINE = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')
"""One `user_pref("key", value);` line of prefs.js (the value is JSON)."""

CONDITION = re.compile(r"""\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:"(?:(?:[^"]|\")+)"|(?:[^)]+))\)|\bALL\b""")
"""One term of a filter's `condition="..."`: `AND (subject,contains,discount)`, `OR (...)` or `ALL`."""

FilePath = str | Path


def check_thunderbird_prefs(result: FilePath | None, rule: Any) -> float:
    """1.0 iff every preference of `rule["expect"]` (name -> `{"method", "ref"}`, see
    `rules.match_value_to_rule`) is set in prefs.js and its last value matches, and no
    value of a preference of `rule["unexpect"]` matches its rule (unset preferences pass).

    Raises: EvalError for an unreadable file, a value that is not JSON, or a rule that cannot be
    applied to a value.
    """
    if result is None:
        return 0.0
    metric = "check_thunderbird_prefs"
    with input_errors(metric):
        expect: dict[str, Any] = rule.get("expect", {})
        unexpect: dict[str, Any] = rule.get("unexpect", {})
        found = dict.fromkeys(expect, False)
        clean = True
        with open(result) as prefs:
            for line in prefs:
                match = PREF_LINE.match(line.strip())
                if match is None:
                    continue
                key, value = match.group("key"), json.loads(match.group("val"))
                if key in expect:
                    found[key] = match_value_to_rule(value, expect[key])
                elif key in unexpect:
                    clean = clean and not match_value_to_rule(value, unexpect[key])
    return score(all(found.values()) and clean)


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


_FIELDS = (("name=", "name"), ("enabled=", "enabled"), ("type=", "type"), ("action=", "action"),
           ("actionValue=", "actionValue"))


def read_filters(path: FilePath) -> list[dict[str, Any]]:
    """The filters of a `msgFilterRules.dat`: `name`, `enabled`, `type`, `action`, `actionValue`
    (the last of each before the filter's `condition` line) and `condition` (the list of its
    terms). As OSWorld: a value is the line between `key="` and its last two characters (`"` and the
    newline), unescaped; a filter is recorded at its `condition=` line (once per such line).

    Raises: EvalError for a field line before any `name=` line (OSWorld crashes there); OSError /
    UnicodeDecodeError for an unreadable file.
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    with open(path) as rules:
        for line in rules:
            if line.startswith("condition="):
                if current is None:
                    raise EvalError(f"msgFilterRules.dat: filter line before any name= line: {line!r}")
                current["condition"] = CONDITION.findall(_unescape(line[len("condition=") + 1:-2]))
                filters.append(current)
                continue
            for prefix, field in _FIELDS:
                if line.startswith(prefix):
                    if field == "name":
                        current = {}
                    elif current is None:
                        raise EvalError(f"msgFilterRules.dat: filter line before any name= line: {line!r}")
                    current[field] = _unescape(line[len(prefix) + 1:-2])
                    break
    return filters


def _matches(pattern: dict[str, Any], item: dict[str, Any]) -> bool:
    return all(key in item and item[key] == value for key, value in pattern.items())


def check_thunderbird_filter(result: FilePath | None, rules: Any) -> float:
    """1.0 iff each pattern of `rules["expect"]` (field -> value, e.g. `{"action": "Move to
    folder", "condition": ["AND (subject,contains,discount)"]}`) equals the fields of some filter,
    and no pattern of `rules["unexpect"]` equals the fields of any filter.

    Raises: EvalError for an unreadable file, a field line before any `name=` line, or rules that
    are not an object.
    """
    if result is None:
        return 0.0
    with input_errors("check_thunderbird_filter"):
        filters = read_filters(result)
        expect: list[dict[str, Any]] = rules.get("expect", [])
        unexpect: list[dict[str, Any]] = rules.get("unexpect", [])
        met = [False] * len(expect)
        clean = True
        for found in filters:
            met = [was or _matches(pattern, found) for was, pattern in zip(met, expect, strict=True)]
            clean = clean and not any(_matches(pattern, found) for pattern in unexpect)
    return score(all(met) and clean)


def _folder_messages(path: FilePath, options: dict[str, Any]) -> str:
    """The messages of a Thunderbird folder file as OSWorld's `read_thunderbird_folder_file` keeps
    them. OSWorld's loop skips every piece with content (`if mail.strip(): continue`), so only the
    empty pieces between `FROM - ` separators survive; reproduced as is, since scores must match."""
    with open(path) as folder:
        data = folder.read().strip()
    messages = []
    for mail in data.split("FROM - "):
        if mail.strip():
            continue
        if options.get("remove_deleted", True) and re.search(r"X-Mozilla-Status: 000[89]", mail):
            continue
        text = mail
        if options.get("ignore_status", False):
            text = re.sub(r"X-Mozilla-Status\d?:[\s\d]+", "", text)
        if options.get("ignore_keys", False):
            text = re.sub(r"(X-Mozilla-Keys:[^\n]*?)\n(MIME-Version)", r"\2", text)
        messages.append("FROM - " + text.strip())
    kept = set(messages) if options.get("remove_duplicate", True) else messages
    return "\n".join(sorted(kept))


def check_thunderbird_folder(result: FilePath | list[FilePath | None] | None,
                             reference: FilePath | list[FilePath], **options: Any) -> float:
    """1.0 iff each folder file of `result` holds the messages of its `reference` file (one path or
    aligned lists; options `ignore_status`, `ignore_keys`, `remove_deleted` (True),
    `remove_duplicate` (True)), OSWorld's `check_thunderbird_folder`, quirk included (see
    `_folder_messages`). A None result scores 0.0.

    Raises: EvalError for an unreadable file (OSWorld's open() raises).
    """
    results: list[Any]
    references: list[Any]
    if not isinstance(reference, list):
        results, references = [result], [reference]
    elif isinstance(result, list):
        results, references = list(result), list(reference)
    else:  # OSWorld zips a non-list result with the list and crashes
        raise EvalError(f"check_thunderbird_folder: result must be a list like the references, got {result!r}")
    with input_errors("check_thunderbird_folder"):
        for predicted, gold in zip(results, references, strict=False):
            if predicted is None:
                return 0.0
            if _folder_messages(predicted, options) != _folder_messages(gold, options):  # open(None) raises too
                return 0.0
    return 1.0


METRICS: dict[str, Metric] = {
    "check_thunderbird_filter": check_thunderbird_filter,
    "check_thunderbird_folder": check_thunderbird_folder,
    "check_thunderbird_prefs": check_thunderbird_prefs,
}
