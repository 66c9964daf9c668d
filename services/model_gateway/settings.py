"""Gateway settings (environment variables `GATEWAY_*`); every timeout is explicit, in seconds.

`GATEWAY_REPLICAS` is a comma-separated list of replica base URLs (`http://host:port`); a DNS name stands for one
replica per address (`discovery.py`). See README
("Model gateway") for every variable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from common.auth import reveal
from common.ids import RUN_ID_MAX, RUN_ID_PATTERN
from common.secrets import check_service_secrets, redis_secrets
from common.settings import ServiceSettings, comma_list


class GatewaySettings(ServiceSettings):
    """Replicas, timeouts (s), health checking, routing, reloads and auth of the gateway.

    `admin_token` (`GATEWAY_ADMIN_TOKEN`, the `/admin` routes) and `api_keys` (`GATEWAY_API_KEYS`, comma-separated
    keys of the OpenAI routes) are `SecretStr`; empty leaves those routes open, which only local mode allows:
    outside it (`common.secrets`), an empty or well-known one raises ValueError naming it. `runner_keys`
    (`GATEWAY_RUNNER_KEYS`, comma-separated, `SecretStr`): the runners' keys, accepted wherever an API key is and
    the only keys that may open a session naming a rollout (none set while API keys are: no one may; no key
    at all: the gateway is open). A key in both lists raises ValueError. `replica_api_key`
    (`GATEWAY_REPLICA_API_KEY`, `SecretStr`) is the bearer token the gateway sends to its replicas (vLLM's
    `--api-key`); empty: none. A client's own `Authorization` is never forwarded."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = 8000
    replicas: str = ""
    health_interval_s: float = 2.0
    health_timeout_s: float = 2.0
    #: Read each healthy replica's vLLM `/metrics` (running and waiting requests) after its health probe: the
    #: load that least-loaded routing compares (`engine_load.py`).
    engine_metrics: bool = True
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 280.0
    write_timeout_s: float = 30.0
    pool_timeout_s: float = 10.0
    request_timeout_s: float = Field(default=290.0, gt=0)
    max_retries: int = 2
    unhealthy_after: int = 3
    breaker_cooldown_s: float = Field(default=5.0, ge=0)
    model_version: str = "unknown"
    sticky_ttl_s: float = 600.0
    max_sessions: int = 100_000
    max_connections: int = 1000
    load_epsilon: float = Field(default=0.25, gt=0)
    #: `sticky` (consistent hashing with bounded loads, episodes pinned: routing.py) or `round_robin` (every
    #: request to the next eligible replica, session keys ignored: the baseline of bench/prefix_cache.py).
    routing: Literal["sticky", "round_robin"] = "sticky"
    version_wait_s: float = Field(default=60.0, ge=0)
    reload_method: Literal["vllm_lora", "vllm_sleep", "command"] = "vllm_lora"
    reload_command: str = ""
    #: Sessions (sessions.py): default idle TTL (s), the run of sessions that name none, how long a call's
    #: record may take to publish (s), the expiry sweep's interval (s).
    session_ttl_s: float = Field(default=3600.0, gt=0)
    session_run_id: str = Field(default="sessions", pattern=RUN_ID_PATTERN, max_length=RUN_ID_MAX)
    session_publish_timeout_s: float = Field(default=10.0, gt=0)
    session_sweep_interval_s: float = Field(default=5.0, gt=0)
    admin_token: SecretStr = SecretStr("")
    api_keys: SecretStr = SecretStr("")
    runner_keys: SecretStr = SecretStr("")
    replica_api_key: SecretStr = SecretStr("")

    @property
    def replica_urls(self) -> list[str]:
        """`replicas` split on commas."""
        return [url.rstrip("/") for url in comma_list(self.replicas)]

    @property
    def api_key_list(self) -> list[str]:
        """`api_keys` split on commas (empty: the OpenAI routes are open)."""
        return comma_list(reveal(self.api_keys))

    @property
    def runner_key_list(self) -> list[str]:
        """`runner_keys` split on commas."""
        return comma_list(reveal(self.runner_keys))

    @model_validator(mode="after")
    def _no_weak_secrets(self) -> GatewaySettings:
        redis_address, redis_password = redis_secrets(self.redis_url)
        check_service_secrets("gateway", self.local_mode, {"GATEWAY_HOST": self.host, **redis_address},
                              {"GATEWAY_ADMIN_TOKEN": self.admin_token, "GATEWAY_API_KEYS": self.api_keys,
                               "GATEWAY_RUNNER_KEYS": self.runner_keys,
                               "GATEWAY_REPLICA_API_KEY": self.replica_api_key, **redis_password},
                              required=["GATEWAY_ADMIN_TOKEN", "GATEWAY_API_KEYS"])
        if set(self.runner_key_list) & set(self.api_key_list):
            raise ValueError("GATEWAY_RUNNER_KEYS and GATEWAY_API_KEYS share a key: a runner's key must be its own "
                             "(only it may open sessions naming a rollout)")
        return self
