"""The stand-in files of the URL cache (services/cli/standins.py) against OSWorld's own `compare_table`: for
every task of test_nogdrive.json that compares a workbook the agent edits with a gold workbook, the stand-in
start file (what a do-nothing agent leaves) scores 0 with OSWorld's checker and with ours: a do-nothing
agent earns nothing on stand-ins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from common.task_urls import task_files
from services.cli import standins
from services.runner.osworld.metrics.table import compare_table
from tests.oracle.client import Oracle, same_value

INDEX = Path(__file__).resolve().parents[3] / "shared" / "osworld"


def _cases() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(task id, start URL, gold URL, options) of each compare_table task with a downloaded start workbook
    read back from the same path, and a gold workbook."""
    if not (INDEX / "test_nogdrive.json").is_file():
        return []
    cases = []
    for task_id in json.loads((INDEX / "test_nogdrive.json").read_text()).get("libreoffice_calc", []):
        task = json.loads((INDEX / "examples" / "libreoffice_calc" / f"{task_id}.json").read_text())
        evaluator = task["evaluator"]
        result, expected = evaluator.get("result") or {}, evaluator.get("expected") or {}
        if evaluator.get("func") != "compare_table" or expected.get("type") != "cloud_file" \
                or result.get("type") != "vm_file" or not str(expected.get("path", "")).endswith(".xlsx"):
            continue
        starts = [f for f in task_files(task) if f.where == "config" and f.path == result.get("path")]
        if starts and starts[0].path.endswith(".xlsx"):
            cases.append((task_id, starts[0].url, expected["path"], evaluator.get("options") or {}))
    return cases


CASES = _cases()


@pytest.mark.skipif(not CASES, reason="OSWorld's index is not in ../shared/osworld")
@pytest.mark.parametrize(("task_id", "start_url", "gold_url", "options"), CASES, ids=[c[0][:8] for c in CASES])
def test_a_do_nothing_start_file_scores_zero_against_the_gold_stand_in(
        oracle: Oracle, tmp_path: Path, task_id: str, start_url: str, gold_url: str, options: dict[str, Any]) -> None:
    start, gold = tmp_path / "start.xlsx", tmp_path / "gold.xlsx"
    start.write_bytes(standins.standin_bytes(start_url, "start.xlsx"))
    gold.write_bytes(standins.standin_bytes(gold_url, "gold.xlsx", gold=True))
    pending = oracle.submit("metrics.table", "compare_table", str(start), str(gold), **options)
    ours = compare_table(str(start), str(gold), **options)
    theirs = pending()
    assert theirs.ok, f"{task_id}: OSWorld raised {theirs.error}"
    assert same_value(ours, theirs.value) and ours == 0.0, f"{task_id}: ours {ours}, OSWorld {theirs.value}"


def test_cases_cover_the_calc_tasks_that_compare_with_a_gold_workbook() -> None:
    if (INDEX / "test_nogdrive.json").is_file():
        assert len(CASES) >= 30
