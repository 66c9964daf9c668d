"""Producer settings (environment variables, see docs/settings.md)."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from common.secrets import check_service_secrets, redis_secrets
from common.settings import ObjectStoreSettings, ServiceSettings


class ProducerSettings(ServiceSettings, ObjectStoreSettings):
    """`PRODUCER_HOST`, `PRODUCER_PORT`; job limits; plus REDIS_URL / STORE_URL / S3_* from common.

    `PRODUCER_JOB_TIMEOUT_S`: RQ job timeout of one rollout (s). `PRODUCER_MAX_INFRA_RETRIES`: RQ
    retries of a rollout that failed for infrastructure reasons, at `PRODUCER_RETRY_INTERVALS_S`.
    `PRODUCER_API_TOKEN`: bearer token every `/v1` and `/ui` route requires (`common.auth`); empty: they are
    open (a warning is logged at start), which only local mode allows (`common.secrets`: outside it, an empty or
    well-known `PRODUCER_API_TOKEN`, `PRODUCER_GATEWAY_ADMIN_TOKEN` or `S3_*` key raises ValueError naming it).
    Limits (a 422 names the one exceeded): `PRODUCER_MAX_ROLLOUTS_PER_RUN` (tasks x rollouts_per_task
    of one request), `PRODUCER_MAX_INSTRUCTION_CHARS` (each task's instruction, copied into every job).
    `PRODUCER_ENQUEUE_BATCH`: jobs enqueued per Redis pipeline. `PRODUCER_GATEWAY_URL` /
    `PRODUCER_GATEWAY_ADMIN_TOKEN`: the gateway the dashboard shows replicas of, and its admin token.
    The live dashboard (docs/dashboard.md): `PRODUCER_LIVE_INTERVAL_S` between two samples of Redis (s),
    `PRODUCER_LIVE_RUNS` newest runs it shows, `PRODUCER_SERIES_INTERVAL_S` between two points of the last
    hour's series (s), `PRODUCER_PROMETHEUS_URL`: a Prometheus to read that series from instead of Redis.
    """

    model_config = SettingsConfigDict(env_prefix="PRODUCER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8080
    job_timeout_s: int = 3600
    result_ttl_s: int = 7 * 24 * 3600
    max_infra_retries: int = 2
    retry_intervals_s: list[int] = [5, 15, 30]
    #: Model gateway whose replicas and versions the dashboard (`/ui`) shows; empty: not shown.
    gateway_url: str = ""
    #: Bearer token of the gateway's admin routes (`GATEWAY_ADMIN_TOKEN`), for the dashboard's replica view.
    gateway_admin_token: SecretStr | None = None
    api_token: SecretStr = SecretStr("")
    live_interval_s: float = Field(default=1.0, gt=0, le=60)
    live_runs: int = Field(default=20, ge=1, le=200)
    series_interval_s: float = Field(default=10.0, ge=1, le=600)
    prometheus_url: str = ""
    enqueue_batch: int = Field(default=500, ge=1)
    max_rollouts_per_run: int = Field(default=10_000, ge=1)
    max_instruction_chars: int = Field(default=20_000, ge=1)

    @model_validator(mode="after")
    def _no_weak_secrets(self) -> ProducerSettings:
        store_addresses, store_secrets = self.store_secrets()
        redis_address, redis_password = redis_secrets(self.redis_url)
        check_service_secrets(
            "producer", self.local_mode, {"PRODUCER_HOST": self.host, **store_addresses, **redis_address},
            {"PRODUCER_API_TOKEN": self.api_token, "PRODUCER_GATEWAY_ADMIN_TOKEN": self.gateway_admin_token,
             **store_secrets, **redis_password},
            required=["PRODUCER_API_TOKEN", *store_secrets])
        return self
