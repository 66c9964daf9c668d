"""The task loader on OSWorld's whole benchmark (`../shared/osworld/`): every task of `test_all.json`
loads and round-trips unchanged; an invalid task is reported with its path and reason, never hiding
the others."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from common.task import InvalidTasks, load_task_set, load_tasks

OSWORLD = Path(__file__).resolve().parents[3] / "shared" / "osworld"


def test_the_whole_osworld_index_loads_and_round_trips() -> None:
    index = json.loads((OSWORLD / "test_all.json").read_text())
    tasks = load_tasks(OSWORLD / "test_all.json")
    assert len(tasks) == sum(len(ids) for ids in index.values()) == 369
    for task in tasks:
        raw = json.loads((OSWORLD / "examples" / task.effective_domain / f"{task.id}.json").read_text())
        dumped = task.to_json_dict()
        assert dumped.pop("domain") == task.effective_domain
        assert dumped == raw, task.id  # unknown fields (proxy, fixed_ip, hint, ...) kept, types as written


def test_source_may_be_a_list_of_urls() -> None:
    task = next(t for t in load_tasks(OSWORLD / "test_all.json") if t.id == "ea98c5d7-3cf9-4f9b-8ad3-366b58e0fcae")
    assert isinstance(task.source, list) and len(task.source) >= 1


def _index_with_one_bad_task(tmp_path: Path) -> Path:
    good = ["0ed39f63-6049-43d4-ba4d-5fa2fe04a951", "53ad5833-3455-407b-bbc6-45b4c79ab8fb"]
    (tmp_path / "examples" / "vs_code").mkdir(parents=True)
    for task_id in good:
        shutil.copy(OSWORLD / "examples" / "vs_code" / f"{task_id}.json", tmp_path / "examples" / "vs_code")
    bad = json.loads((OSWORLD / "examples" / "vs_code" / f"{good[0]}.json").read_text())
    bad["id"] = "bad-task"
    del bad["instruction"]
    (tmp_path / "examples" / "vs_code" / "bad-task.json").write_text(json.dumps(bad))
    index = tmp_path / "test_all.json"
    index.write_text(json.dumps({"vs_code": [good[0], "bad-task", "missing-task", good[1]]}))
    return index


def test_invalid_tasks_are_reported_with_path_and_reason(tmp_path: Path) -> None:
    index = _index_with_one_bad_task(tmp_path)
    with pytest.raises(InvalidTasks) as info:
        load_tasks(index)
    reasons = {item.path: item.reason for item in info.value.invalid}
    assert len(reasons) == 2
    bad_path = str(tmp_path / "examples" / "vs_code" / "bad-task.json")
    assert "instruction" in reasons[bad_path] and "Field required" in reasons[bad_path]
    assert "not found" in reasons["vs_code/missing-task"]
    assert "bad-task.json" in str(info.value) and "missing-task" in str(info.value)


def test_skip_invalid_keeps_the_valid_tasks_in_order(tmp_path: Path) -> None:
    index = _index_with_one_bad_task(tmp_path)
    tasks = load_tasks(index, skip_invalid=True)
    assert [t.id for t in tasks] == ["0ed39f63-6049-43d4-ba4d-5fa2fe04a951", "53ad5833-3455-407b-bbc6-45b4c79ab8fb"]
    loaded = load_task_set(index)
    assert len(loaded.tasks) == 2 and len(loaded.invalid) == 2


def test_nothing_valid_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(json.dumps({"id": "x", "instruction": "y"}))
    with pytest.raises(InvalidTasks, match="evaluator"):
        load_tasks(tmp_path / "t.json")
    with pytest.raises(ValueError, match="no valid task"):
        load_tasks(tmp_path / "t.json", skip_invalid=True)
