"""Runner settings (environment variables with prefix `RUNNER_`, plus REDIS_URL; see README)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator
from pydantic_settings import SettingsConfigDict

from common.settings import ServiceSettings, comma_list


class RunnerSettings(ServiceSettings):
    """How a runner worker reaches the gateway and envs, and its limits.

    Durations: `*_s` seconds, `*_ms` milliseconds. `RUNNER_ENV_URLS` is a comma-separated list of
    OSWorld server base URLs registered by the `static` provider at worker start.
    """

    model_config = SettingsConfigDict(env_prefix="RUNNER_", extra="ignore", populate_by_name=True)

    gateway_url: str = "http://127.0.0.1:8000"
    env_provider: str = "static"
    env_urls: str = ""
    lease_ttl_ms: int = 30_000
    lease_wait_s: float = 600.0
    client_password: str = "password"
    cache_dir: Path = Path("./.cache/osworld")
    model_timeout_s: float = 300.0
    model_connect_timeout_s: float = 5.0
    max_parse_retries: int = 2
    wait_action_s: float = 1.0
    settle_after_action_s: float = 0.0
    stream_backlog_limit: int = 10_000
    backpressure_wait_s: float = 300.0
    metrics_port: int = 9101
    queues: str = ""
    with_scheduler: bool = True
    burst: bool = False

    @field_validator("env_provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in ("static", "local", "kubernetes"):
            raise ValueError(f"RUNNER_ENV_PROVIDER must be static, local or kubernetes, got {value!r}")
        return value

    @property
    def env_url_list(self) -> list[str]:
        """`env_urls` split on commas, blanks dropped."""
        return comma_list(self.env_urls)
