"""`outage.rounds_until_written`: rounds repeat while they leave entries pending, with pauses; a stop ends them."""

from __future__ import annotations

import threading

from services.storage_sink.outage import rounds_until_written


def test_rounds_repeat_until_one_leaves_nothing_pending() -> None:
    left = [True, True, False, True]
    calls: list[int] = []

    def round_left_pending() -> bool:
        calls.append(1)
        return left[len(calls) - 1]

    rounds_until_written(round_left_pending, threading.Event(), backoff_max_s=0.01)
    assert len(calls) == 3  # the third round wrote everything: no fourth


def test_a_stop_during_a_pause_ends_the_rounds_at_once() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def round_left_pending() -> bool:
        calls.append(1)
        stop.set()  # the sink is told to stop while this round left entries pending
        return True

    finished = threading.Event()
    worker = threading.Thread(target=lambda: (rounds_until_written(round_left_pending, stop, 60.0), finished.set()))
    worker.start()
    assert finished.wait(10.0), "a stop must not wait out the back-off (up to 60 s here)"
    worker.join()
    assert calls == [1]
