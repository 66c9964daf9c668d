"""Issue 34 attack 2: reach Redis and enqueue work without its password. Redis requires authentication wherever
it runs: the private redis-server of the tests, `cua-rollout up` and `make demo` (`common.redis_server`),
docker-compose.yml (`--requirepass`, every service's REDIS_URL carrying it), Kubernetes (`secretKeyRef`,
tests/deploy). One password for every service, not one ACL user each: docs/security-network.md says why."""

from __future__ import annotations

import socket
from pathlib import Path

import redis

from common import keys
from common.redis_server import RedisServerProcess
from tests.deploy.test_compose import SECRETS, _config


def _raw(port: int, *commands: bytes) -> list[bytes]:
    """Each command's reply line, on one raw connection (what code in an env pod would send: no client library)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        replies = []
        for command in commands:
            conn.sendall(command + b"\r\n")
            replies.append(conn.recv(200).split(b"\r\n")[0])
        return replies


def test_a_client_without_the_password_can_neither_read_nor_enqueue(redis_server: RedisServerProcess,
                                                                     redis_url: str) -> None:
    queue = f"rq:queue:{keys.QUEUE_NAMES['default']}".encode()
    replies = _raw(redis_server.port, b"PING", b"RPUSH " + queue + b" job", b"KEYS *", b"AUTH guess",
                   b"CONFIG SET requirepass x")
    assert replies[:3] == [b"-NOAUTH Authentication required."] * 3
    assert replies[3].startswith(b"-WRONGPASS") and replies[4].startswith(b"-NOAUTH")
    owner = redis.Redis.from_url(redis_url)
    assert owner.ping() and owner.llen(queue) == 0  # nothing was enqueued


def test_the_password_is_random_per_server_and_on_no_command_line(tmp_path: Path) -> None:
    first = RedisServerProcess(tmp_path / "a").start()
    try:
        second = RedisServerProcess(tmp_path / "b")
        assert first.password != second.password and len(first.password) >= 32
        assert first.process is not None
        cmdline = Path(f"/proc/{first.process.pid}/cmdline").read_bytes()
        assert first.password.encode() not in cmdline
        assert (tmp_path / "a" / "redis.conf").stat().st_mode & 0o077 == 0  # the config holding it: owner only
        assert f":{first.password}@" in first.url and redis.Redis.from_url(first.url).ping()
    finally:
        first.stop()


def test_compose_redis_requires_the_password_every_service_sends() -> None:
    services = _config()["services"]
    redis_service = services["redis"]
    command = " ".join(redis_service["entrypoint"] + redis_service["command"])
    assert '--requirepass "$$REDIS_PASSWORD"' in command  # `$$`: the container's shell expands it
    assert redis_service["environment"]["REDIS_PASSWORD"] == SECRETS["REDIS_PASSWORD"]
    assert "ports" not in redis_service
    clients = {name: s["environment"]["REDIS_URL"] for name, s in services.items()
               if "REDIS_URL" in (s.get("environment") or {})}
    assert set(clients) == {"gateway", "producer", "runner", "sink"}
    assert set(clients.values()) == {f"redis://:{SECRETS['REDIS_PASSWORD']}@redis:6379/0"}
