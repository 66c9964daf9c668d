"""What the wall shows of each running rollout, from the event stream's entries (SPEC section 7): its task,
latest step (number, action markers, typed text, step time, policy version, screenshot) and the step rate.

Fed the entries the sampler read since the last tick (`StepTracker.feed`); keeps only the latest step of
each rollout (the wall's tiles) and the entry times of the steps of the last `RATE_WINDOW_S` seconds.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from pydantic import BaseModel

from common.events import EpisodeEvent, StepEvent, decode_event, png_key_of
from services.task_producer.ui.trajectory_view import Marker, action_line, markers_of, texts_of

log = logging.getLogger(__name__)

#: Seconds of step entries the step rate is averaged over.
RATE_WINDOW_S = 30.0
#: Rollouts remembered (the newest by last event); older ones are dropped (bounded memory).
MAX_ROLLOUTS = 2000


class LiveStep(BaseModel):
    """The latest known state of one rollout on the event stream. `step` is 0-based (None before its first
    step); `step_ms` the step's whole time (ms); `markers` in screen pixels of the step's screenshot;
    `shot` identifies its screenshot (`png_key`, or `inline:<entry id>` when the PNG rode in the entry);
    `trajectory` is `{run_id}/{task_id}_{rollout_index}`; `updated` epoch seconds of its last event."""

    rollout_id: str
    run_id: str
    task_id: str
    rollout_index: int
    trajectory: str
    step: int | None = None
    action: str = ""
    thought: str = ""
    markers: list[Marker] = []
    texts: list[str] = []
    step_ms: float | None = None
    policy_version: str | None = None
    shot: str | None = None
    ended: bool = False
    status: str = "running"
    reward: float | None = None
    updated: float = 0.0


def _entry_time_s(entry_id: str) -> float:
    """A stream entry id's time (`<ms>-<seq>`) in epoch seconds."""
    return int(entry_id.split("-", 1)[0]) / 1000.0


class StepTracker:
    """Latest step per rollout and recent step times, from decoded stream entries; thread-safe (one thread
    feeds it, others read `view`)."""

    def __init__(self) -> None:
        self.rollouts: dict[str, LiveStep] = {}
        self.inline_pngs: dict[str, bytes] = {}  # shot id -> PNG, for steps whose PNG rode in the entry
        self._step_times: deque[float] = deque()
        self._lock = threading.Lock()

    def view(self, now_s: float) -> tuple[float, dict[str, LiveStep]]:
        """The step rate at `now_s` (`steps_per_s`) and a copy of each rollout's latest state, by rollout id."""
        with self._lock:
            return self.steps_per_s(now_s), {k: v.model_copy() for k, v in self.rollouts.items()}

    def latest(self, rollout_id: str) -> LiveStep | None:
        """A copy of the latest state of `rollout_id`, None when the stream showed none of it."""
        with self._lock:
            live = self.rollouts.get(rollout_id)
            return None if live is None else live.model_copy()

    def feed(self, entries: list[tuple[str, dict[bytes, bytes]]]) -> None:
        """Apply stream entries (id, fields) in stream order. A poison entry is logged and skipped (the sink
        dead-letters it)."""
        with self._lock:
            self._feed(entries)

    def _feed(self, entries: list[tuple[str, dict[bytes, bytes]]]) -> None:
        for entry_id, fields in entries:
            try:
                event, png = decode_event(fields)
                key = png_key_of(fields)
            except ValueError as exc:
                log.debug("dashboard: skipping stream entry %s: %s", entry_id, exc)
                continue
            if isinstance(event, StepEvent):
                if event.session_id is not None:
                    continue  # a gateway session's call, not a step of the env
                self._step(entry_id, event, key, png)
            else:
                self._episode(event)

    def _live(self, event: StepEvent | EpisodeEvent) -> LiveStep:
        live = self.rollouts.get(event.rollout_id)
        if live is None:
            live = LiveStep(rollout_id=event.rollout_id, run_id=event.run_id, task_id=event.task_id,
                            rollout_index=event.rollout_index,
                            trajectory=f"{event.run_id}/{event.task_id}_{event.rollout_index}")
            self.rollouts[event.rollout_id] = live
        live.updated = event.timestamp
        return live

    def _step(self, entry_id: str, event: StepEvent, key: str | None, png: bytes | None) -> None:
        live = self._live(event)
        actions = [a.model_dump() for a in event.actions]
        live.step, live.thought = event.step, event.thought
        live.action = action_line(actions)
        live.markers, live.texts = markers_of(actions), texts_of(actions)
        live.step_ms, live.policy_version = event.timings.step_ms, event.policy_version
        if key is not None:
            live.shot = key
        elif png is not None:
            self.inline_pngs.pop(live.shot or "", None)
            live.shot = f"inline:{entry_id}"
            self.inline_pngs[live.shot] = png
        self._step_times.append(_entry_time_s(entry_id))
        self._bound()

    def _episode(self, event: EpisodeEvent) -> None:
        live = self._live(event)
        if event.phase == "start":
            live.ended, live.status, live.reward = False, "running", None
        else:
            live.ended, live.status, live.reward = True, event.status.value, event.reward

    def _bound(self) -> None:
        if len(self.rollouts) > MAX_ROLLOUTS:
            for rollout_id, live in sorted(self.rollouts.items(), key=lambda kv: kv[1].updated)[:len(self.rollouts)
                                                                                                 - MAX_ROLLOUTS]:
                self.inline_pngs.pop(live.shot or "", None)
                del self.rollouts[rollout_id]

    def steps_per_s(self, now_s: float) -> float:
        """Steps per second over the last `RATE_WINDOW_S` seconds before `now_s` (epoch s), by entry time."""
        while self._step_times and self._step_times[0] < now_s - RATE_WINDOW_S:
            self._step_times.popleft()
        return len(self._step_times) / RATE_WINDOW_S

