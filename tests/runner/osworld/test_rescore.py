"""Evaluation evidence and rescoring: what a metric read is recorded (files copied in) and replayed
into the current metric code without an env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.object_keys import check_key
from services.runner.osworld.errors import EvalError
from services.runner.osworld.evidence import Evidence, EvidenceError, load_replay
from services.runner.osworld.rescore import rescore_states

TASK = {"id": "t", "instruction": "list the files",
        "evaluator": {"func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "ls"},
                      "expected": {"type": "rule", "rules": {"include": ["a.txt"], "exclude": ["missing"]}}}}


def _stored(evidence: Evidence, directory: Path) -> dict[str, object]:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in evidence.files.items():
        (directory / name).write_bytes(data)
    return json.loads(json.dumps(evidence.to_json()))  # as it comes back from the store


def test_file_states_are_copied_in_and_replayed_from_another_directory(tmp_path: Path) -> None:
    source = tmp_path / "work" / "report.xlsx"
    source.parent.mkdir()
    source.write_bytes(b"PK\x03\x04 workbook bytes")
    evidence = Evidence(last_action="DONE")
    outside = tmp_path / "runner.env"  # a runner file a state names: stays a string, never read in
    outside.write_bytes(b"SECRET=1")
    evidence.record("compare_table", str(source), [str(source), {"rules": [1, 2]}, str(outside)],
                    roots=[tmp_path / "work"])
    source.unlink()  # the evaluation's temporary files are gone by the time anyone rescores
    document = _stored(evidence, tmp_path / "stored")
    replay, last_action = load_replay(document, tmp_path / "stored")
    result, expected = replay.next_states("compare_table")
    assert last_action == "DONE"
    assert Path(result).read_bytes() == b"PK\x03\x04 workbook bytes" and Path(result).parent == tmp_path / "stored"
    assert expected == [result, {"rules": [1, 2]}, str(outside)]
    assert len(evidence.files) == 1 and b"SECRET" not in b"".join(evidence.files.values())
    with pytest.raises(EvidenceError, match="no recorded inputs"):
        replay.next_states("compare_table")


@pytest.mark.parametrize("file_name", ["Ch4 Video Effect.pptx", "Order_Sales_Serial#.xlsx", "résumé.docx",
                                       ".hidden.txt", "x" * 250 + ".xlsx"])
def test_evidence_names_are_object_keys_whatever_the_tasks_file_is_called(tmp_path: Path, file_name: str) -> None:
    """OSWorld's files have spaces, `#`, accents in their names: the evidence stored under `evidence/<name>` must
    still be a valid object key, or the sink dead-letters the whole end event (the trajectory's manifest)."""
    source = tmp_path / "work" / file_name
    source.parent.mkdir()
    source.write_bytes(b"bytes of " + file_name.encode())
    evidence = Evidence(last_action="DONE")
    evidence.record("compare_pptx_files", str(source), roots=[tmp_path / "work"])
    (name,) = evidence.files
    check_key(f"run-1/t_0/evidence/{name}")
    assert name.endswith(Path(file_name).suffix)
    replay, _ = load_replay(_stored(evidence, tmp_path / "stored"), tmp_path / "stored")
    (result, _expected) = replay.next_states("compare_pptx_files")
    assert Path(result).read_bytes() == source.read_bytes()


def test_rescoring_runs_the_current_metric_on_the_recorded_states(tmp_path: Path) -> None:
    evidence = Evidence(last_action="DONE")
    evidence.record("check_include_exclude", "a.txt\nb.txt\n", {"include": ["a.txt"], "exclude": ["missing"]})
    assert rescore_states(TASK, _stored(evidence, tmp_path), tmp_path) == 1.0
    changed = {**TASK, "evaluator": {**TASK["evaluator"], "func": "exact_match"}}  # type: ignore[dict-item]
    with pytest.raises(EvalError, match="recorded call 1 is metric 'check_include_exclude', not 'exact_match'"):
        rescore_states(changed, _stored(evidence, tmp_path), tmp_path)


def test_rescoring_keeps_the_agents_last_action_rules(tmp_path: Path) -> None:
    failed = Evidence(last_action="FAIL")  # a FAIL scores 0 before any metric runs
    assert rescore_states(TASK, _stored(failed, tmp_path), tmp_path) == 0.0
    infeasible = {**TASK, "evaluator": {"func": "infeasible"}}
    assert rescore_states(infeasible, _stored(failed, tmp_path), tmp_path) == 1.0
    with pytest.raises(EvalError, match="schema"):
        rescore_states(TASK, {"schema": "other"}, tmp_path)
