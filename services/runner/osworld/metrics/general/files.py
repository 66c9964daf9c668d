"""File checks of OSWorld `desktop_env/evaluators/metrics/general.py`: text, CSV, SQLite, Python
source and Word files fetched by the file getters (host paths).

A None path (the file is missing in the env) scores 0.0. Where OSWorld's function reads a file it
does not guard (a missing expected file, a database without the queried table), ours raises
EvalError (`crash.crashes_as_eval_error`). Text is read as UTF-8 (OSWorld uses the platform default, UTF-8 on
its VMs and hosts; here it is explicit so a C locale cannot change a score).
"""

from __future__ import annotations

import csv
import difflib
import os
import re
import sqlite3
from typing import Any

from docx import Document
from rapidfuzz import fuzz

from services.runner.osworld.crash import crashes_as_eval_error
from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.base import FilePath, Metric, given, given_path, score
from services.runner.osworld.rules import match_record

_TIME_OF_DAY = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")
_METADATA_PREFIXES = ("#!", "# -*- coding:", "# coding:", "# coding=")


def _read(path: FilePath) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@crashes_as_eval_error("diff_text_file")
def diff_text_file(result: FilePath | None, expected: FilePath | None = None) -> float:
    """Line-level similarity in [0, 1] of two text files: difflib's ratio over their lines."""
    if result is None:
        return 0.0
    expected_lines = _read(given_path(expected, "expected")).splitlines()
    return difflib.SequenceMatcher(a=_read(result).splitlines(), b=expected_lines).ratio()


def file_contains(file_path: FilePath | None, config: dict[str, Any] | None = None) -> float:
    """1.0 iff every string of `config["expected"]` occurs in the text file; a missing or
    unreadable file, or a config without `expected`, scores 0.0 (as OSWorld)."""
    if not file_path:
        return 0.0
    try:
        text = _read(file_path)
        return score(all(item in text for item in given(config, "config")["expected"]))
    except Exception:  # OSWorld: anything unreadable scores 0
        return 0.0


@crashes_as_eval_error("check_list")
def check_list(result: FilePath | None, rules: dict[str, list[str]] | None = None) -> float:
    """1.0 iff each regex of `rules["expect"]` matches (search) some line of the file and no regex
    of `rules["unexpect"]` matches any line (lines keep their newline, as OSWorld reads them)."""
    if result is None:
        return 0.0
    rules = given(rules, "rules")
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8") as handle:
        for line in handle:
            found = [hit or pattern.search(line) is not None for hit, pattern in zip(found, expect, strict=True)]
            clean = clean and all(pattern.search(line) is None for pattern in unexpect)
    return score(all(found) and clean)


@crashes_as_eval_error("check_csv")
def check_csv(result: FilePath | None, rules: dict[str, list[dict[str, str]]] | None = None) -> float:
    """1.0 iff each record pattern of `rules["expect"]` matches some CSV row (`{column: value}`,
    see `rules.match_record`) and no pattern of `rules["unexpect"]` matches any row."""
    if result is None:
        return 0.0
    rules = given(rules, "rules")
    expect, unexpect = rules.get("expect", []), rules.get("unexpect", [])
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            found = [hit or match_record(pattern, record) for hit, pattern in zip(found, expect, strict=True)]
            clean = clean and not any(match_record(pattern, record) for pattern in unexpect)
    return score(all(found) and clean)


def check_line_number(file_path: FilePath | None, line_number: dict[str, Any] | None = None) -> float:
    """1.0 iff the number of lines containing a time of day `HH:MM:SS` equals
    `int(line_number["expected"])`; a missing or unreadable file or a bad rule scores 0.0."""
    if file_path is None or not os.path.isfile(file_path):
        return 0.0
    try:
        count = sum(1 for line in _read(file_path).split("\n") if _TIME_OF_DAY.search(line))
        return score(count == int(given(line_number, "line_number")["expected"]))
    except Exception:  # OSWorld: anything unreadable scores 0
        return 0.0


def _python_lines(text: str) -> str:
    """Source without leading shebang / coding lines (first three lines only), blank lines, and
    trailing blanks, tabs expanded to 4."""
    lines = text.splitlines()
    start = 0
    while start < min(len(lines), 3) and lines[start].strip().startswith(_METADATA_PREFIXES):
        start += 1
    return "\n".join(line.expandtabs(4).rstrip() for line in lines[start:] if line.strip())


def compare_python_pure_text(py_file_path: FilePath | None, gold_file_path: FilePath | None = None) -> float:
    """1.0 iff two Python files are equal up to leading shebang / coding lines, blank lines,
    trailing whitespace and tabs; a missing or unreadable file scores 0.0 (as OSWorld)."""
    if not py_file_path or not gold_file_path:
        return 0.0
    try:
        return score(_python_lines(_read(py_file_path)) == _python_lines(_read(gold_file_path)))
    except Exception:  # OSWorld: anything unreadable scores 0
        return 0.0


@crashes_as_eval_error("run_sqlite3")
def run_sqlite3(result: FilePath | None, rules: dict[str, Any] | None = None) -> float:
    """The first column of the first row of `rules["sql"]` run on the SQLite file, as a float (NULL
    -> 0). Raises: EvalError for a missing file (OSWorld's `connect` creates an empty database there,
    whose query then fails), a failing query, or a query without rows."""
    if not isinstance(result, str | os.PathLike) or not os.path.exists(result):
        raise EvalError(f"run_sqlite3: no database file at {result!r}")
    connection = sqlite3.connect(result)
    try:
        row = connection.execute(given(rules, "rules")["sql"]).fetchone()
        return float(row[0] or 0)
    finally:
        connection.close()


@crashes_as_eval_error("fuzzy_place_math")
def fuzzy_place_math(result_file_path: FilePath | None, rules: dict[str, Any] | None = None) -> float:
    """Mean over the words of a Word file (whitespace-split paragraph text) of each word's best
    rapidfuzz ratio / 100 against the accepted answers `rules["expected"]`, when there are exactly
    three words; 0.0 otherwise or for a missing file."""
    if result_file_path is None:
        return 0.0
    answers = given(rules, "rules")["expected"]
    words = [word for paragraph in Document(str(result_file_path)).paragraphs for word in paragraph.text.split()]
    scores = [max([0.0, *(fuzz.ratio(word, answer) / 100 for answer in answers)]) for word in words]
    return sum(scores) / 3 if len(scores) == 3 else 0.0


METRICS: dict[str, Metric] = {
    "diff_text_file": diff_text_file,
    "file_contains": file_contains,
    "check_list": check_list,
    "check_csv": check_csv,
    "check_line_number": check_line_number,
    "compare_python_pure_text": compare_python_pure_text,
    "run_sqlite3": run_sqlite3,
    "fuzzy_place_math": fuzzy_place_math,
}
