"""Gateway settings (environment variables `GATEWAY_*`); every timeout is explicit, in seconds.

`GATEWAY_REPLICAS` is a comma-separated list of replica base URLs (`http://host:port`); the others are
`GATEWAY_HOST`, `GATEWAY_PORT`, `GATEWAY_HEALTH_INTERVAL_S`, `GATEWAY_HEALTH_TIMEOUT_S`,
`GATEWAY_CONNECT_TIMEOUT_S`, `GATEWAY_READ_TIMEOUT_S`, `GATEWAY_WRITE_TIMEOUT_S`, `GATEWAY_POOL_TIMEOUT_S`,
`GATEWAY_MAX_RETRIES`, `GATEWAY_UNHEALTHY_AFTER`, `GATEWAY_MODEL_VERSION`, `GATEWAY_STICKY_TTL_S`,
`GATEWAY_MAX_SESSIONS`, `GATEWAY_MAX_CONNECTIONS`.
"""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from common.settings import ServiceSettings, comma_list


class GatewaySettings(ServiceSettings):
    """Replicas, timeouts (s), health checking and stickiness of the gateway."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = 8000
    replicas: str = ""
    health_interval_s: float = 2.0
    health_timeout_s: float = 2.0
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 300.0
    write_timeout_s: float = 30.0
    pool_timeout_s: float = 10.0
    max_retries: int = 2
    unhealthy_after: int = 3
    model_version: str = "unknown"
    sticky_ttl_s: float = 3600.0
    max_sessions: int = 100_000
    max_connections: int = 1000

    @property
    def replica_urls(self) -> list[str]:
        """`replicas` split on commas."""
        return [url.rstrip("/") for url in comma_list(self.replicas)]
