"""Sink settings (`SINK_*`, plus REDIS_URL, STORE_URL and S3_* from common)."""

from __future__ import annotations

import os
import socket

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from common.settings import ObjectStoreSettings, ServiceSettings


class SinkSettings(ServiceSettings, ObjectStoreSettings):
    """Consumer name, batch size (entries per stream read), parallel object puts (`workers`, also the
    trajectories written at once), blocking read (ms), claim idle time (ms), delivery limit, metrics port;
    dead-letter stream cap (entries), per-trajectory lock timeout (s), longest back-off during a store
    outage (s)."""

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
