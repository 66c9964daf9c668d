"""The wall's view of the event stream: latest step per rollout with its action, screenshot and timing."""

from __future__ import annotations

from common.blob_keys import blob_key
from common.status import RolloutStatus
from services.task_producer.live.tracker import RATE_WINDOW_S, StepTracker
from tests.task_producer.live.helpers import episode_entry, screenshot, step_entry


def test_tracker_keeps_each_rollouts_latest_step_and_its_end() -> None:
    png = screenshot(64, 36)
    tracker = StepTracker()
    tracker.feed([("1000-0", episode_entry("r1", "t1", 0, "start")),
                  ("1001-0", step_entry("r1", "t1", 0, 0, png, x=10, y=20)),
                  ("1002-0", step_entry("r1", "t1", 0, 1, png, x=30, y=5)),
                  ("1003-0", step_entry("r1", "t2", 1, 0, png, inline=True)),
                  ("1004-0", {b"type": b"step", b"data": b"{not json"})])  # a poison entry is skipped
    first = tracker.rollouts["r1:t1:0"]
    assert (first.step, first.trajectory, first.policy_version, first.step_ms) == (1, "r1/t1_0", "v3", 1234.0)
    assert [(m.kind, m.x, m.y) for m in first.markers] == [("click", 30, 5)]
    assert first.action == "click(x=30, y=5)" and first.shot == blob_key(png)
    inline = tracker.rollouts["r1:t2:1"]
    assert inline.shot == "inline:1003-0" and tracker.inline_pngs[inline.shot] == png
    tracker.feed([("1005-0", episode_entry("r1", "t1", 0, "end", RolloutStatus.COMPLETED, 1.0))])
    assert (first.ended, first.status, first.reward) == (True, "completed", 1.0)


def test_step_rate_counts_the_steps_of_the_last_window() -> None:
    png = screenshot(8, 8)
    tracker = StepTracker()
    tracker.feed([(f"{1_000_000 + i * 1000}-0", step_entry("r", "t", 0, i, png)) for i in range(10)])
    # steps at 1000 .. 1009 s (entry ids are ms)
    assert tracker.steps_per_s(1009.0) == 10 / RATE_WINDOW_S
    assert tracker.steps_per_s(1005.0 + RATE_WINDOW_S) == 5 / RATE_WINDOW_S  # steps before 1005 s left the window
