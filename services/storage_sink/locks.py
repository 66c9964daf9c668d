"""Trajectory locks of the sink: writes of one trajectory are serialised across sinks by a Redis lock
(`keys.sink_lock`), held while a batch writes it; a batch takes its trajectories' locks in one pipeline
and releases them in one script (`BatchLocks`)."""

from __future__ import annotations

import logging
import uuid

import redis

from common import keys
from common import redis_typed as rt

log = logging.getLogger(__name__)

#: Deletes each of KEYS whose value is ARGV[1] (the batch's lock token); returns how many it deleted.
_RELEASE_ALL = """
local released = 0
for _, key in ipairs(KEYS) do
    if redis.call('get', key) == ARGV[1] then
        redis.call('del', key)
        released = released + 1
    end
end
return released
"""



class BatchLocks:
    """The `keys.sink_lock` of every trajectory of a batch, taken without waiting in one pipeline (one
    `SET NX PX` each, one token for the batch) and released in one script call: two round trips per
    batch instead of two per trajectory (each cost ~0.1 ms of CPU; a batch has up to `batch`
    trajectories). The values are those of a redis-py `Lock` (a token; released only by its owner),
    so a sink taking the lock with `Redis.lock` excludes this one and the reverse. A trajectory whose
    lock is held elsewhere is not in `held`: the caller waits for it with a `Redis.lock` of its own.
    Every lock's timeout (`lock_timeout_s`) runs from the batch's start, not from its trajectory's turn
    in the trajectory pool: a batch writing longer than that is logged (`release`), as a trajectory
    was before."""

    def __init__(self, client: redis.Redis, prefixes: list[str], timeout_s: float) -> None:
        self.client = client
        self.token = uuid.uuid4().hex.encode()
        self.held: set[str] = set()
        if not prefixes:  # every entry of the batch was dead-lettered
            return
        pipe = client.pipeline(transaction=False)
        for prefix in prefixes:
            pipe.set(keys.sink_lock(prefix), self.token, nx=True, px=int(timeout_s * 1000))
        try:
            taken = pipe.execute()
        except redis.RedisError:
            self.held = set(prefixes)  # some may have been taken before the error: release them all
            self.release()
            raise
        self.held = {prefix for prefix, ok in zip(prefixes, taken, strict=True) if ok}

    def release(self) -> None:
        """Release the locks still ours; a lock that expired meanwhile is logged. A Redis error is logged
        too (the locks then expire after their timeout)."""
        if not self.held:
            return
        names = [keys.sink_lock(prefix) for prefix in sorted(self.held)]
        try:
            released = rt.script_int(self.client.eval(_RELEASE_ALL, len(names), *names, self.token.decode()))
        except redis.RedisError as exc:
            log.warning("could not release the locks of %d trajectories (they expire): %r", len(names), exc)
            return
        finally:
            self.held = set()
        if released < len(names):
            log.warning("%d of %d trajectory locks expired during the batch's write", len(names) - released,
                        len(names))
