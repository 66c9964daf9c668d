"""State of the gateway's sessions (services/model_gateway/sessions.py): the open sessions, their recorded
calls, their idle TTL, and the publication of their records on the event stream the sink reads
(`common.events`; the run's shard, `common.eventshards`).

A session belongs to a rollout (`RolloutRef`): the one its creator names (a runner driving an external agent),
else one of its own, `{GATEWAY_SESSION_RUN_ID}/{session id}_0`. With `episode_events` (the default) the gateway
publishes the episode's start when the session opens and its end (`completed`, no reward, `num_steps` = the
calls recorded) when it closes; without, the creator publishes them (it scores the episode). Each call with a response
is published as one `cua.step.v1` record before its response goes back to the client (a call whose record cannot
be published within `GATEWAY_SESSION_PUBLISH_TIMEOUT_S` is responded 503, so no recorded call is lost and no
response goes out unrecorded); records of one session are published one at a time, so `step` numbers the calls
0, 1, ... with no gap, in the order their responses arrived.

Memory: an open session keeps its records (for `GET /v1/sessions/{id}` and the close response); a closed one
only its id and why it closed (the last `MAX_CLOSED` of them), so a call to it gets a 404 that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

import redis
import redis.asyncio as aioredis
import tenacity
from pydantic import BaseModel, ConfigDict, Field

from common.events import EpisodeEvent, RolloutRef, StepEvent, encode_event
from common.eventshards import stream_of
from common.ids import RUN_ID_MAX, RUN_ID_PATTERN, TASK_ID_MAX, TASK_ID_PATTERN
from common.status import RolloutStatus

log = logging.getLogger(__name__)

#: Closed sessions remembered (id and reason) for the 404 of a late call.
MAX_CLOSED = 10_000


class SessionSpec(BaseModel):
    """Body of `POST /v1/sessions` (every field optional). `model`: the model name the agent is to use
    (returned as is); `run_id` .. `attempt`: the rollout the records belong to (default: one of the session's
    own); `episode_events`: the gateway publishes the episode's start and end; `agent`: a label for the end
    event; `ttl_s`: idle seconds before the gateway closes it (default `GATEWAY_SESSION_TTL_S`)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, max_length=256)
    run_id: str | None = Field(default=None, max_length=RUN_ID_MAX, pattern=RUN_ID_PATTERN)
    task_id: str | None = Field(default=None, max_length=TASK_ID_MAX, pattern=TASK_ID_PATTERN)
    rollout_index: int = Field(default=0, ge=0)
    rollout_id: str | None = Field(default=None, max_length=256)
    attempt: int = Field(default=1, ge=1)
    episode_events: bool = True
    agent: str | None = Field(default=None, max_length=128)
    ttl_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)

    @property
    def names_rollout(self) -> bool:
        """True when the spec names a rollout (any of its fields set): only a runner may open such a session
        (services/model_gateway/access.py), since its records land in that rollout's trajectory."""
        return (self.run_id, self.task_id, self.rollout_id) != (None, None, None) or self.rollout_index != 0 \
            or self.attempt != 1


class SessionNotFound(LookupError):
    """No open session has this id: unknown, or closed (`reason` says when and why)."""

    def __init__(self, session_id: str, reason: str | None) -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(f"session {session_id!r} is closed ({reason})" if reason
                         else f"no session {session_id!r} (unknown to this gateway; open one with POST /v1/sessions)")


class RecordingFailed(RuntimeError):
    """A call's record could not be published (Redis down past the publish timeout)."""


@dataclass
class Session:
    """One open session: its rollout, spec, TTL (s), creation time (epoch s), last use (monotonic s), its
    records in step order, the blobs already published, and its own bearer `token` (32 random bytes,
    URL-safe base64: valid on its base URL only, services/model_gateway/access.py)."""

    id: str
    ref: RolloutRef
    spec: SessionSpec
    ttl_s: float
    created_at: float
    last_used: float
    calls: list[StepEvent] = field(default_factory=list)
    sent_blobs: set[str] = field(default_factory=set)
    in_flight: int = 0
    closing: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    token: str = field(default_factory=lambda: f"cua-session-{secrets.token_urlsafe(32)}", repr=False)


class StreamPublisher:
    """XADD of events to their run's stream over `redis.asyncio`, retrying Redis errors (tenacity: 0.1 s
    doubling to 2 s) for at most `timeout_s` seconds. No backpressure wait: a session's records are few and
    small next to a runner's (images ride once per session). Raises from `publish`: redis.RedisError."""

    def __init__(self, redis_url: str, shards: int, timeout_s: float) -> None:
        self.client = aioredis.Redis.from_url(redis_url)
        self.shards = shards
        self.timeout_s = timeout_s

    async def publish(self, event: StepEvent | EpisodeEvent, blobs: dict[str, bytes] | None = None) -> None:
        """Add one event (and its blobs) to its run's stream."""
        fields = encode_event(event, blobs=blobs)
        async for attempt in tenacity.AsyncRetrying(
                retry=tenacity.retry_if_exception_type(redis.RedisError),
                wait=tenacity.wait_exponential(multiplier=0.1, max=2.0),
                stop=tenacity.stop_after_delay(self.timeout_s), reraise=True):
            with attempt:
                await self.client.xadd(stream_of(event.run_id, self.shards), fields)  # type: ignore[arg-type]

    async def close(self) -> None:
        """Close the Redis connections."""
        await self.client.aclose()


class SessionManager:
    """The gateway's sessions. `run_id`: the run of sessions that name none; `ttl_s`: default idle TTL (s)."""

    def __init__(self, publisher: StreamPublisher, ttl_s: float, run_id: str, close_wait_s: float) -> None:
        self.publisher = publisher
        self.ttl_s = ttl_s
        self.run_id = run_id
        self.close_wait_s = close_wait_s
        self.open: dict[str, Session] = {}
        self.closed: OrderedDict[str, str] = OrderedDict()

    async def create(self, spec: SessionSpec) -> Session:
        """Open a session (publishing its episode start when `spec.episode_events`).
        Raises: RecordingFailed when the start cannot be published."""
        session_id = f"s-{uuid.uuid4().hex}"
        ref = RolloutRef(run_id=spec.run_id or self.run_id, task_id=spec.task_id or session_id,
                         rollout_index=spec.rollout_index, rollout_id=spec.rollout_id or session_id,
                         attempt=spec.attempt)
        session = Session(id=session_id, ref=ref, spec=spec, ttl_s=spec.ttl_s or self.ttl_s,
                          created_at=time.time(), last_used=time.monotonic())
        session.idle.set()
        if spec.episode_events:
            try:
                await self.publisher.publish(EpisodeEvent(**ref.model_dump(), phase="start", model=spec.model,
                                                          agent=spec.agent))
            except redis.RedisError as exc:
                raise RecordingFailed(f"could not publish the session's start event: {exc!r}") from exc
        self.open[session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        """The open session `session_id`. Raises: SessionNotFound (unknown or closed)."""
        session = self.open.get(session_id)
        if session is None or session.closing:
            raise SessionNotFound(session_id, self.closed.get(session_id) or (
                "closing" if session is not None else None))
        return session

    @contextlib.contextmanager
    def call(self, session: Session) -> Iterator[None]:
        """Count one call in flight on `session` (its close waits for it) and refresh its TTL."""
        session.in_flight += 1
        session.idle.clear()
        session.last_used = time.monotonic()
        try:
            yield
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()
            if session.in_flight == 0:
                session.idle.set()

    async def record(self, session: Session, event: StepEvent, blobs: dict[str, bytes]) -> StepEvent:
        """Number `event` as the session's next step, publish it with the blobs not published yet, keep it.
        Raises: RecordingFailed (nothing kept; the next call takes the same step number)."""
        async with session.lock:
            event = event.model_copy(update={"step": len(session.calls)})
            new = {name: data for name, data in blobs.items() if name not in session.sent_blobs}
            try:
                await self.publisher.publish(event, new)
            except redis.RedisError as exc:
                raise RecordingFailed(f"could not publish the record of call {event.step} of session "
                                      f"{session.id}: {exc!r}") from exc
            session.sent_blobs.update(new)
            session.calls.append(event)
            return event

    async def close(self, session_id: str, reason: str) -> Session:
        """Close a session: no new call is accepted, calls in flight finish (waiting at most `close_wait_s`),
        then its episode end is published (with `episode_events`). Raises: SessionNotFound; RecordingFailed
        when the end cannot be published (the session stays closed: its records are on the stream)."""
        session = self.get(session_id)
        session.closing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(session.idle.wait(), self.close_wait_s)
        async with session.lock:
            self.open.pop(session_id, None)
            self.closed[session_id] = f"{reason} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"
            while len(self.closed) > MAX_CLOSED:
                self.closed.popitem(last=False)
        if session.spec.episode_events:
            versions = sorted({c.model_version for c in session.calls if c.model_version})
            end = EpisodeEvent(**session.ref.model_dump(), phase="end", status=RolloutStatus.COMPLETED,
                               num_steps=len(session.calls), model=session.spec.model, agent=session.spec.agent,
                               min_policy_version=versions[0] if versions else None,
                               max_policy_version=versions[-1] if versions else None,
                               spanned_reload=len(versions) > 1,
                               timings={"session_ms": (time.time() - session.created_at) * 1000.0})
            try:
                await self.publisher.publish(end)
            except redis.RedisError as exc:
                raise RecordingFailed(f"could not publish the end of session {session_id}: {exc!r}") from exc
        return session

    async def expire(self) -> list[str]:
        """Close every session idle (no call in flight) for longer than its TTL; their ids."""
        now = time.monotonic()
        stale = [s.id for s in self.open.values()
                 if not s.closing and s.in_flight == 0 and now - s.last_used > s.ttl_s]
        for session_id in stale:
            try:
                await self.close(session_id, f"idle for more than its TTL of {self.open[session_id].ttl_s:g} s")
            except (SessionNotFound, RecordingFailed, KeyError) as exc:
                log.warning("expiring session %s: %s", session_id, exc)
        return stale

    async def run_expiry(self, interval_s: float) -> None:
        """Expire idle sessions every `interval_s` seconds, until cancelled."""
        while True:
            await asyncio.sleep(interval_s)
            await self.expire()
