"""Versioned events on the Redis Stream (SPEC section 7): `cua.step.v1` and `cua.episode.v1`.

Stream entry fields: `type` (`step` | `episode`), `data` (JSON of one of these models), and for
steps either `png_key` (the object-store key the runner put the screenshot the step acted on under,
`common.blobs`: `_blobs/{sha256}.png`) or, from a runner without a store, `png` (the PNG bytes). A step
whose record is large (token ids and logprobs) may also carry `record_key`: the blob holding the whole
record's JSON (`_blobs/{sha256}.json`), while `data` holds the record without its token arrays
(`without_token_arrays`); the stored step file is the blob's bytes.
A step may also carry any number of `blob:<name>` fields: images a gateway session's request carried, by
content (`blob_name`: `blob_<sha256 hex>.<ext>`); the step's `request_messages` refer to them by that name
and the sink stores each once per trajectory.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from common.blob_keys import check_blob_key
from common.ids import RUN_ID_MAX, RUN_ID_PATTERN, TASK_ID_MAX, TASK_ID_PATTERN
from common.status import RolloutStatus


class ParsedAction(BaseModel):
    """One action parsed from an agent's reply, and the pyautogui code generated for it.

    `action_type` is the agent's own verb (UI-TARS `click`, `type`, ...; OSWorld's `pyautogui` code
    or a `computer_13` type such as `CLICK`; Qwen's `left_click`, ...) or `DONE`/`FAIL`/`WAIT`;
    `inputs` holds its arguments with coordinates already mapped to screen pixels.
    """

    action_type: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    code: str = ""


class ExecResult(BaseModel):
    """Result of running a step's code in the env (OSWorld `/execute` reply)."""

    returncode: int = 0
    output: str = ""
    error: str = ""


class StepTimings(BaseModel):
    """The one timing record of a step (ms): the model call (re-samples included), the env (`env_ms` =
    `action_ms` (`/execute`) + `screenshot_ms` (screenshot and accessibility tree)), waiting for the screen
    to settle after the actions (`settle_ms`, see `services/runner/settle.py`; 0 when nothing ran) and the
    whole step up to publishing its event (`step_ms`). `settle_capped` is true when the screen was still
    changing at the cap. The runner's attempt timings sum these (`services/runner/timings.py`)."""

    model_ms: float = 0.0
    env_ms: float = 0.0
    action_ms: float = 0.0
    screenshot_ms: float = 0.0
    settle_ms: float = 0.0
    settle_capped: bool = False
    step_ms: float = 0.0
    first_screen_ms: float = 0.0
    first_screen_cause: str | None = None


class Usage(BaseModel):
    """Token counts as reported by the model server."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class RolloutRef(BaseModel):
    """Identifies a rollout and the attempt (1-based RQ try) an event belongs to. `run_id` and
    `task_id` have the shapes of `common.ids` (they become object-store key segments)."""

    run_id: str = Field(max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)
    task_id: str = Field(max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)
    rollout_index: int = Field(ge=0)
    rollout_id: str
    attempt: int = 1


class DiscardedReply(BaseModel):
    """A reply of the step that the agent could not parse and that was sampled again: its text, why it
    was rejected (`error`), the temperature it was sampled at, its model time (ms), usage, token ids and
    logprobs (when the server gave them), and the version and replica that answered."""

    response: str
    error: str
    temperature: float | None = None
    model_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    model_version: str | None = None
    replica: str | None = None


class StepEvent(RolloutRef):
    """`cua.step.v1`: one step of a trajectory. `step` is 0-based; the PNG rides beside the JSON.

    Added compatibly within v1 (absent in older records; readers that do not know them ignore them):
    `discarded`, the unparseable replies of this step that were sampled again, oldest first; and
    `parse_error`, set when no sample of the step parsed: `response` is then the last one, and the
    step's actions are the agent's answer to it (`Agent.unparseable`): none (the episode goes on) or
    `DONE` (UI-TARS: the episode ends, status `parse_error`), never a `FAIL` (docs/scoring.md).
    `windows`, on step 0: the windows the task's setup opened, as on its screenshot (the env's
    `/windows` entries, geometry in pixels; None when the env cannot list them or nothing waited).
    """

    schema_name: Literal["cua.step.v1"] = Field(default="cua.step.v1", alias="schema")
    step: int = Field(ge=0)
    timestamp: float = Field(default_factory=time.time)
    policy_version: str | None = None
    model_version: str | None = None
    replica: str | None = None
    response: str = ""
    thought: str = ""
    actions: list[ParsedAction] = Field(default_factory=list)
    execution: ExecResult = Field(default_factory=ExecResult)
    timings: StepTimings = Field(default_factory=StepTimings)
    usage: Usage = Field(default_factory=Usage)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None
    discarded: list[DiscardedReply] = Field(default_factory=list)
    parse_error: str | None = None
    windows: list[dict[str, Any]] | None = None
    #: A call of a gateway session (services/model_gateway/sessions.py): its session id, the request's chat
    #: messages with every inline image replaced by a reference to a blob (`image_ref` parts, `blob_name`),
    #: and its other request fields (model, sampling); `step` is then the call's 0-based index in the session.
    session_id: str | None = None
    request_messages: list[dict[str, Any]] | None = None
    request_params: dict[str, Any] = Field(default_factory=dict)

    model_config = {"populate_by_name": True}


class EpisodeEvent(RolloutRef):
    """`cua.episode.v1`: emitted at episode start (`phase="start"`) and end (`phase="end"`).

    The end event carries the terminal status, reward (float only for rewarded statuses), number of
    steps, error text, timings (ms), env id/image, sampling params, policy version range, the task
    config, and the final chat messages (images referenced by file name `image_XXXX.png`).
    """

    schema_name: Literal["cua.episode.v1"] = Field(default="cua.episode.v1", alias="schema")
    phase: Literal["start", "end"]
    timestamp: float = Field(default_factory=time.time)
    status: RolloutStatus = RolloutStatus.RUNNING
    reward: float | None = None
    num_steps: int = 0
    error: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    env_id: str | None = None
    env_image: str | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    agent: str | None = None  # the run's agent and its options (absent in records before agents were pluggable)
    agent_options: dict[str, Any] = Field(default_factory=dict)
    min_policy_version: str | None = None
    max_policy_version: str | None = None
    spanned_reload: bool = False  # steps of this episode were answered by more than one model version
    domain: str | None = None
    task_config: dict[str, Any] | None = None
    final_messages: list[dict[str, Any]] | None = None
    #: End of a scored episode: what its evaluation read, a `cua.evaluation.v1` document
    #: (services/runner/osworld/evidence.py) whose `files` maps name -> base64 bytes; for rescoring.
    evaluation: dict[str, Any] | None = None
    #: End event: setup (`config`) and `postconfig` commands that exited non-zero, in order: `{"phase", "step"
    #: (1-based), "command", "returncode", "error" (its last 500 characters)}`. OSWorld goes on after them.
    setup_log: list[dict[str, Any]] = Field(default_factory=list)

    model_config = {"populate_by_name": True}


BLOB_FIELD_PREFIX = b"blob:"
_BLOB_NAME = re.compile(r"^blob_([0-9a-f]{64})\.([a-z0-9]{1,8})$")


def blob_name(data: bytes, extension: str) -> str:
    """The content-addressed file name of `data`: `blob_<sha256 hex of data>.<extension>` (e.g. `png`)."""
    return f"blob_{hashlib.sha256(data).hexdigest()}.{extension}"


def check_blob(name: str, data: bytes) -> None:
    """Raises: ValueError when `name` is not a `blob_name` or not the name of `data` (its SHA-256 differs)."""
    match = _BLOB_NAME.match(name)
    if match is None:
        raise ValueError(f"blob name {name!r} is not blob_<sha256 hex>.<extension>")
    if hashlib.sha256(data).hexdigest() != match.group(1):
        raise ValueError(f"blob {name!r}: its {len(data)} bytes have another SHA-256")


def blobs_of(fields: Mapping[bytes, bytes]) -> dict[str, bytes]:
    """The `blob:<name>` fields of a stream entry, by name (not checked: `decode_event` checks them)."""
    return {key[len(BLOB_FIELD_PREFIX):].decode(): value for key, value in fields.items()
            if key.startswith(BLOB_FIELD_PREFIX)}


def encode_event(event: StepEvent | EpisodeEvent, png: bytes | None = None, png_key: str | None = None,
                 record_key: str | None = None, blobs: Mapping[str, bytes] | None = None) -> dict[bytes, bytes]:
    """Stream entry fields for an event: `{type, data[, png][, png_key][, record_key][, blob:<name>...]}` as
    bytes (give a step's screenshot as its blob key, `png_key`, or as bytes, `png`; with `record_key`, `event`
    is the record without its token arrays and the blob holds the whole one; `blobs` maps `blob_name`s to
    their bytes, steps only)."""
    kind = "step" if isinstance(event, StepEvent) else "episode"
    fields = {b"type": kind.encode(), b"data": event.model_dump_json(by_alias=True).encode()}
    if png is not None:
        fields[b"png"] = png
    for name, data in (blobs or {}).items():
        fields[BLOB_FIELD_PREFIX + name.encode()] = data
    if png_key is not None:
        fields[b"png_key"] = png_key.encode()
    if record_key is not None:
        fields[b"record_key"] = record_key.encode()
    return fields


def without_token_arrays(event: StepEvent) -> StepEvent:
    """`event` without its bulky arrays (token ids, logprobs, prompt token ids; those of its discarded replies
    too): what a step's stream entry carries when the whole record went to the store (`record_key`)."""
    discarded = [d.model_copy(update={"token_ids": None, "logprobs": None}) for d in event.discarded]
    return event.model_copy(update={"token_ids": None, "logprobs": None, "prompt_token_ids": None,
                                    "discarded": discarded})


def _blob_field(fields: dict[bytes, bytes], name: bytes) -> str | None:
    raw = fields.get(name)
    if raw is None:
        return None
    try:
        return check_blob_key(raw.decode())
    except UnicodeDecodeError as exc:
        raise ValueError(f"stream entry's {name.decode()} is not text: {exc}") from exc


def png_key_of(fields: dict[bytes, bytes]) -> str | None:
    """The entry's screenshot blob key (`png_key`), or None. Raises: ValueError when it is not a blob key
    (`common.blob_keys.check_blob_key`: a poison entry)."""
    return _blob_field(fields, b"png_key")


def record_key_of(fields: dict[bytes, bytes]) -> str | None:
    """The entry's whole-record blob key (`record_key`), or None. Raises: ValueError as `png_key_of`."""
    return _blob_field(fields, b"record_key")


def decode_event(fields: dict[bytes, bytes]) -> tuple[StepEvent | EpisodeEvent, bytes | None]:
    """Parse stream entry fields back into an event and its PNG (or None).

    Raises: ValueError when `type` is unknown, `data` does not validate or a `blob:` field is not named by
    its content's hash (a poison entry).
    """
    for name, blob in blobs_of(fields).items():
        check_blob(name, blob)
    kind = fields.get(b"type", b"").decode()
    data = fields.get(b"data")
    if data is None:
        raise ValueError("stream entry has no 'data' field")
    if kind == "step":
        return StepEvent.model_validate_json(data), fields.get(b"png")
    if kind == "episode":
        return EpisodeEvent.model_validate_json(data), None
    raise ValueError(f"stream entry has unknown type {kind!r}")
