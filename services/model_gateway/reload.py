"""Rolling weight reload over the gateway's replicas, never aborting an in-flight request.

`ReloadManager.start()` runs one reload at a time as a background task. Replicas go in waves of
`max_unavailable`; for each replica of a wave (concurrently):
0. guard: a replica is drained only while another replica of the pool can serve (not draining, breaker not
   open), waited for up to `drain_timeout_s`, else it fails undrained: a reload never leaves zero routable
   replicas while another could serve (a pool of one is reloaded anyway: nothing else could serve);
1. drain: no new request goes there (pinned episodes migrate at their next step); wait until its in-flight
   requests finish (`drain_timeout_s`; on timeout the replica is re-admitted unchanged and the reload fails);
2. reload through the method (`reload_methods`), bounded by `reload_timeout_s`;
3. health: `GET /health` responds 200 (`health_timeout_s`);
4. confirm the new version with the method; only then record it and re-admit the replica.
A replica that fails steps 2-4 is rolled back (reloaded with the source it last served successfully, known
once a reload through this gateway succeeded on it) and re-admitted only when that is confirmed; otherwise
it is left drained (`left_drained`). A failure stops the next waves; `GET /admin/reload` shows it all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from services.model_gateway.reload_methods import ReloadError, ReloadMethod, ReloadRequest
from services.model_gateway.replicas import Replica, ReplicaPool

log = logging.getLogger(__name__)

ReplicaStep = Literal["pending", "draining", "reloading", "checking", "done", "failed", "rolled_back",
                      "left_drained", "skipped"]


class ReplicaProgress(BaseModel):
    """One replica's progress in a reload; times are Unix seconds."""

    replica: str
    wave: int
    state: ReplicaStep = "pending"
    previous_version: str | None = None
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None


class ReloadStatus(BaseModel):
    """`GET /admin/reload`: the current or last reload."""

    version: str
    source: str
    method: str
    max_unavailable: int
    state: Literal["running", "succeeded", "failed"] = "running"
    error: str | None = None
    started_at: float = Field(default_factory=time.time)
    ended_at: float | None = None
    replicas: list[ReplicaProgress] = Field(default_factory=list)


class ReloadBusy(RuntimeError):
    """A reload is already running."""


class ReloadManager:
    """Runs rolling reloads over `pool` with `methods(name)` and the shared HTTP client from `client()`."""

    def __init__(self, pool: ReplicaPool, client: Callable[[], httpx.AsyncClient],
                 methods: Callable[[str], ReloadMethod], default_method: str) -> None:
        self.pool = pool
        self.client = client
        self.methods = methods
        self.default_method = default_method
        self.status: ReloadStatus | None = None
        self.sources: dict[str, ReloadRequest] = {}  # replica id -> last request it was reloaded with
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """True while a reload task is working."""
        return self._task is not None and not self._task.done()

    def start(self, request: ReloadRequest) -> ReloadStatus:
        """Start a reload in the background; returns its initial status. Raises: ReloadBusy, ValueError
        when there is no replica or the method cannot run (`ReloadMethod.problem`), before any replica drains."""
        if self.running:
            raise ReloadBusy("a reload is already running (see GET /admin/reload)")
        replicas = self.pool.list_replicas()
        if not replicas:
            raise ValueError("the gateway has no replica to reload")
        method = request.method or self.default_method
        problem = self.methods(method).problem()
        if problem:
            raise ValueError(problem)
        waves = [replicas[i:i + request.max_unavailable] for i in range(0, len(replicas), request.max_unavailable)]
        self.status = ReloadStatus(version=request.version, source=request.source, method=method,
                                   max_unavailable=request.max_unavailable,
                                   replicas=[ReplicaProgress(replica=r.id, wave=w, previous_version=r.model_version)
                                             for w, wave in enumerate(waves) for r in wave])
        self._task = asyncio.create_task(self._run(request, method, waves, self.status))
        return self.status

    async def wait(self) -> None:
        """Wait for the running reload (if any) to end."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Cancel a running reload (gateway shutdown)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def _run(self, request: ReloadRequest, method_name: str, waves: list[list[Replica]],
                   status: ReloadStatus) -> None:
        method = self.methods(method_name)
        progress = {p.replica: p for p in status.replicas}
        try:
            for wave in waves:
                results = await asyncio.gather(*(self._one(method, replica, request, progress[replica.id])
                                                 for replica in wave))
                if not all(results):
                    failed = [p.replica for p in status.replicas if p.state not in ("done", "pending")]
                    status.state, status.error = "failed", f"reload failed on {', '.join(failed)}"
                    for p in status.replicas:
                        if p.state == "pending":
                            p.state = "skipped"
                    return
            status.state = "succeeded"
        except Exception as exc:  # a bug must still end the reload visibly, never leave it "running"
            log.exception("reload crashed")
            status.state, status.error = "failed", f"reload crashed: {exc!r}"
        finally:
            status.ended_at = time.time()

    async def _one(self, method: ReloadMethod, replica: Replica, request: ReloadRequest,
                   progress: ReplicaProgress) -> bool:
        """Drain, reload, check, confirm, re-admit one replica; True on success."""
        progress.started_at = time.time()
        was_draining = replica.draining
        if not was_draining and not await self._another_serves(replica, request.drain_timeout_s):
            progress.state, progress.error = "failed", (
                f"no other replica could serve within {request.drain_timeout_s}s, and draining this one would "
                "leave none routable; not drained")
            progress.ended_at = time.time()
            return False
        replica.draining = True  # no await since the check: a replica of the same wave sees this one draining
        try:
            progress.state = "draining"
            if not await self._drained(replica, request.drain_timeout_s):
                progress.state, progress.error = "failed", (
                    f"still {replica.in_flight} in-flight request(s) after {request.drain_timeout_s}s; "
                    "re-admitted unchanged")
                replica.draining = was_draining
                self.pool.notify()
                return False
            replica.reloading, replica.target_version = True, request.version
            self.pool.notify()
            progress.state = "reloading"
            try:
                await self._apply(method, replica, request, progress)
            except ReloadError as exc:
                progress.error = str(exc)
                log.warning("reload of %s to %s failed: %s", replica.id, request.version, exc)
                await self._roll_back(method, replica, progress)
                return False
            self.sources[replica.id] = request
            self.pool.record_success(replica)  # healthy and confirmed: close a breaker the restart opened
            self.pool.set_version(replica, request.version)
            replica.draining = was_draining
            progress.state = "done"
            return True
        finally:
            replica.reloading, replica.target_version = False, None
            progress.ended_at = time.time()
            self.pool.notify()

    async def _apply(self, method: ReloadMethod, replica: Replica, request: ReloadRequest,
                     progress: ReplicaProgress) -> None:
        """Reload, wait healthy, confirm the version. Raises: ReloadError naming the failed step."""
        try:
            await asyncio.wait_for(method.reload(self.client(), replica, request), request.reload_timeout_s)
        except TimeoutError as exc:
            raise ReloadError(f"reload call timed out after {request.reload_timeout_s}s") from exc
        progress.state = "checking"
        if not await self._healthy(replica, request.health_timeout_s):
            raise ReloadError(f"not healthy within {request.health_timeout_s}s after the reload")
        if not await method.serves(self.client(), replica, request):
            raise ReloadError(f"replica does not serve version {request.version!r} after the reload")

    async def _roll_back(self, method: ReloadMethod, replica: Replica, progress: ReplicaProgress) -> None:
        """Reload the replica's last good source; re-admit only if confirmed, else leave it drained."""
        previous = self.sources.get(replica.id)
        if previous is None:
            progress.state = "left_drained"
            progress.error = f"{progress.error}; no earlier source known to roll back to: left drained"
            return
        try:
            await self._apply(method, replica, previous, progress)
        except ReloadError as exc:
            progress.state = "left_drained"
            progress.error = f"{progress.error}; rollback to {previous.version} failed ({exc}): left drained"
            return
        self.pool.record_success(replica)
        self.pool.set_version(replica, previous.version)
        replica.draining = False
        progress.state = "rolled_back"

    async def _another_serves(self, replica: Replica, timeout_s: float) -> bool:
        """True once another replica of the pool can serve (not draining, breaker not open), polled every
        20 ms up to `timeout_s`, or at once when `replica` is the pool's only one (nothing else could serve
        while it reloads). False on timeout: draining `replica` would leave zero routable replicas."""
        deadline = time.monotonic() + timeout_s
        while True:
            others = [r for r in self.pool.list_replicas() if r.id != replica.id]
            if not others or any(not r.draining and r.healthy for r in others):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)

    async def _drained(self, replica: Replica, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while replica.in_flight > 0:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def _healthy(self, replica: Replica, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if (await self.client().get(f"{replica.url}/health", timeout=5.0)).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.1)

    def view(self) -> dict[str, Any]:
        """`{"running": bool, "reload": ReloadStatus | None}` as JSON-able data."""
        return {"running": self.running, "reload": self.status.model_dump() if self.status else None}
