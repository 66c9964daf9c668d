"""Checks of `cua-rollout up`'s external parts before anything starts, each failing with one line
naming the option and the problem (so a typo costs a second, not a minute of stack start-up)."""

from __future__ import annotations

from urllib.parse import urlparse

import httpx
import redis
import urllib3
from minio.error import S3Error

from common.objectstore import open_store
from common.service import redis_client
from common.settings import ObjectStoreSettings


def check_http_url(url: str, option: str) -> str:
    """`url` without a trailing slash when it is `http(s)://host[:port][/path]`.

    Raises: ValueError naming `option` and the URL otherwise.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{option} {url!r}: must be an http:// or https:// URL with a host")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a non-numeric port
    except ValueError as exc:
        raise ValueError(f"{option} {url!r}: {exc}") from None
    return url.rstrip("/")


def check_redis(url: str) -> None:
    """PING the Redis at `url`. Raises: ValueError naming the URL and the error."""
    try:
        with redis_client(url, socket_timeout_s=5.0) as client:
            client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise ValueError(f"--redis-url {url!r}: cannot reach Redis: {exc}") from None


def check_store(url: str) -> None:
    """Open the object store `url` (`file:///dir` or `s3://bucket` with `S3_*` from the environment;
    a missing bucket is created, as the sink does). Raises: ValueError naming the URL and the error."""
    scheme = urlparse(url).scheme
    if scheme not in ("file", "s3"):
        raise ValueError(f"--store-url {url!r}: scheme must be file:// or s3://")
    try:
        store = open_store(ObjectStoreSettings(store_url=url))
        store.list("cua-rollout-preflight/")
    except (S3Error, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
        endpoint = f" (S3_ENDPOINT {ObjectStoreSettings().s3_endpoint})" if scheme == "s3" else ""
        raise ValueError(f"--store-url {url!r}{endpoint}: cannot open the store: {exc}") from None


def policy_warning(url: str, timeout_s: float = 3.0) -> str | None:
    """None when the OpenAI-compatible server at `url` answers `GET /v1/models`, else a one-line
    warning (a vLLM server may still be loading its weights: the gateway keeps probing `/health`)."""
    try:
        response = httpx.get(f"{url}/v1/models", timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"--policy-url {url}: not answering yet ({exc!r}); the gateway routes to it once /health is 200"
    if response.status_code != 200:
        return f"--policy-url {url}: GET /v1/models -> HTTP {response.status_code}"
    return None
