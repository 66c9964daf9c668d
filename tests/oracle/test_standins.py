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
from services.runner.osworld.metrics.docs import compare_references
from services.runner.osworld.metrics.general.files import check_csv
from services.runner.osworld.metrics.table import compare_table
from services.runner.osworld.metrics.vlc import compare_images
from tests.cli.standin_profiles import decrypt, extract_profile, forget_login
from tests.oracle.client import Oracle, same_value
from tests.oracle.office_support import agree

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


def test_references_and_images_of_stand_ins_score_zero_with_osworlds_checkers(oracle: Oracle, tmp_path: Path) -> None:
    """multi_apps/2c1ebcd7 (compare_references: 1.0 when neither document has a references section) and
    multi_apps/c2751594, vlc/efcf0d81 (compare_images, SSIM above a base: the env's wallpaper left as it was)."""
    from services.desktop_env.ubuntu_defaults import wallpaper_png

    start, gold = tmp_path / "case study.docx", tmp_path / "case study gold.docx"
    start.write_bytes(standins.standin_bytes("https://x.test/case%20study.docx", start.name))
    gold.write_bytes(standins.standin_bytes("https://x.test/case%20study%20gold.docx", gold.name, gold=True))
    assert agree(oracle, "metrics.docs", compare_references, str(start), str(gold), stubs=("easyocr",),
                 content_only=True, reference_base_result=0.93) == 0
    wallpaper, picture = tmp_path / "background.png", tmp_path / "gold_background.png"
    wallpaper.write_bytes(wallpaper_png())
    picture.write_bytes(standins.standin_bytes("https://x.test/background.png", picture.name, gold=True))
    for base in (0.54, None):
        options = {} if base is None else {"reference_base_result": base}
        assert agree(oracle, "metrics.vlc", compare_images, str(wallpaper), str(picture), stubs=("acoustid",),
                     **options) < 0.1


def test_thunderbird_account_removal_scores_0_untouched_and_1_once_the_login_is_gone(
        oracle: Oracle, tmp_path: Path) -> None:
    """thunderbird/dfac9ee8 ("remove the account anonym-x2024@outlook.com"): OSWorld's `check_csv` with its
    `unexpect` rule, on the CSV the stand-in firefox_decrypt prints for the stand-in profile: 0 as set up
    (a do-nothing agent), 1 once the account's login is gone (as Thunderbird removes it with the account)."""
    task = json.loads((INDEX / "examples" / "thunderbird" / "dfac9ee8-9bc4-4cdc-b465-4a4bfcd2f397.json").read_text())
    rules = task["evaluator"]["expected"]["rules"]
    profile = extract_profile(tmp_path / "home")
    scores = []
    for label in ("untouched", "removed"):
        if label == "removed":
            forget_login(profile, "imap://outlook.office365.com")
        result = decrypt(tmp_path / "home", tmp_path)
        assert result.returncode == 0, result.stderr
        listing = tmp_path / f"thunderbird-accounts-{label}.csv"
        listing.write_text(result.stdout)
        scores.append(agree(oracle, "metrics.general", check_csv, str(listing), rules=rules))
    assert scores == [0, 1]
