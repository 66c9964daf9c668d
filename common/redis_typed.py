"""Typed answers of the redis-py commands this project calls on a synchronous `redis.Redis` client.

redis-py types every command's answer as `ResponseT` (`Awaitable[Any] | Any`), because the same methods
serve its asyncio client, so each call site needed a `# type: ignore`. On a synchronous client the answer
is the value itself; these wrappers state its shape once. A value is `bytes`, or `str` on a client made
with `decode_responses=True` (`RedisValue`); `text` turns either into `str`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import redis

RedisValue = bytes | str
#: What a Lua script (`redis.commands.core.Script`) answers: an integer, a value, a list of them, or nil.
ScriptAnswer = int | RedisValue | list[Any] | None


def text(value: RedisValue) -> str:
    """`value` as `str` (bytes decoded as UTF-8)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def get(client: redis.Redis, key: str) -> RedisValue | None:
    """GET `key`: its value, or None when it does not exist."""
    return cast("RedisValue | None", client.get(key))


def get_int(client: redis.Redis, key: str) -> int:
    """GET `key` as an integer counter; 0 when it does not exist. Raises: ValueError for a non-integer value."""
    value = get(client, key)
    return int(value) if value is not None else 0


def mget(client: redis.Redis, keys: Sequence[str]) -> list[RedisValue | None]:
    """MGET `keys`: one value (or None) per key, in order; [] for no keys (Redis refuses an empty MGET)."""
    return cast("list[RedisValue | None]", client.mget(list(keys))) if keys else []


def hget(client: redis.Redis, key: str, field: str) -> RedisValue | None:
    """HGET `key` `field`: the field's value, or None."""
    return cast("RedisValue | None", client.hget(key, field))


def hgetall(client: redis.Redis, key: str) -> dict[RedisValue, RedisValue]:
    """HGETALL `key`: field -> value ({} when the hash does not exist). O(fields)."""
    return cast("dict[RedisValue, RedisValue]", client.hgetall(key))


def hmget(client: redis.Redis, key: str, fields: Sequence[str]) -> list[RedisValue | None]:
    """HMGET `key` `fields`: one value (or None) per field, in order; [] for no fields."""
    return cast("list[RedisValue | None]", client.hmget(key, list(fields))) if fields else []


def smembers(client: redis.Redis, key: str) -> set[RedisValue]:
    """SMEMBERS `key` (empty when the set does not exist). O(members)."""
    return cast("set[RedisValue]", client.smembers(key))


def scard(client: redis.Redis, key: str) -> int:
    """SCARD `key`: the set's size (0 when it does not exist)."""
    return int(cast(int, client.scard(key)))


def zrange(client: redis.Redis, key: str, start: int, end: int) -> list[RedisValue]:
    """ZRANGE `key` `start` `end` (ranks, inclusive, -1 the last): members by ascending score."""
    return cast("list[RedisValue]", client.zrange(key, start, end))


def blpop(client: redis.Redis, keys: Sequence[str], timeout_s: float) -> tuple[RedisValue, RedisValue] | None:
    """BLPOP `keys` waiting up to `timeout_s` seconds: (list key, value), or None on timeout."""
    return cast("tuple[RedisValue, RedisValue] | None", client.blpop(list(keys), timeout=timeout_s))


def script_int(answer: Any) -> int:
    """A Lua script's integer answer as `int`. Raises: TypeError/ValueError when the script answered no integer."""
    return int(answer)


def incr(client: redis.Redis, key: str) -> int:
    """INCR `key`: the counter's new value (1 when it did not exist)."""
    return int(cast(int, client.incr(key)))


def smismember(client: redis.Redis, key: str, members: Sequence[str]) -> list[bool]:
    """SMISMEMBER `key` `members`: whether each member is in the set, in order; [] for no members."""
    return [bool(flag) for flag in cast("list[int]", client.smismember(key, list(members)))] if members else []
