"""Start a private `redis-server` process (tests, and `cua-rollout up` when no REDIS_URL is given).

It requires a password, as the compose and Kubernetes Redis do (docs/security-network.md): a random one per
server unless given, written to a config file of mode 0600 in its data dir (never on its command line, which
`ps` shows), and carried in `url` (`redis://:PASSWORD@127.0.0.1:PORT/0`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import redis

from common.polling import free_port, wait_until
from common.processes import stop_child


class RedisServerProcess:
    """A `redis-server` child on 127.0.0.1:`port` with its data in `data_dir`, requiring `password` (default: 32
    random bytes, URL-safe base64).

    Runs with AOF (`appendfsync everysec`) and `maxmemory-policy noeviction`, as production does.
    `stop()` ends only this process (by PID). Raises: RuntimeError when `redis-server` is missing.
    """

    def __init__(self, data_dir: Path, port: int | None = None, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: run `make setup` (Debian package redis-server)")
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.password = password or secrets.token_urlsafe(32)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """`redis://:{password}@127.0.0.1:{port}/0`."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def _write_config(self) -> Path:
        """The server's config file (mode 0600): its password."""
        path = self.data_dir / "redis.conf"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"requirepass {self.password}\n")
        return path

    def start(self, timeout_s: float = 10.0) -> RedisServerProcess:
        """Start the server and poll PING until it answers. Raises: DeadlineExceeded."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                self.binary,
                str(self._write_config()),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.data_dir),
                "--appendonly", "yes",
                "--appendfsync", "everysec",
                "--save", "",
                "--maxmemory-policy", "noeviction",
                "--logfile", str(self.data_dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_connect_timeout=1)
        wait_until(lambda: client.ping(), timeout_s, f"redis-server on port {self.port}")
        client.close()
        return self

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s)."""
        if self.process is not None:
            stop_child(self.process, grace_s=5.0)
        self.process = None
