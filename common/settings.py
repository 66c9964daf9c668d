"""Settings shared by every service; each service subclasses `ServiceSettings` with its own prefix.

Values come from environment variables (pydantic-settings); every variable is listed in the README.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def load_settings(cls: type[SettingsT]) -> SettingsT:
    """`cls()` read from the environment, for a service's `__main__`.

    Raises: SystemExit with one line per invalid setting (e.g. a weak secret outside local mode, naming the
    variable), instead of a traceback."""
    try:
        return cls()
    except ValidationError as exc:
        lines = [f"{'.'.join(map(str, e['loc'])) or cls.__name__}: {e['msg'].removeprefix('Value error, ')}"
                 for e in exc.errors()]
        raise SystemExit("invalid settings:\n  " + "\n  ".join(lines)) from None


def unprefixed(name: str, default: object) -> Any:
    """A field read from env var `name` whatever the subclass's `env_prefix` (shared settings).

    Typed `Any`, as pydantic's `Field` is, so `x: int = unprefixed(...)` type-checks."""
    return Field(default=default, validation_alias=AliasChoices(name, name.lower()))


def comma_list(value: str) -> list[str]:
    """A comma-separated setting (`"a, b,,c"`) as its items, whitespace stripped and blanks dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


class ServiceSettings(BaseSettings):
    """Base: `REDIS_URL` and `LOG_LEVEL` are read without a prefix by every service (subclasses add a prefix)."""

    #: `hide_input_in_errors`: a validation error never prints the input, which holds the secrets read.
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True, hide_input_in_errors=True)

    redis_url: str = unprefixed("REDIS_URL", "redis://127.0.0.1:6379/0")
    log_level: str = unprefixed("LOG_LEVEL", "INFO")
    #: Seconds a run's Redis keys live after its last rollout ends (and an idempotency key after it is set).
    run_ttl_s: int = unprefixed("RUN_TTL_S", 7 * 24 * 3600)
    #: `CUA_LOCAL_MODE`: True/False declares local mode; None (unset): loopback addresses only (`common.secrets`).
    local_mode: bool | None = unprefixed("CUA_LOCAL_MODE", None)


class ObjectStoreSettings(BaseSettings):
    """Where trajectories go: `STORE_URL` is `file:///abs/dir` (local directory) or `s3://bucket`.

    For S3 (MinIO or any S3 API): `S3_ENDPOINT` (host:port), `S3_ACCESS_KEY`, `S3_SECRET_KEY`,
    `S3_SECURE` (https), `S3_REGION`. Only the sink and the read-only producer views use these. The keys are
    `SecretStr`; their default `minioadmin` (MinIO's) is refused outside local mode (`store_secrets`).
    """

    #: `hide_input_in_errors`: a validation error never prints the input, which holds the secrets read.
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True, hide_input_in_errors=True)

    store_url: str = unprefixed("STORE_URL", "file://./trajectories")
    s3_endpoint: str = unprefixed("S3_ENDPOINT", "127.0.0.1:9000")
    s3_access_key: SecretStr = unprefixed("S3_ACCESS_KEY", SecretStr("minioadmin"))
    s3_secret_key: SecretStr = unprefixed("S3_SECRET_KEY", SecretStr("minioadmin"))
    s3_secure: bool = unprefixed("S3_SECURE", False)
    s3_region: str = unprefixed("S3_REGION", "us-east-1")

    def store_secrets(self) -> tuple[dict[str, str], dict[str, SecretStr]]:
        """For `common.secrets.check_service_secrets`: (`S3_ENDPOINT` -> its address, the `S3_*` keys) when the
        store is `s3://`; two empty dicts for a local directory (no secret is sent anywhere)."""
        if not self.store_url.startswith("s3://"):
            return {}, {}
        return {"S3_ENDPOINT": self.s3_endpoint}, {"S3_ACCESS_KEY": self.s3_access_key,
                                                  "S3_SECRET_KEY": self.s3_secret_key}
