"""Process-wide HTTP plumbing for the sync httpx clients of the runner (gateway, env pods).

- `ssl_context()`: one TLS context per process. httpx builds a new `SSLContext` (loading the CA
  bundle, 30-80 ms) at every `httpx.Client(...)`, even for `http://` URLs; clients made by
  `new_client` share this one instead (made once; a forked work-horse inherits it ready).
- `shared(key, factory)`: one client per process and key, reused across rollouts (its keep-alive
  connections too). A forked child never uses its parent's clients (their sockets belong to the
  parent): the cache is emptied in the child right after `fork()` (`os.register_at_fork`), so
  the child builds its own on first use.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Callable, Hashable
from typing import Any

import httpx

_lock = threading.RLock()  # `shared` holds it while its factory may call `ssl_context`
_ssl: ssl.SSLContext | None = None
_clients: dict[Hashable, httpx.Client] = {}


def ssl_context() -> ssl.SSLContext:
    """This process's TLS context (httpx's default: certifi CA bundle, hostname checks), made once."""
    global _ssl
    if _ssl is None:
        with _lock:
            if _ssl is None:
                _ssl = httpx.create_ssl_context()
    return _ssl


def new_client(**kwargs: Any) -> httpx.Client:
    """An `httpx.Client(**kwargs)` using the process's `ssl_context()` (no per-client TLS setup).
    A `verify` given in `kwargs` wins."""
    kwargs.setdefault("verify", ssl_context())
    return httpx.Client(**kwargs)


def shared(key: Hashable, factory: Callable[[], httpx.Client]) -> httpx.Client:
    """The process's client for `key`, made by `factory()` on first use (and again if it was closed).
    Never close it: other users of the process share it."""
    client = _clients.get(key)
    if client is None or client.is_closed:
        with _lock:
            client = _clients.get(key)
            if client is None or client.is_closed:
                client = _clients[key] = factory()
    return client


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's clients (not closed: their sockets are the parent's) and
    a lock another thread may have held at fork time. The TLS context is kept."""
    global _lock, _clients
    _lock = threading.RLock()
    _clients = {}


os.register_at_fork(after_in_child=_forget_after_fork)


def warm_up() -> None:
    """Make the TLS context now (the runner worker calls it before forking work-horses)."""
    ssl_context()
