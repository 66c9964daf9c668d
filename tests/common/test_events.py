"""`cua.step.v1` stays readable both ways after gaining `discarded` and `parse_error`: records written
before load with the new fields empty, and a reader built without them still reads new records."""

from __future__ import annotations

from typing import Any

from pydantic import create_model

from common.events import DiscardedReply, StepEvent, decode_event, encode_event

REF = {"run_id": "r1", "task_id": "t1", "rollout_index": 0, "rollout_id": "r1:t1:0"}


def test_a_record_written_before_the_fields_reads_with_them_empty() -> None:
    old = '{"schema": "cua.step.v1", "run_id": "r1", "task_id": "t1", "rollout_index": 0, "rollout_id": "r1:t1:0", ' \
          '"step": 3, "response": "Action: wait()"}'
    event = StepEvent.model_validate_json(old)
    assert (event.discarded, event.parse_error, event.step) == ([], None, 3)


def test_a_reader_without_the_fields_reads_new_records() -> None:
    new = StepEvent(step=0, response="no tool call", parse_error="reply has no <tool_call>",
                    discarded=[DiscardedReply(response="no tool call", error="reply has no <tool_call>",
                                              temperature=0.0, token_ids=[1, 2])], **REF)
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in StepEvent.model_fields.items()
                              if name not in ("discarded", "parse_error")}
    OldStepEvent = create_model("OldStepEvent", __config__=StepEvent.model_config, **fields)  # noqa: N806
    old = OldStepEvent.model_validate_json(new.model_dump_json(by_alias=True))
    assert old.response == "no tool call" and not hasattr(old, "discarded")
    decoded, _ = decode_event(encode_event(new))  # type: ignore[arg-type]
    assert isinstance(decoded, StepEvent) and decoded.discarded[0].temperature == 0.0
