"""Differential tests of `compare_csv` and `compare_conference_city_in_order` (OSWorld
`metrics/table.py`) on the fixtures of the tasks that use them, plus edge cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from services.runner.osworld.errors import EvalError
from services.runner.osworld.metrics.table import compare_conference_city_in_order, compare_csv
from tests.oracle.client import Oracle, same_value
from tests.oracle.tasks import metric_uses


def agree(oracle: Oracle, func: Any, name: str, *args: Any, **options: Any) -> Any:
    theirs = oracle.call("metrics.table", name, *args, **options)
    if not theirs.ok:
        with pytest.raises(EvalError):
            func(*args, **options)
        return theirs.type
    ours = func(*args, **options)
    assert same_value(ours, theirs.value), f"ours {ours} != OSWorld {theirs.value}"
    return ours


# Per task: the gold CSV text(s) and agent results with the score OSWorld gives them.
_EXPORT = "Name,Qty,Price\nbolt,4,0.25\n\"nut, small\",9,0.1\n"
_MERGED_GOLDS = ["ab\ncd\nef\n", "ab\ncd\nef", "a b\nc d\ne f\n"]
_CONTACTS = ("First Name,Last Name,Display Name,Nickname,Primary Email\n"
             "Ann,Lee,Ann Lee,,ann@ex.org\nBob,Ray,Bob Ray,bobby,bob@ex.org\n")
_ODS = "0,First Name,Last Name,Gender\n1,Dulce,Abril,Female\n2,Mara,Hashimoto,Female\n"
CSV_CASES: dict[str, tuple[list[str], dict[str, tuple[str, float]]]] = {
    "3aaa4e37": ([_EXPORT], {"right": (_EXPORT, 1.0), "semicolons": (_EXPORT.replace(",", ";"), 0.0),
                             "padded": (_EXPORT.replace("bolt", "bolt "), 0.0)}),
    "3680a5ee": (_MERGED_GOLDS, {"second-gold": ("ab\ncd\nef", 1.0), "unmerged": ("a\nb\nc\nd\n", 0.0)}),
    "c867c42d": ([_CONTACTS], {"right": (_CONTACTS, 1.0),
                               "no-nickname": (_CONTACTS.replace(",Nickname", "").replace(",bobby", ""), 0.0)}),
    "ee9a3c83": ([_ODS], {"right": (_ODS, 1.0), "quoted": (_ODS.replace("Dulce", '"Dulce"'), 0.0),
                          "crlf": (_ODS.replace("\n", "\r\n"), 1.0)}),
}


def test_every_compare_csv_task_has_fixtures() -> None:
    assert {use.task_id[:8] for use in metric_uses("compare_csv")} == set(CSV_CASES)


@pytest.mark.parametrize("use", metric_uses("compare_csv"), ids=lambda use: use.task_id)
def test_compare_csv_matches_osworld_on_task_fixtures(oracle: Oracle, tmp_path: Path, use: Any) -> None:
    golds, candidates = CSV_CASES[use.task_id[:8]]
    gold_paths = []
    for index, text in enumerate(golds):
        gold_paths.append(str(tmp_path / f"gold{index}.csv"))
        Path(gold_paths[-1]).write_bytes(text.encode())
    expected: Any = gold_paths if use.expected.get("multi") else gold_paths[0]
    for label, (text, score) in candidates.items():
        result = tmp_path / f"{label}.csv"
        result.write_bytes(text.encode())
        assert agree(oracle, compare_csv, "compare_csv", str(result), expected, **use.options) == score, label


@pytest.mark.parametrize(
    ("result", "expected", "options", "want"),
    [
        (None, "gold", {}, 0.0),
        ("absent", "gold", {}, 0.0),
        ("spaced", "gold", {}, 0.0),
        ("spaced", "gold", {"strict": False}, 1.0),
        ("upper", "gold", {"ignore_case": True}, 1.0),
        ("upper", "gold", {"strict": False}, 0.0),
        ("latin1", "latin1", {}, 1.0),
        ("bom", "gold", {}, 0.0),
        ("gold", ["absent", "gold"], {}, 1.0),
        ("gold", ["absent"], {}, 0.0),
        ("gold", None, {}, "TypeError"),
        ("gold", ["gold", None], {}, 1.0),
        ("spaced", ["absent", None], {}, "TypeError"),
        (["gold"], "gold", {}, "TypeError"),
        ("directory", "gold", {}, 0.0),
    ],
)
def test_compare_csv_edges_match_osworld(oracle: Oracle, tmp_path: Path, result: Any, expected: Any,
                                         options: dict[str, Any], want: Any) -> None:
    files = {"gold": b"a,b\nc,d\n", "spaced": b" a,b \nc,d\n", "upper": b"A,B\nC,D\n",
             "latin1": "é,ü\n".encode("latin-1"),
             "bom": b"\xef\xbb\xbfa,b\nc,d\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "directory").mkdir()

    def path(name: Any) -> Any:
        if isinstance(name, list):
            return [path(item) for item in name]
        return str(tmp_path / name) if isinstance(name, str) else name

    assert agree(oracle, compare_csv, "compare_csv", path(result), path(expected), **options) == want


# --- compare_conference_city_in_order ------------------------------------------------------------------


def _city_book(tmp_path: Path, cities: list[Any], name: str) -> str:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Conference", "Year", "City"])
    for index, city in enumerate(cities):
        sheet.append([["ICML", "NeurIPS", "ICLR"][index % 3], 2013 + index // 3, city])
    path = tmp_path / name
    workbook.save(path)
    return str(path)


def _accepted(item: str | list[str]) -> str:
    return item if isinstance(item, str) else item[-1]


def test_conference_city_task_matches_osworld(oracle: Oracle, tmp_path: Path) -> None:
    (use,) = metric_uses("compare_conference_city_in_order")
    rules = use.expected["rules"]
    cities = [_accepted(item) for item in rules["expected"]]
    candidates = {
        "right": ([f"{city}, host city" for city in cities], 1.0),
        "second-spelling": ([item if isinstance(item, str) else item[0] for item in rules["expected"]], 1.0),
        "one-wrong": ([*cities[:5], "Paris", *cities[6:]], 0.0),
        "one-empty": ([*cities[:20], None], 0.0),
        "short": (cities[:10], 0.0),
    }
    for label, (values, score) in candidates.items():
        path = _city_book(tmp_path, values, f"{label}.xlsx")
        assert agree(oracle, compare_conference_city_in_order, "compare_conference_city_in_order", path,
                     rules) == score, label


@pytest.mark.parametrize(("which", "rules"), [("absent", {"expected": ["A"]}), ("book", {}), ("book", None),
                                              ("book", {"expected": ["A", 3]}), ("book", {"expected": ["A"]})])
def test_conference_city_edges_match_osworld(oracle: Oracle, tmp_path: Path, which: str, rules: Any) -> None:
    path = _city_book(tmp_path, ["A city", "B"], "book.xlsx") if which == "book" else str(tmp_path / "absent.xlsx")
    agree(oracle, compare_conference_city_in_order, "compare_conference_city_in_order", path, rules)
