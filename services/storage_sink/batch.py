"""Writes one trajectory's share of a batch of stream entries, its steps in parallel.

The entries of one trajectory are written in stream order, phase by phase:

- a run of consecutive step events is one phase: every step goes to the put pool at once (one task
  per step: its PNG, then its JSON) and they are awaited together;
- a start event is a phase of its own (attempt check, older attempt's cleanup when the runners' count of
  attempts confirms it, `attempt.json`);
- an end event is two phases: its final files (one task), then `manifest.json`, so a manifest is
  only ever written after every entry before it in the stream was written.

Steps and end events of an attempt older than the recorded one are dropped; the
recorded attempt is read once per batch (the caller holds the trajectory's lock, so only this batch can
change it). A failed entry goes to `on_failure`, which either disposes of it (a dead letter: the
trajectory goes on) or leaves it pending: then the trajectory stops after that phase and its later
entries stay pending, in order, for a retry. Entries of the same phase that were written stay written
(they will be acknowledged; a redelivery rewrites the same bytes).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from common.events import EpisodeEvent, StepEvent, blobs_of
from common.objectstore import ObjectStore
from services.storage_sink.writer import TrajectoryWriter, UnconfirmedAttempt, Write

#: The runners' count of a rollout's attempts (`common.attempts.current`), by rollout id.
AttemptCounter = Callable[[str], int]

log = logging.getLogger(__name__)


class Outcome(enum.Enum):
    """What became of an entry: written, dropped (older attempt), disposed of by `on_failure` (a dead
    letter, already acknowledged), or left pending for a retry."""

    WRITTEN = "written"
    DROPPED = "dropped"
    DISPOSED = "disposed"
    PENDING = "pending"


@dataclass(frozen=True)
class Entry:
    """A decoded stream entry: its id, raw fields, event, and a step's screenshot as bytes (`png`) or as the
    key of the blob the runner put (`png_key`); both None for episode events."""

    entry_id: bytes
    fields: dict[bytes, bytes]
    event: StepEvent | EpisodeEvent
    png: bytes | None
    png_key: str | None = None
    record_key: str | None = None


#: Called with an entry whose write raised and the exception; True when it disposed of the entry.
FailureHandler = Callable[[Entry, Exception], bool]


def _phases(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Consecutive step events grouped; every episode event alone."""
    phases: list[list[Entry]] = []
    for entry in entries:
        if isinstance(entry.event, StepEvent) and phases and isinstance(phases[-1][0].event, StepEvent):
            phases[-1].append(entry)
        else:
            phases.append([entry])
    return phases


class TrajectoryBatch:
    """Writes the entries of one trajectory (`prefix`) with `writer`, puts on `pool`."""

    def __init__(self, writer: TrajectoryWriter, pool: Executor, prefix: str, on_failure: FailureHandler,
                 counted: AttemptCounter) -> None:
        self.writer = writer
        self.counted = counted
        self.pool = pool
        self.prefix = prefix
        self.on_failure = on_failure

    def write(self, entries: Sequence[Entry]) -> dict[bytes, Outcome]:
        """Write `entries` (one trajectory, stream order); the outcome of every entry by id.
        Raises: redis.RedisError from `on_failure` (the caller's round is retried)."""
        outcomes = {entry.entry_id: Outcome.PENDING for entry in entries}
        try:
            current = self.writer.current_attempt(self.prefix)
        except Exception as exc:  # the store failed before anything was written: the rest waits
            self._fail(entries[0], exc, outcomes)
            return outcomes
        for phase in _phases(entries):
            event = phase[0].event
            if isinstance(event, EpisodeEvent) and event.phase == "start":
                done = self._start(phase[0], current, outcomes)
                if outcomes[phase[0].entry_id] is Outcome.WRITTEN:
                    current = max(current, event.attempt)
            elif isinstance(event, StepEvent):
                done = self._steps(phase, current, outcomes)
            else:
                done = self._end(phase[0], current, outcomes)
            if not done:
                break
        return outcomes

    def _fail(self, entry: Entry, exc: Exception, outcomes: dict[bytes, Outcome]) -> bool:
        """Hand a failed entry to `on_failure`; True when the trajectory may go on."""
        disposed = self.on_failure(entry, exc)
        outcomes[entry.entry_id] = Outcome.DISPOSED if disposed else Outcome.PENDING
        return disposed

    def _start(self, entry: Entry, current: int, outcomes: dict[bytes, Outcome]) -> bool:
        assert isinstance(entry.event, EpisodeEvent)
        try:
            event = entry.event
            counted = self.counted(event.rollout_id) if event.attempt > max(current, 1) else 0
            written = self.writer.write_start(self.prefix, event, current, counted)
        except Exception as exc:
            return self._fail(entry, exc, outcomes)
        outcomes[entry.entry_id] = Outcome.WRITTEN if written else Outcome.DROPPED
        return True

    def _steps(self, phase: list[Entry], current: int, outcomes: dict[bytes, Outcome]) -> bool:
        jobs: list[tuple[Entry, list[Write]]] = []
        for entry in phase:
            assert isinstance(entry.event, StepEvent)
            if entry.event.attempt < current:
                outcomes[entry.entry_id] = Outcome.DROPPED
            elif entry.event.attempt > max(current, 1):
                if not self._fail(entry, _unstarted(self.prefix, entry.event, current), outcomes):
                    return False
            else:
                jobs.append((entry, self.writer.step_puts(self.prefix, entry.event, entry.png, entry.fields[b"data"],
                                                              entry.png_key, entry.record_key,
                                                              blobs_of(entry.fields))))
        return self._run(jobs, outcomes)

    def _end(self, entry: Entry, current: int, outcomes: dict[bytes, Outcome]) -> bool:
        assert isinstance(entry.event, EpisodeEvent)
        if entry.event.attempt < current:
            outcomes[entry.entry_id] = Outcome.DROPPED
            return True
        if entry.event.attempt > max(current, 1):
            return self._fail(entry, _unstarted(self.prefix, entry.event, current), outcomes)
        try:
            body, manifest = self.writer.end_puts(self.prefix, entry.event)
        except Exception as exc:  # malformed evaluation files
            return self._fail(entry, exc, outcomes)
        if not self._run([(entry, body)], outcomes) or outcomes[entry.entry_id] is not Outcome.WRITTEN:
            return outcomes[entry.entry_id] is Outcome.DISPOSED
        return self._run([(entry, [manifest])], outcomes)

    def _run(self, jobs: list[tuple[Entry, list[Write]]], outcomes: dict[bytes, Outcome]) -> bool:
        """Run the puts of `jobs` on the pool, one task per entry (its puts one after the other), and wait
        for all; an entry is written when all its puts were. True when the trajectory may go on (no
        entry left pending). One task per entry rather than per put: each hand-off to the pool costs a
        future, a queue put and a thread wake-up (CPU the sink is short of), and the entries of a phase
        are enough to keep the workers' fsyncs overlapping."""
        store = self.writer.store
        futures = [(entry, self.pool.submit(_put_all, store, puts)) for entry, puts in jobs]
        go_on = True
        for entry, future in futures:
            error = _error(future)
            if error is not None:
                go_on = self._fail(entry, error, outcomes) and go_on
            else:
                outcomes[entry.entry_id] = Outcome.WRITTEN
        return go_on


def _unstarted(prefix: str, event: StepEvent | EpisodeEvent, current: int) -> UnconfirmedAttempt:
    """The error of a step or end of an attempt whose start was not written (refused, or never sent)."""
    return UnconfirmedAttempt(f"{type(event).__name__} of attempt {event.attempt} of {prefix} refused: the "
                              f"trajectory's started attempt is {current} (no start of attempt {event.attempt})")


def _put_all(store: ObjectStore, puts: list[Write]) -> None:
    """Write `puts` in order; stops at the first that raises (the entry is not written either way)."""
    for put in puts:
        put.run(store)


def _error(future: Future[None]) -> Exception | None:
    """The exception of a finished put (waiting for it), or None."""
    exc = future.exception()
    if exc is None or isinstance(exc, Exception):
        return exc
    raise exc  # KeyboardInterrupt and the like are not store failures
