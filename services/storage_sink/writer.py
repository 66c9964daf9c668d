"""Writes events into the DART-style trajectory layout (SPEC section 7), idempotently.

Per trajectory `{run_id}/{task_id}_{rollout_index}/`: `task_config.json`, `attempt.json` (the newest
started attempt), `image_{step:04d}.png`, `step_{step:04d}.json`, `final_messages.json`, `reward.txt`
(only when the reward is not null), `manifest.json`. Keys are deterministic, so a redelivered event
rewrites the same bytes. Steps and end events of an attempt older than `attempt.json` are dropped, and
a newer attempt's start deletes the older attempt's steps: two attempts never mix. The manifest names
the attempt's `num_steps` step files. Callers serialise writes of one trajectory (the sink holds a
per-trajectory Redis lock), so the attempt check and the write cannot interleave across sinks.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from common.events import EpisodeEvent, StepEvent
from common.objectstore import ObjectStore
from common.run import trajectory_prefix

_STEP_FILE = re.compile(r"(?:step|image)_(\d{4,})\.(?:json|png)$")


def _json(data: Any) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True).encode()


class TrajectoryWriter:
    """Turns decoded events into objects of `store`."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def prefix(self, event: StepEvent | EpisodeEvent) -> str:
        """Object-store prefix of the event's trajectory (`{run_id}/{task_id}_{rollout_index}`)."""
        return trajectory_prefix(event.run_id, event.task_id, event.rollout_index)

    def current_attempt(self, prefix: str) -> int:
        """The newest started attempt recorded for a trajectory (0 when none)."""
        try:
            return int(json.loads(self.store.get(f"{prefix}/attempt.json"))["attempt"])
        except KeyError:
            return 0

    def write(self, event: StepEvent | EpisodeEvent, png: bytes | None) -> bool:
        """Persist one event; returns False when it was dropped as belonging to an older attempt."""
        prefix = self.prefix(event)
        if isinstance(event, StepEvent):
            return self._write_step(prefix, event, png)
        if event.phase == "start":
            return self._write_start(prefix, event)
        return self._write_end(prefix, event)

    def _write_step(self, prefix: str, event: StepEvent, png: bytes | None) -> bool:
        if event.attempt < self.current_attempt(prefix):
            return False
        if png is not None:
            self.store.put(f"{prefix}/image_{event.step:04d}.png", png, "image/png")
        self.store.put(f"{prefix}/step_{event.step:04d}.json", event.model_dump_json(by_alias=True, indent=2).encode(),
                       "application/json")
        return True

    def _write_start(self, prefix: str, event: EpisodeEvent) -> bool:
        current = self.current_attempt(prefix)
        if event.attempt < current:
            return False
        if event.attempt > current:
            self._drop_older_steps(prefix, event.attempt)
        self.store.put(f"{prefix}/attempt.json", _json({"attempt": event.attempt}), "application/json")
        if event.task_config is not None:
            self.store.put(f"{prefix}/task_config.json", _json(event.task_config), "application/json")
        return True

    def _drop_older_steps(self, prefix: str, attempt: int) -> None:
        for key in self.store.list(f"{prefix}/"):
            if not _STEP_FILE.search(key):
                continue
            if key.endswith(".json"):
                if json.loads(self.store.get(key)).get("attempt", 1) >= attempt:
                    continue
                self.store.delete(key.replace("/step_", "/image_").removesuffix(".json") + ".png")
                self.store.delete(key)
        for name in ("manifest.json", "reward.txt", "final_messages.json", "evaluation.json"):
            self.store.delete(f"{prefix}/{name}")

    def _write_evaluation(self, prefix: str, evaluation: dict[str, Any]) -> None:
        """`evaluation.json` and its files under `evidence/` (what the evaluation read, for rescoring).

        Raises: ValueError (a poison event) for a file name with a path in it or undecodable bytes."""
        for name, encoded in (evaluation.pop("files", None) or {}).items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"evaluation file name {name!r} is not a plain file name")
            self.store.put(f"{prefix}/evidence/{name}", base64.b64decode(encoded, validate=True),
                           "application/octet-stream")
        self.store.put(f"{prefix}/evaluation.json", _json(evaluation), "application/json")

    def _write_end(self, prefix: str, event: EpisodeEvent) -> bool:
        if event.attempt < self.current_attempt(prefix):
            return False
        self.store.put(f"{prefix}/final_messages.json", _json(event.final_messages or []), "application/json")
        if event.reward is not None:
            self.store.put(f"{prefix}/reward.txt", repr(float(event.reward)).encode(), "text/plain")
        if event.evaluation is not None:
            self._write_evaluation(prefix, dict(event.evaluation))
        # The attempt's steps by name (deterministic keys), not by listing: with several sinks the end
        # event may be written before its last steps, which land under these names when they arrive.
        steps = [f"step_{i:04d}.json" for i in range(event.num_steps)]
        manifest = {
            "schema": "cua.manifest.v1",
            "run_id": event.run_id,
            "task_id": event.task_id,
            "rollout_index": event.rollout_index,
            "rollout_id": event.rollout_id,
            "attempt": event.attempt,
            "status": event.status.value,
            "reward": event.reward,
            "num_steps": event.num_steps,
            "error": event.error,
            "domain": event.domain,
            "model": event.model,
            "sampling": event.sampling,
            "min_policy_version": event.min_policy_version,
            "max_policy_version": event.max_policy_version,
            "spanned_reload": event.spanned_reload,
            "env": {"id": event.env_id, "image": event.env_image},
            "timings": event.timings,
            "finished_at": event.timestamp,
            "steps": steps,
        }
        self.store.put(f"{prefix}/manifest.json", _json(manifest), "application/json")
        return True
