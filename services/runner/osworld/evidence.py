"""What an evaluation read, kept so it can be scored again without re-running the episode.

Every metric call of `evaluate()` receives getter states: host file paths (`vm_file`, `cloud_file`,
...), command outputs, rule values, accessibility trees. `Evidence` records them per metric call as
JSON, with each file the evaluation produced under the rollout's work dir copied in (`{"$file": "<name>"}`
in place of the path), so `replay_states()` can rebuild equivalent states in another directory later
(`cua-rollout rescore`). Only those files: any other path a state names (a task's rule value
`/proc/self/environ`) stays a string and its file is never read here (issue 34: the stored trajectory,
which the submitter downloads, never holds a runner file; `evaluate()` refuses such a state anyway).

Format (`evaluation.json` beside a stored trajectory, schema `cua.evaluation.v1`):
`{"schema", "last_action", "calls": [{"metric", "result": <state>, "expected": <state> | absent}]}`;
file contents travel beside it (`evidence/<name>`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.object_keys import MAX_SEGMENT_LENGTH, key_segment
from services.runner.osworld.hostpaths import within

SCHEMA = "cua.evaluation.v1"
#: Files larger than this are not kept (their state is recorded as `{"$file_too_large": path}`), bytes.
MAX_FILE_BYTES = 64 * 1024 * 1024
_MISSING = object()


class EvidenceError(ValueError):
    """Stored evidence cannot be replayed (wrong schema, a missing file, fewer calls than metrics)."""


@dataclass
class Evidence:
    """Recorder of one evaluation's metric inputs (see module docstring). `files`: name -> bytes."""

    last_action: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    def record(self, metric: str, result: Any, expected: Any = _MISSING, roots: Sequence[Path] = ()) -> None:
        """Record one metric call's states; files they name inside `roots` (the rollout's work dir, symlinks
        resolved) are read now (they may be temporary); other paths stay strings."""
        call: dict[str, Any] = {"metric": metric, "result": self._encode(result, roots)}
        if expected is not _MISSING:
            call["expected"] = self._encode(expected, roots)
        self.calls.append(call)

    def _encode(self, state: Any, roots: Sequence[Path]) -> Any:
        if isinstance(state, str) and state.startswith("/") and roots and within(Path(state), roots) \
                and Path(state).is_file():
            path = Path(state)
            if path.stat().st_size > MAX_FILE_BYTES:
                return {"$file_too_large": state}
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()[:16]
            # Stored as `evidence/<name>`: a task's file names ("Ch4 Video Effect.pptx") are no key segment.
            name = f"{digest}_{key_segment(path.name, MAX_SEGMENT_LENGTH - len(digest) - 1)}"
            self.files[name] = data
            return {"$file": name}
        if isinstance(state, list | tuple):
            return [self._encode(item, roots) for item in state]
        if isinstance(state, dict):
            if any(not isinstance(k, str) for k in state):
                return {"$pairs": [[self._encode(k, roots), self._encode(v, roots)] for k, v in state.items()]}
            return {"$dict": {k: self._encode(v, roots) for k, v in state.items()}}
        if state is None or isinstance(state, bool | int | float | str):
            return state
        return {"$repr": repr(state)}

    def to_json(self) -> dict[str, Any]:
        """The `evaluation.json` document."""
        return {"schema": SCHEMA, "last_action": self.last_action, "calls": self.calls}


def _decode(value: Any, files_dir: Path) -> Any:
    if isinstance(value, list):
        return [_decode(item, files_dir) for item in value]
    if isinstance(value, dict):
        if "$file" in value:
            path = files_dir / str(value["$file"])
            if not path.is_file():
                raise EvidenceError(f"evidence file {value['$file']} is missing from {files_dir}")
            return str(path)
        if "$dict" in value:
            return {k: _decode(v, files_dir) for k, v in value["$dict"].items()}
        if "$pairs" in value:
            return {_decode(k, files_dir): _decode(v, files_dir) for k, v in value["$pairs"]}
        raise EvidenceError(f"evidence state {sorted(value)[:3]} cannot be replayed (not JSON data)")
    return value


@dataclass
class Replay:
    """Stored metric inputs handed back in call order instead of running getters (see `evaluate`)."""

    calls: list[dict[str, Any]]
    files_dir: Path
    position: int = 0

    def next_states(self, metric: str) -> tuple[Any, Any]:
        """(result state, expected state or `_MISSING`) of the next recorded call of `metric`.

        Raises: EvidenceError when the calls run out or name another metric (the task's evaluator
        changed since the evidence was taken)."""
        if self.position >= len(self.calls):
            raise EvidenceError(f"no recorded inputs for metric {metric!r} (call {self.position + 1})")
        call = self.calls[self.position]
        self.position += 1
        if call.get("metric") != metric:
            raise EvidenceError(f"recorded call {self.position} is metric {call.get('metric')!r}, not {metric!r}")
        expected = _decode(call["expected"], self.files_dir) if "expected" in call else _MISSING
        return _decode(call["result"], self.files_dir), expected


def load_replay(document: dict[str, Any], files_dir: Path) -> tuple[Replay, str | None]:
    """A `Replay` of an `evaluation.json` document whose files are in `files_dir`, and its last action.

    Raises: EvidenceError for another schema."""
    if document.get("schema") != SCHEMA:
        raise EvidenceError(f"evaluation evidence has schema {document.get('schema')!r}, expected {SCHEMA!r}")
    return Replay(calls=list(document.get("calls", [])), files_dir=files_dir), document.get("last_action")


def has_expected(state: Any) -> bool:
    """Whether a replayed expected state was recorded (the metric was called with two states)."""
    return state is not _MISSING
