"""Process-wide HTTP plumbing for the runner's sync clients (model gateway, env pods), over urllib3.

Why urllib3 and not httpx here: a rollout step makes three requests (model, action, screenshot) and
the runner's CPU per step bounds the pipeline's steps/s (bench/pipeline.py). In a GIL profile of a
runner, httpx's request and response machinery (URL merging, cookie extraction, event objects) was
~60 % of the runner's Python time; urllib3 spends ~0.23 ms of CPU per small JSON request against httpx's
~0.42 ms on this machine (same server, same body). urllib3 also makes no TLS context for `http://` pools.

- `shared(key, factory)`: one `urllib3.PoolManager` per process and key, reused across rollouts
  (keep-alive connections too). A forked child never uses its parent's pools (their sockets belong to
  the parent): the cache is emptied in the child right after `fork()` (`os.register_at_fork`).
- `send(...)`: one request, its answer read whole into an `HttpResponse`; transport failures raise
  `HttpError` (urllib3's base exception: connect refused, timeouts, protocol errors). No retries.
"""

from __future__ import annotations

import json as jsonlib
import os
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3

HttpError = urllib3.exceptions.HTTPError

_lock = threading.Lock()
_pools: dict[Hashable, urllib3.PoolManager] = {}


@dataclass(frozen=True)
class HttpResponse:
    """A finished answer: `status_code`, `headers` (case-insensitive), `content` (the whole body, bytes)."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def is_success(self) -> bool:
        """2xx."""
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (what our env pod, OSWorld's server and vLLM send), bad bytes replaced."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON. Raises: ValueError when it is not JSON."""
        return jsonlib.loads(self.content)


def new_pool(maxsize: int = 4) -> urllib3.PoolManager:
    """A pool manager: up to `maxsize` kept-alive connections per host, no retries, no redirects followed."""
    return urllib3.PoolManager(num_pools=64, maxsize=maxsize, retries=False)


def shared(key: Hashable, factory: Callable[[], urllib3.PoolManager] = new_pool) -> urllib3.PoolManager:
    """The process's pool manager for `key`, made by `factory()` on first use. Never clear it: other users
    of the process share it."""
    pool = _pools.get(key)
    if pool is None:
        with _lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = factory()
    return pool


def send(pool: urllib3.PoolManager, method: str, url: str, *, connect_timeout_s: float, read_timeout_s: float,
         json: Any = None, data: Mapping[str, str] | None = None,
         files: Mapping[str, tuple[str, bytes]] | None = None,
         headers: Mapping[str, str] | None = None) -> HttpResponse:
    """Send one request and read its answer whole.

    Body: `json` (encoded, `Content-Type: application/json`), or form fields `data` (URL-encoded, or
    multipart with `files` {field: (file name, bytes)}, as `requests`/httpx send them), or none.
    Timeouts in seconds: `connect_timeout_s` to connect, `read_timeout_s` per read of the answer.
    Raises: HttpError on transport failures (refused, timed out, connection closed mid-answer).
    """
    timeout = urllib3.Timeout(connect=connect_timeout_s, read=read_timeout_s)
    kwargs: dict[str, Any] = {}
    if files:
        kwargs["fields"] = {**(data or {}), **files}
    elif data is not None:
        kwargs["fields"] = dict(data)
        kwargs["encode_multipart"] = False
    response = pool.request(method, url, json=json, headers=dict(headers) if headers else None, timeout=timeout,
                            redirect=False, **kwargs)
    return HttpResponse(response.status, response.headers, response.data)


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's pools (not closed: their sockets are the parent's) and a lock
    another thread may have held at fork time."""
    global _lock, _pools
    _lock = threading.Lock()
    _pools = {}


os.register_at_fork(after_in_child=_forget_after_fork)
