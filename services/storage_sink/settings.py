"""Sink settings (`SINK_*`, plus REDIS_URL, STORE_URL and S3_* from common)."""

from __future__ import annotations

import os
import socket

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from common.eventshards import EventShardSettings, parse_shards
from common.secrets import check_service_secrets, redis_secrets
from common.settings import ObjectStoreSettings, ServiceSettings


class SinkSettings(ServiceSettings, ObjectStoreSettings, EventShardSettings):
    """Consumer name, batch size (entries per stream read), parallel object puts (`workers`, also the
    trajectories written at once), blocking read (ms), claim idle time (ms), delivery limit, metrics port;
    dead-letter stream cap (entries), per-trajectory lock timeout (s), longest back-off during a store
    outage (s). Outside local mode, an `s3://` store's `S3_*` keys must not be empty or well-known
    (`common.secrets`; ValueError naming the variable). `shards` (`SINK_SHARDS`): the event shards this sink
    consumes, of `EVENT_SHARDS` (`common.eventshards.parse_shards`: "" = all, else e.g. `0,2-3`);
    one consumer per shard.
    Blob reconciliation (`services/storage_sink/reconcile.py`): every `reconcile_interval_s` seconds (0: never)
    one sink deletes the blobs last put more than `blob_ttl_s` seconds before both now and the oldest unwritten
    event; `blob_ttl_s` must exceed the longest time from a runner's put to its event's XADD (seconds: the
    put's retries, `RUNNER_BLOB_RETRY_S`, 300 by default, and for evaluation files the env's release plus
    `RUNNER_FINISH_RETRY_S`)."""

    model_config = SettingsConfigDict(env_prefix="SINK_", extra="ignore", populate_by_name=True)

    consumer: str = f"{socket.gethostname()}-{os.getpid()}"
    batch: int = 32
    workers: int = Field(default=8, ge=1)
    block_ms: int = 1000
    claim_idle_ms: int = 60_000
    max_deliveries: int = 5
    dead_letter_max: int = 1000
    lock_timeout_s: float = 30.0
    outage_backoff_max_s: float = 10.0
    metrics_port: int = 9102
    shards: str = ""
    blob_ttl_s: float = Field(default=3600.0, ge=300.0)
    reconcile_interval_s: float = Field(default=600.0, ge=0.0)

    @model_validator(mode="after")
    def _known_shards(self) -> SinkSettings:
        parse_shards(self.shards, self.event_shards)  # raises ValueError naming the bad item
        return self

    @model_validator(mode="after")
    def _no_weak_secrets(self) -> SinkSettings:
        addresses, secrets = self.store_secrets()  # `S3_*` of an s3:// store (`common.secrets`)
        redis_address, redis_password = redis_secrets(self.redis_url)
        check_service_secrets("sink", self.local_mode, {**addresses, **redis_address}, {**secrets, **redis_password},
                              required=secrets)
        return self
