"""Unit tests of common/ schemas: OSWorld tasks (unknown fields kept), runs, events, status taxonomy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from common.events import EpisodeEvent, ParsedAction, StepEvent, decode_event, encode_event
from common.run import RunRequest, make_rollout_id, rq_job_id, trajectory_prefix
from common.settings import comma_list
from common.status import DETERMINISTIC_FAILURES, INFRA_FAILURES, REWARDED_STATUSES, RolloutStatus
from common.task import OSWorldTask, load_task_file, load_tasks

SHARED_TASKS = Path(__file__).resolve().parents[3] / "shared" / "osworld_tasks"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def test_every_real_osworld_task_loads_and_round_trips_unchanged() -> None:
    files = sorted(SHARED_TASKS.glob("*.json"))
    assert len(files) == 15
    for file in files:
        raw = json.loads(file.read_text())
        task = load_task_file(file)
        dumped = task.to_json_dict()
        for key, value in raw.items():  # unknown fields like `proxy`, `trajectory` are kept
            assert dumped[key] == value, (file.name, key)


def test_domain_falls_back_to_snapshot_then_related_apps() -> None:
    base = {"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"}}
    assert OSWorldTask.model_validate(base).effective_domain == "default"
    assert OSWorldTask.model_validate({**base, "related_apps": ["gimp"]}).effective_domain == "gimp"
    assert OSWorldTask.model_validate({**base, "snapshot": "os", "related_apps": ["gimp"]}).effective_domain == "os"
    assert OSWorldTask.model_validate({**base, "domain": "files", "snapshot": "os"}).effective_domain == "files"


def test_task_requires_id_instruction_evaluator() -> None:
    with pytest.raises(ValidationError) as info:
        OSWorldTask.model_validate({"id": "t"})
    fields = {e["loc"][0] for e in info.value.errors()}
    assert {"instruction", "evaluator"} <= fields


def test_task_id_with_illegal_characters_is_rejected() -> None:
    with pytest.raises(ValidationError, match="id"):
        OSWorldTask.model_validate({"id": "a/b", "instruction": "x", "evaluator": {"func": "infeasible"}})


def test_examples_load_with_domains_from_directories() -> None:
    tasks = load_tasks(EXAMPLES)
    assert len(tasks) >= 10
    assert len({t.effective_domain for t in tasks}) >= 2
    assert any(t.evaluator.func == "infeasible" for t in tasks)


def test_index_file_loading(tmp_path: Path) -> None:
    (tmp_path / "examples" / "os").mkdir(parents=True)
    src = SHARED_TASKS / "os__e0df059f-28a6-4169-924f-b9623e7184cc.json"
    (tmp_path / "examples" / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json").write_text(src.read_text())
    (tmp_path / "test_all.json").write_text(json.dumps({"os": ["e0df059f-28a6-4169-924f-b9623e7184cc"]}))
    tasks = load_tasks(tmp_path / "test_all.json")
    assert [t.id for t in tasks] == ["e0df059f-28a6-4169-924f-b9623e7184cc"]
    assert tasks[0].domain == "os"
    (tmp_path / "bad.json").write_text(json.dumps({"os": ["missing-id"]}))
    with pytest.raises(ValueError, match="missing-id"):
        load_tasks(tmp_path / "bad.json")


def _task(task_id: str = "t1") -> dict[str, object]:
    return {"id": task_id, "instruction": "do it", "evaluator": {"func": "infeasible"}}


def test_run_request_rejects_duplicate_task_ids_and_bad_fields() -> None:
    with pytest.raises(ValidationError, match="duplicate task id"):
        RunRequest.model_validate({"tasks": [_task(), _task()]})
    with pytest.raises(ValidationError, match="rollouts_per_task"):
        RunRequest.model_validate({"tasks": [_task()], "rollouts_per_task": 0})
    with pytest.raises(ValidationError, match="priority"):
        RunRequest.model_validate({"tasks": [_task()], "priority": "urgent"})
    with pytest.raises(ValidationError, match="run_id"):
        RunRequest.model_validate({"tasks": [_task()], "run_id": "a__b"})
    with pytest.raises(ValidationError, match="unknown_field"):
        RunRequest.model_validate({"tasks": [_task()], "unknown_field": 1})


def test_ids_are_deterministic_and_rq_legal() -> None:
    assert make_rollout_id("run-1", "t1", 3) == "run-1:t1:3"
    job_id = rq_job_id("run-1", "t1", 3)
    assert job_id == "run-1__t1__3"
    assert all(c.isalnum() or c in "_-" for c in job_id)
    assert trajectory_prefix("run-1", "t1", 3) == "run-1/t1_3"


def test_status_taxonomy() -> None:
    assert REWARDED_STATUSES == {RolloutStatus.COMPLETED, RolloutStatus.AGENT_FAIL, RolloutStatus.TRUNCATED,
                                 RolloutStatus.PARSE_ERROR}  # an unreadable reply ended the episode: scored
    assert INFRA_FAILURES == {RolloutStatus.MODEL_ERROR, RolloutStatus.ENV_ERROR, RolloutStatus.ENV_INIT_FAILED}
    assert not RolloutStatus.RUNNING.is_terminal and RolloutStatus.CANCELLED.is_terminal
    assert RolloutStatus.PARSE_ERROR.is_terminal and RolloutStatus.PARSE_ERROR.has_reward
    for status in DETERMINISTIC_FAILURES:  # never retried, no reward, not infrastructure
        assert status.is_terminal and not status.has_reward and not status.is_infra_failure
    assert DETERMINISTIC_FAILURES >= {RolloutStatus.UNSUPPORTED, RolloutStatus.SETUP_ERROR,
                                      RolloutStatus.RUNNER_ERROR}
    assert [s for s in RolloutStatus if s.is_bug] == [RolloutStatus.RUNNER_ERROR]


def test_events_round_trip_through_stream_fields() -> None:
    ref = {"run_id": "r", "task_id": "t", "rollout_index": 0, "rollout_id": "r:t:0", "attempt": 2}
    step = StepEvent(step=3, response="Action: wait()", token_ids=[1, 2], logprobs=[-0.1, -0.2],
                     actions=[ParsedAction(action_type="click", inputs={"x": 1}, code="pyautogui.click(1, 1)")], **ref)
    fields = encode_event(step, b"\x89PNG")
    decoded, png = decode_event(fields)
    assert isinstance(decoded, StepEvent) and decoded == step and png == b"\x89PNG"
    assert json.loads(fields[b"data"])["schema"] == "cua.step.v1"
    end = EpisodeEvent(phase="end", status=RolloutStatus.COMPLETED, reward=1.0, **ref)
    decoded_end, none = decode_event(encode_event(end))
    assert decoded_end == end and none is None
    with pytest.raises(ValueError, match="unknown type"):
        decode_event({b"type": b"bogus", b"data": b"{}"})
    with pytest.raises(ValueError):
        decode_event({b"type": b"step", b"data": b"not json"})


def test_comma_list_strips_items_and_drops_blanks() -> None:
    assert comma_list(" http://a:1 ,,http://b:2/ , ") == ["http://a:1", "http://b:2/"]
    assert comma_list("") == []
