"""Differential tests of `metrics/table` (`compare_table`) against OSWorld's own function: for every
task of `test_nogdrive.json` that scores with `compare_table`, its rules taken verbatim from the
task file, run on the fixtures of `table_cases*` (the expected workbook and agent results), as
OpenPyXL wrote them and as LibreOffice saves them, by ours and by OSWorld's function."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.runner.osworld.metrics.table import compare_table
from tests.oracle import table_cases_calc, table_cases_calc2, table_cases_multi  # noqa: F401 (register cases)
from tests.oracle.client import Oracle, same_value
from tests.oracle.table_cases import CASES, Case
from tests.oracle.tasks import MetricUse, metric_uses
from tests.oracle.workbooks import CSV_FILTER, libreoffice_cache, libreoffice_convert, write_book

USES = metric_uses("compare_table")
TASK_IDS = sorted({use.task_id for use in USES})


def _case(task_id: str) -> Case:
    return CASES[task_id[:8]]


def _prints(task_id: str) -> bool:
    return any(rule["type"] == "sheet_print" for use in USES if use.task_id == task_id
               for rule in use.options["rules"])


@dataclass(frozen=True)
class Fixtures:
    """Where the fixture workbooks are: `<variant>/<task8>__<label>.xlsx` (variant "openpyxl" or
    "libreoffice"), with the CSV export `..-Sheet1.csv` beside it for sheet_print tasks."""

    root: Path

    def path(self, variant: str, task_id: str, label: str) -> str:
        return str(self.root / variant / f"{task_id[:8]}__{label}.xlsx")

    def variants(self, task_id: str) -> list[str]:
        case = _case(task_id)
        return ["openpyxl", "libreoffice"] if case.libreoffice or _prints(task_id) else ["openpyxl"]


@pytest.fixture(scope="session")
def table_files(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Fixtures:
    """Every case's workbooks, LibreOffice copies and CSV exports (one soffice run each, cached
    in pytest's cache directory by content)."""
    root = tmp_path_factory.mktemp("table")
    written: dict[str, list[Path]] = {}
    for task_id in TASK_IDS:
        case = _case(task_id)
        books: dict[str, Any] = {label: book for label, (book, _) in case.candidates.items()}
        if case.expected is not None:
            books["expected"] = case.expected
        written[task_id] = [write_book(book, root / "openpyxl" / f"{task_id[:8]}__{label}.xlsx")
                            for label, book in books.items()]
    cache = libreoffice_cache(request, tmp_path_factory)
    converted = [path for task_id, paths in written.items() if "libreoffice" in Fixtures(root).variants(task_id)
                 for path in paths]
    libreoffice_convert(converted, "xlsx", root / "libreoffice", cache)
    printed = [path for task_id, paths in written.items() if _prints(task_id) for path in paths]
    libreoffice_convert(printed, CSV_FILTER, root / "csv", cache)
    for export in (root / "csv").iterdir():
        for variant in ("openpyxl", "libreoffice"):
            (root / variant / export.name).write_bytes(export.read_bytes())
    return Fixtures(root)


def test_every_compare_table_task_has_fixtures() -> None:
    assert len(TASK_IDS) == 59
    assert {task_id[:8] for task_id in TASK_IDS} == set(CASES)


def _in_libreoffice_run(case: Case, label: str) -> bool:
    """LibreOffice copies are scored for "right" and the candidates whose score differs between the
    two variants; the wrong results of sheet_print tasks are scored on their LibreOffice CSV exports
    in the OpenPyXL variant already (the others add time, not coverage)."""
    return label == "right" or not isinstance(case.candidates[label][1], float)


def _score(score: float | tuple[float, float], variant: str) -> float:
    return score if isinstance(score, float) else score[variant == "libreoffice"]


def _check(oracle: Oracle, use: MetricUse, result: str | None, expected: str | None, where: str) -> float:
    pending = oracle.submit("metrics.table", "compare_table", result, expected, **use.options)
    ours = compare_table(result, expected, **use.options)  # while OSWorld's runs in its process
    theirs = pending()
    assert theirs.ok, f"{where}: OSWorld raised {theirs.error}"
    assert same_value(ours, theirs.value), f"{where}: ours {ours} != OSWorld {theirs.value}"
    return ours


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_compare_table_matches_osworld_on_task_fixtures(task_id: str, oracle: Oracle, table_files: Fixtures) -> None:
    case = _case(task_id)
    for use in (u for u in USES if u.task_id == task_id):
        for variant in table_files.variants(task_id):
            expected = table_files.path(variant, task_id, "expected") if case.expected is not None else None
            for label, (_, score) in case.candidates.items():
                if variant == "libreoffice" and not _in_libreoffice_run(case, label):
                    continue
                where = f"{task_id} {label} ({variant})"
                ours = _check(oracle, use, table_files.path(variant, task_id, label), expected, where)
                assert ours == _score(score, variant), f"{where}: fixture scores {ours}, want {_score(score, variant)}"
