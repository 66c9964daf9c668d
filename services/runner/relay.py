"""Byte relays between a TCP port and a Unix socket: the only way out of an external agent's sandbox
(services/runner/external_sandbox.py).

Outside the sandbox, `UnixToTcp` listens on a Unix socket in the episode's work dir and connects each client to
one fixed TCP address (the env's OSWorld server, or the gateway); inside, `TcpToUnix` (run by
`services.runner.sandbox_entry`) listens on `127.0.0.1:<port>` of the sandbox's own network namespace and
connects each client to that socket. Each connection is relayed both ways, as bytes (HTTP, streaming, keep-alive
alike), until either side closes. A relay reaches its one address only: the program names no other.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

#: Bytes read per `recv`.
CHUNK = 65536


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until `source` ends; then end `sink`'s writing side."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket, connect: Callable[[], socket.socket]) -> None:
    """Relay one accepted connection to a new connection from `connect`, both ways; close both at the end."""
    try:
        upstream = connect()
    except OSError as exc:
        log.warning("relay: cannot reach the target: %r", exc)
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


class Relay:
    """Accepts connections on `listener` (bound and listening) and relays each to `connect()` in its own threads.
    `start()` serves in a daemon thread; `stop()` closes the listener (relays under way end with their peers)."""

    def __init__(self, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
        self.listener = listener
        self.connect = connect
        self._thread = threading.Thread(target=self._serve, daemon=True, name="relay")

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=_relay, args=(client, self.connect), daemon=True).start()

    def start(self) -> Relay:
        """Serve in a daemon thread; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting (closing the listener)."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._thread.join(timeout=5)


def unix_to_tcp(path: Path, host: str, port: int) -> Relay:
    """A relay listening on the Unix socket `path` (mode 0600: only its owner connects) to `host:port` (TCP).
    Raises: OSError when `path` cannot be bound."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    return Relay(listener, lambda: socket.create_connection((host, port), timeout=30)).start()


def tcp_to_unix(port: int, path: str) -> Relay:
    """A relay listening on `127.0.0.1:port` to the Unix socket `path`. Raises: OSError when the port is taken."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def connect() -> socket.socket:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(path)
        return upstream

    return Relay(listener, connect).start()
