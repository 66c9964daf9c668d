"""Writes events into the DART-style trajectory layout (SPEC section 7), idempotently.

Per trajectory `{run_id}/{task_id}_{rollout_index}/`: `task_config.json`, `attempt.json` (the newest
started attempt), `image_{step:04d}.png` (copied inside the store from the blob the runner put, `common.blobs`,
or written from the bytes of an entry that carried them), `step_{step:04d}.json`, `final_messages.json`, `reward.txt`
(only when the reward is not null), `manifest.json`. Keys are deterministic, so a redelivered event
rewrites the same bytes. Steps and end events of an attempt older than `attempt.json` are dropped, and
a newer attempt's start deletes the older attempt's steps: two attempts never mix. That start is believed only
when the runners' own count of the rollout's attempts (`common.attempts`, in Redis, which only runners
increment) has reached it: a start event alone (a gateway session names its rollout and attempt) never deletes
anything; an unconfirmed one raises `UnconfirmedAttempt` (dead-lettered, nothing written or deleted). The manifest names
the attempt's `num_steps` step files. Callers serialise writes of one trajectory (the sink holds a
per-trajectory Redis lock), so the attempt check and the write cannot interleave across sinks.

Nothing here lists more than the trajectory's own `step_` files, and only when a retried attempt
(attempt > 1) starts: an episode's start and end cost O(1) in the store's size.

The writer builds the pieces (`step_puts`, `write_start`, `end_puts`); the sink's batches run them,
the puts of several steps in parallel (services/storage_sink/batch.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.blob_keys import blob_digest, check_blob_key
from common.events import EpisodeEvent, StepEvent
from common.objectstore import LocalDirStore, ObjectStore
from common.run import trajectory_prefix

#: Files of a finished attempt, deleted when a newer attempt starts.
_FINAL_FILES = ("manifest.json", "reward.txt", "final_messages.json", "evaluation.json")


def _media_type(name: str) -> str:
    """Content type of a blob by its extension (`image/<ext>`; `jpg` is `image/jpeg`)."""
    extension = name.rsplit(".", 1)[-1]
    return "image/jpeg" if extension == "jpg" else f"image/{extension}"


def _json(data: Any) -> bytes:
    return json.dumps(data, indent=2, sort_keys=True).encode()


@dataclass(frozen=True)
class Put:
    """One object to write: `key`, its bytes, its content type."""

    key: str
    data: bytes
    content_type: str

    def run(self, store: ObjectStore) -> None:
        """`store.put` this object. Raises: whatever the store raises."""
        store.put(self.key, self.data, self.content_type)


class UnconfirmedAttempt(ValueError):
    """A start event names a newer attempt than the runners have counted for its rollout: it is not believed
    (its older attempt's data is kept); the message names the rollout and both numbers."""


class MissingBlob(LookupError):
    """A step file's blob is not in the store (never put, or deleted): the entry cannot be written."""


class CorruptBlob(ValueError):
    """A blob's bytes do not hash to the sha256 its key names (overwritten by another holder of the runners'
    put-only key, or damaged): they never enter a trajectory; the entry fails (retried, then dead-lettered)."""


@dataclass(frozen=True)
class Copy:
    """One object to write from a blob the runner put (`common.blobs`): `key` gets the bytes of `source`.

    The runners' credential can put any `_blobs/*` key (issue 34, point 4), so the sink never trusts a blob's
    name: it reads the bytes, checks their SHA-256 (FIPS 180-4) against the key's 64 hex digits
    (`common.blob_keys.blob_digest`), and puts the checked bytes (not a store-side copy, which could copy
    bytes replaced after the check; a local directory links the very file it checked)."""

    key: str
    source: str

    def run(self, store: ObjectStore) -> None:
        """Get the blob, verify it, put it at `key` (a local directory store links the verified file instead,
        `LocalDirStore.copy_checked`). Raises: MissingBlob or CorruptBlob naming both keys; whatever else the
        store raises."""
        try:
            if isinstance(store, LocalDirStore):
                store.copy_checked(self.source, self.key, self._verify)
                return
            data = store.get(self.source)
        except KeyError as exc:
            raise MissingBlob(f"blob {self.source} of {self.key} is not in the store") from exc
        self._verify(data)
        store.put(self.key, data, _content_type(self.key))

    def _verify(self, data: bytes) -> None:
        """Raises: CorruptBlob when `data` does not hash to the digest `source` names."""
        digest = hashlib.sha256(data).hexdigest()
        if digest != blob_digest(self.source):
            raise CorruptBlob(f"blob {self.source} of {self.key} holds {len(data)} bytes whose sha256 is {digest}: "
                              "its content does not match its name, so it is not copied into the trajectory")


def _content_type(key: str) -> str:
    """Content type of a trajectory file written from a blob, by its extension."""
    if key.endswith(".json"):
        return "application/json"
    if key.endswith((".png", ".jpg", ".jpeg", ".webp", ".gif")):
        return _media_type(key)
    return "application/octet-stream"


Write = Put | Copy


class TrajectoryWriter:
    """Turns decoded events into objects of `store`."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def prefix(self, event: StepEvent | EpisodeEvent) -> str:
        """Object-store prefix of the event's trajectory (`{run_id}/{task_id}_{rollout_index}`).
        Raises: ValueError for ids that cannot be key segments."""
        return trajectory_prefix(event.run_id, event.task_id, event.rollout_index)

    def current_attempt(self, prefix: str) -> int:
        """The newest started attempt recorded for a trajectory (0 when none): one `get`."""
        try:
            return int(json.loads(self.store.get(f"{prefix}/attempt.json"))["attempt"])
        except KeyError:
            return 0

    def step_puts(self, prefix: str, event: StepEvent, png: bytes | None, data: bytes | None = None,
                  png_key: str | None = None, record_key: str | None = None,
                  blobs: Mapping[str, bytes] | None = None) -> list[Write]:
        """The objects of a step (its PNG when it has one: copied from its blob `png_key`, or put from `png`;
        its session images; its JSON: copied from the whole record's blob `record_key` when the entry carried
        the record without its token arrays, else put from `data`); independent of each other.

        `blobs`: the entry's content-addressed images (`common.events.blob_name`, checked when the entry was
        decoded), stored as `{prefix}/<name>`: a session re-sends its earlier screenshots in every call, and
        each is stored once (a redelivery or a second sender rewrites the same bytes under the same key).

        `data`: the event's JSON as the runner published it (`common.events.encode_event`, which `event` was
        validated from): stored as it is, compact, instead of encoding `event` again (a step's token ids made the
        sink's re-encoding with indentation ~5 % of its Python time and its files ~1.7x larger)."""
        image = f"{prefix}/image_{event.step:04d}.png"
        puts: list[Write] = [Copy(image, png_key)] if png_key is not None else \
            [Put(image, png, "image/png")] if png is not None else []
        puts += [Put(f"{prefix}/{name}", blob, _media_type(name)) for name, blob in (blobs or {}).items()]
        step_file = f"{prefix}/step_{event.step:04d}.json"
        if record_key is not None:
            puts.append(Copy(step_file, record_key))
            return puts
        body = data if data is not None else event.model_dump_json(by_alias=True).encode()
        puts.append(Put(step_file, body, "application/json"))
        return puts

    def write_start(self, prefix: str, event: EpisodeEvent, current: int, counted: int = 0) -> bool:
        """Record a started attempt (`current` is the trajectory's recorded one); a newer attempt first
        deletes the older attempt's steps and final files, when `counted` (the runners' count of the rollout's
        attempts, `common.attempts.current`) confirms it. False when `event` is older than `current`.
        Raises: UnconfirmedAttempt for a newer attempt > 1 that `counted` does not reach (nothing written)."""
        if event.attempt < current:
            return False
        if event.attempt > current and event.attempt > 1:  # attempts are 1-based: none older than 1 exists
            if counted < event.attempt:
                raise UnconfirmedAttempt(
                    f"start of attempt {event.attempt} of rollout {event.rollout_id!r} ({prefix}) refused: the "
                    f"runners counted {counted} attempt(s) of it, so its attempt {current}'s data is kept")
            self._drop_older_steps(prefix, event.attempt)
        self.store.put(f"{prefix}/attempt.json", _json({"attempt": event.attempt}), "application/json")
        if event.task_config is not None:
            self.store.put(f"{prefix}/task_config.json", _json(event.task_config), "application/json")
        return True

    def _drop_older_steps(self, prefix: str, attempt: int) -> None:
        """Delete the steps (JSON and PNG) of attempts older than `attempt`, listing only `{prefix}/step_`."""
        for key in self.store.list(f"{prefix}/step_"):
            if not key.endswith(".json"):
                continue
            if json.loads(self.store.get(key)).get("attempt", 1) >= attempt:
                continue
            self.store.delete(key.replace("/step_", "/image_").removesuffix(".json") + ".png")
            self.store.delete(key)
        for name in _FINAL_FILES:
            self.store.delete(f"{prefix}/{name}")

    def _evaluation_puts(self, prefix: str, evaluation: dict[str, Any]) -> list[Write]:
        """`evaluation.json` and its files under `evidence/` (what the evaluation read, for rescoring): inline
        (`files`: name -> base64) or put by the runner (`file_keys`: name -> blob key, copied).

        Raises: ValueError (a poison event) for a file name with a path in it, undecodable bytes or a bad key."""
        puts: list[Write] = []
        inline = evaluation.pop("files", None) or {}
        stored = evaluation.pop("file_keys", None) or {}
        for name in [*inline, *stored]:
            if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
                raise ValueError(f"evaluation file name {name!r} is not a plain file name")
        for name, encoded in inline.items():
            puts.append(Put(f"{prefix}/evidence/{name}", base64.b64decode(encoded, validate=True),
                            "application/octet-stream"))
        for name, key in stored.items():
            puts.append(Copy(f"{prefix}/evidence/{name}", check_blob_key(key)))
        puts.append(Put(f"{prefix}/evaluation.json", _json(evaluation), "application/json"))
        return puts

    def end_puts(self, prefix: str, event: EpisodeEvent) -> tuple[list[Write], Put]:
        """The objects of an end event: (the final files, independent of each other; the manifest, to
        write once they are all written). The caller has checked the attempt.
        Raises: ValueError for malformed evaluation files."""
        body: list[Write] = [Put(f"{prefix}/final_messages.json", _json(event.final_messages or []),
                                 "application/json")]
        if event.reward is not None:
            body.append(Put(f"{prefix}/reward.txt", repr(float(event.reward)).encode(), "text/plain"))
        if event.evaluation is not None:
            body.extend(self._evaluation_puts(prefix, dict(event.evaluation)))
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
            "agent": event.agent,
            "agent_options": event.agent_options,
            "sampling": event.sampling,
            "min_policy_version": event.min_policy_version,
            "max_policy_version": event.max_policy_version,
            "spanned_reload": event.spanned_reload,
            "env": {"id": event.env_id, "image": event.env_image},
            "timings": event.timings,
            "setup_log": event.setup_log,
            "finished_at": event.timestamp,
            "steps": steps,
        }
        return body, Put(f"{prefix}/manifest.json", _json(manifest), "application/json")
