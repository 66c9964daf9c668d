"""Settings of the scripted policy (the mock of a GPU model server), from environment variables `POLICY_*`.

| env var | default | meaning |
|---|---|---|
| `POLICY_HOST` / `POLICY_PORT` | 127.0.0.1 / 8001 | listen address |
| `POLICY_SCRIPTS_DIR` | unset | directory searched recursively for `*.json` scripts |
| `POLICY_LATENCY_MS` | 0 | simulated model time per completion (milliseconds) |
| `POLICY_MODEL_NAME` | ui-tars-1.5-7b | id served by `/v1/models` and in responses |
| `POLICY_MODEL_VERSION` | v0 | `X-Model-Version` until a reload |
| `POLICY_FAILURE_RATE` | 0 | probability (0..1) that a completion responds with HTTP 500 |
| `POLICY_SEED` | 0 | seed of the failure-injection RNG |
| `POLICY_FAIL_FIRST_N` | 0 | the first N chat requests get HTTP 500 |
| `POLICY_RELOAD_MS` | 0 | simulated weight-load time of every reload endpoint (milliseconds) |
| `POLICY_RELOAD_FAIL_VERSIONS` | empty | comma-separated versions whose load responds with HTTP 500 |
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from common.settings import ServiceSettings


class ScriptedPolicySettings(ServiceSettings):
    """Port, scripts, simulated latency (ms) and failure injection of one scripted replica."""

    model_config = SettingsConfigDict(env_prefix="POLICY_", extra="ignore", populate_by_name=True)

    host: str = "127.0.0.1"
    port: int = 8001
    scripts_dir: Path | None = None
    latency_ms: float = Field(default=0.0, ge=0.0)
    model_name: str = "ui-tars-1.5-7b"
    model_version: str = "v0"
    failure_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = 0
    fail_first_n: int = Field(default=0, ge=0)
    reload_ms: float = Field(default=0.0, ge=0.0)
    reload_fail_versions: str = ""
