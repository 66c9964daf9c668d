"""Secret settings refuse the well-known defaults outside local mode.

Local mode is a machine no one else reaches: `CUA_LOCAL_MODE=1` says so, `CUA_LOCAL_MODE=0` says not; unset
(the default), a service is in local mode iff every address it listens on or sends a secret to is a loopback
address (`localhost`, `127.0.0.0/8`, `::1`): the producer's and gateway's `*_HOST` (default `127.0.0.1`), the S3
endpoint when the store is `s3://`, the gateway a runner sends its key to. `cua-rollout up` / `demo` and the
tests bind to loopback, so they are local; docker-compose and the Kubernetes manifests listen on `0.0.0.0`, so
they are not, and they require real secrets (compose `${VAR:?}`, Kubernetes `secretKeyRef`).

Outside local mode a service refuses to start (its settings raise a ValueError naming the variable) when a
secret is one of `WELL_KNOWN_SECRETS` (e.g. `minioadmin`, `changeme`, `dev-token`; compared without case and
blanks), shorter than `MIN_SECRET_CHARS` (16 characters: 128 bits would need more than 8 bits a character, so
no printable secret carries 128 bits in fewer) or made of fewer than `MIN_DISTINCT_CHARS` distinct characters
(`aaaa...`), or empty where a token is required (`PRODUCER_API_TOKEN`, `GATEWAY_ADMIN_TOKEN`, `GATEWAY_API_KEYS`,
the `S3_*` keys of an `s3://` store). Every secret setting is checked when set: the tokens and keys above, the
gateway's `GATEWAY_REPLICA_API_KEY`, the runner's keys, and the password inside `REDIS_URL`
(`redis://[user]:password@host`, `redis_secrets`). An access key or user name (`*_ACCESS_KEY`, `*-user`) is
an identifier, not a secret: it is refused only when well-known (`S3_ACCESS_KEY=minioadmin`), never for its
length.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from pydantic import SecretStr

from common.auth import Token, reveal
from common.settings import comma_list

#: The environment variable that declares local mode (`1`/`true`) or not (`0`/`false`); unset: auto.
LOCAL_MODE_ENV = "CUA_LOCAL_MODE"

#: Secrets published in documentation, tutorials and default configs (MinIO's root credentials, vLLM's
#: placeholder key, ...): anyone can guess them.
WELL_KNOWN_SECRETS = frozenset({
    "minioadmin", "minio123", "changeme", "change-me", "change_me", "dev-token", "devtoken", "token", "secret",
    "password", "admin", "empty", "none", "null", "default", "12345678", "letmein", "your-token",
    "your-api-key", "sk-xxx",
})
#: Shortest secret accepted outside local mode, characters (issue 34, point 5).
MIN_SECRET_CHARS = 16
#: Fewest distinct characters in a secret accepted outside local mode (refuses `aaaaaaaaaaaaaaaa`).
MIN_DISTINCT_CHARS = 5


def is_loopback(address: str) -> bool:
    """True for a loopback host (`localhost`, `127.x.y.z`, `::1`), given bare, as `host:port`, `[::1]:port`
    or inside a URL (`http://127.0.0.1:8000/v1`). Empty or unparseable: False."""
    text = address.strip()
    try:
        return ipaddress.ip_address(text.strip("[]")).is_loopback  # a bare address (`::1` has colons)
    except ValueError:
        pass
    host = urlsplit(text).hostname if "://" in text else urlsplit(f"//{text}").hostname
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_mode(declared: bool | None, addresses: Iterable[str]) -> bool:
    """Local mode: `declared` (`CUA_LOCAL_MODE`) when set, else True iff every address is loopback (no
    address at all: True, the service exposes and sends no secret)."""
    if declared is not None:
        return declared
    return all(is_loopback(address) for address in addresses)


def is_well_known(secret: str) -> bool:
    """True when `secret` (case and surrounding blanks ignored) is in `WELL_KNOWN_SECRETS`."""
    return secret.strip().lower() in WELL_KNOWN_SECRETS


def is_identifier(name: str) -> bool:
    """True for a setting that names who, not a secret: an access key id or a user name (`S3_ACCESS_KEY`,
    `cua-s3/access-key`, `root-user`): checked against the well-known list only, not for length."""
    normal = name.lower().replace("-", "_")
    return normal.endswith(("access_key", "_user", "/user", "username"))


def too_short(secret: str) -> bool:
    """True when `secret` is shorter than `MIN_SECRET_CHARS` or has fewer than `MIN_DISTINCT_CHARS` distinct
    characters (blanks around it ignored)."""
    text = secret.strip()
    return len(text) < MIN_SECRET_CHARS or len(set(text)) < MIN_DISTINCT_CHARS


def weak_secret_problems(secrets: Mapping[str, Token], required: Iterable[str] = ()) -> list[str]:
    """For each variable of `secrets` (name -> value) holding a well-known secret, a secret too short to guess
    (`too_short`; not for identifiers, `is_identifier`), or empty while named in `required`: one line naming
    the variable and the problem. A variable holding comma-separated keys (`GATEWAY_API_KEYS`) is checked key by
    key. Values are never quoted."""
    must = set(required)
    problems = []
    for name, value in secrets.items():
        keys = comma_list(reveal(value)) if name.endswith("_KEYS") else [reveal(value)] if reveal(value) else []
        if not keys and name in must:
            problems.append(f"{name} is empty but required")
        elif any(is_well_known(key) for key in keys):
            problems.append(f"{name} is a well-known default secret")
        elif not is_identifier(name) and any(too_short(key) for key in keys):
            problems.append(f"{name} is too short to be a secret (at least {MIN_SECRET_CHARS} characters, "
                            f"{MIN_DISTINCT_CHARS} of them distinct)")
    return problems


def redis_secrets(redis_url: str) -> tuple[dict[str, str], dict[str, Token]]:
    """For `check_service_secrets`: (`REDIS_URL` -> its address, `REDIS_URL password` -> the password) when
    `redis_url` carries a password (`redis://[user]:password@host:port/db`), else two empty dicts (no secret is
    sent to Redis)."""
    try:
        password = urlsplit(redis_url).password
    except ValueError:  # an unparseable URL: redis-py refuses it at connect time, with its own message
        return {}, {}
    if not password:
        return {}, {}
    return {"REDIS_URL": redis_url.rpartition("@")[2]}, {"REDIS_URL password": password}


def refuse_weak_secrets(service: str, local: bool, secrets: Mapping[str, Token], required: Iterable[str] = (),
                        why: str = "") -> None:
    """Outside local mode, raise when a secret is well-known or a required one is empty (`weak_secret_problems`).

    `service` names the service in the message; `why` says why it is not local (e.g. `it listens on 0.0.0.0`).
    Raises: ValueError naming each offending variable, and how to fix it (a random value, e.g. from
    `cua-rollout env` / `make env`, or `CUA_LOCAL_MODE=1` on a machine no one else reaches)."""
    if local:
        return
    problems = weak_secret_problems(secrets, required)
    if problems:
        reason = f" ({why})" if why else ""
        raise ValueError(f"refusing to start the {service} outside local mode{reason}: {'; '.join(problems)}. "
                         f"Set each to a random secret (`make env` writes them to .env), or set "
                         f"{LOCAL_MODE_ENV}=1 if no other machine can reach this one.")


def not_local_reason(declared: bool | None, addresses: Mapping[str, str]) -> str:
    """Why a service is not in local mode: `CUA_LOCAL_MODE=0`, or the first setting (name -> address) that is
    not loopback."""
    if declared is False:
        return f"{LOCAL_MODE_ENV}=0"
    for name, address in addresses.items():
        if not is_loopback(address):
            return f"{name} is {address!r}, not a loopback address"
    return ""


def check_service_secrets(service: str, declared: bool | None, addresses: Mapping[str, str],
                          secrets: Mapping[str, Token], required: Iterable[str] = ()) -> None:
    """`refuse_weak_secrets` for a service whose local mode is `local_mode(declared, addresses.values())`;
    `addresses`: setting name -> the address it holds (what the service listens on or sends secrets to).

    Raises: ValueError naming the variables (see `refuse_weak_secrets`)."""
    local = local_mode(declared, addresses.values())
    refuse_weak_secrets(service, local, secrets, required, "" if local else not_local_reason(declared, addresses))


def secret_or_none(value: SecretStr | None) -> str | None:
    """The text of an optional secret, or None when unset or empty."""
    return reveal(value) or None
