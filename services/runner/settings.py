"""Runner settings (environment variables with prefix `RUNNER_`, plus REDIS_URL; see docs/settings.md)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from common.envprotocol import parse_flavor
from common.eventshards import EventShardSettings
from common.secrets import check_service_secrets, redis_secrets
from common.settings import ServiceSettings, comma_list
from services.runner.first_screen import FirstScreenConfig
from services.runner.settle import SettleConfig

#: Rollouts an inline worker runs at once when `RUNNER_CONCURRENCY` is unset (bench/README.md,
#: `## runner_concurrency.py`: ~14 MiB of RSS each; beyond 8 the worker's CPU per step grows, steps/s does not).
DEFAULT_INLINE_CONCURRENCY = 8


class RunnerSettings(ServiceSettings, EventShardSettings):
    """How a runner worker reaches the gateway and envs, and its limits.

    `gateway_api_key`: the bearer token the gateway expects on its OpenAI routes (`GATEWAY_API_KEYS`); outside
    local mode (`common.secrets`: a gateway that is not on loopback) a well-known one raises ValueError.
    Durations: `*_s` seconds, `*_ms` milliseconds. `RUNNER_ENV_URLS` is a comma-separated list of
    OSWorld server base URLs registered by the `static` provider at worker start; a DNS name there
    is re-resolved every `env_resolve_interval_s` (0: once). `env_flavor` is the flavor of those
    envs and of `kubernetes` pods (`common.envprotocol`). The `k8s_*` settings drive the `kubernetes`
    provider (`services/runner/envs/kubernetes`); `id` names this runner in Redis and pod labels
    (default `<hostname>-<pid>` of the worker, inherited by its work-horses).
    After each step's actions the runner waits for the screen to settle (`services/runner/settle.py`):
    unchanged for `settle_quiet_s` after a change, or no change at all for `settle_no_change_s`, at
    most `settle_max_s` (OSWorld's fixed 2 s; 0 turns the wait off), grabbing a frame every
    `settle_interval_s`.
    Before the first observation the runner waits for the windows the task's setup started
    (`services/runner/first_screen.py`): at most `first_screen_max_s` (OSWorld's 60 s; 0 turns it
    off), ended by `first_screen_quiet_s` unchanged once they are drawn.
    Reliability (see docs/guarantees.md): runners publish while the unpersisted event stream holds
    fewer than `stream_backlog_bytes` bytes (`MEMORY USAGE`; per stream with `EVENT_SHARDS` above 1,
    `common.eventshards`), waiting up to `backpressure_wait_s`;
    the end event and final record are retried through Redis errors for `finish_retry_s`; a running
    job's work-horse renews a heartbeat key with TTL `heartbeat_ttl_s`, and each worker's reaper
    (every `reaper_interval_s`) hands a job whose heartbeat has been gone for `reaper_grace_s` back
    to RQ (retry or failure) and re-admits unhealthy envs that answer again (every `env_recheck_s`);
    a worker that loses Redis reconnects for up to `redis_reconnect_s` before exiting; RQ's own
    maintenance (registries, taking over a dead worker's scheduler) runs every `maintenance_interval_s`.
    `execution` is how a worker runs a rollout: `fork` (default; RQ's forking worker, one work-horse
    process per rollout: isolated, killed on timeout) or `inline` (RQ's `SimpleWorker`: the worker runs
    it itself, keeping its connections across rollouts; 25-70 ms less CPU per rollout by host, for
    envs whose steps take milliseconds; a crash of a rollout is then a crash of its worker, which
    another worker's reaper recovers like any dead worker).
    A reply the agent cannot parse is sampled again up to `max_parse_retries` times, at the run's
    sampling with the temperature raised to at least `resample_temperature` (0.7: at the default
    temperature 0 vLLM decodes greedily and returns the same reply again, so a re-sample needs
    randomness to differ; 0.7 is the temperature Qwen2.5's instruct models ship as their default and
    within OSWorld's agents' own range (PromptAgent 0.5, its run.py 1.0): enough to leave a bad token
    choice while keeping the format the model learned). When no sample parses, the step runs what
    the agent's OSWorld counterpart does with such a reply (no action, or UI-TARS' `DONE`), never a
    `FAIL` (docs/scoring.md).
    `token_carry` (default on): a request whose history the previous request and reply extend is sent as token
    ids, the previous prompt and the sampled ids carried forward (`services/runner/token_carry.py`), so each
    prompt extends the one before; replicas without vLLM's `/tokenize` (the scripted policy) get chat messages.
    Step files (the block so marked): `store_url` (`RUNNER_STORE_URL`: `s3://bucket` or `file://dir`, the
    sink's store; empty: a step's PNG rides in its stream entry, as before) is where the runner puts each
    screenshot and evaluation file under its content address (`common.blobs`) before publishing the event,
    which then carries the key. With `s3://` the runner uses its own write-only credential
    (`RUNNER_S3_ACCESS_KEY`, `RUNNER_S3_SECRET_KEY`: PutObject on `{bucket}/_blobs/*` only,
    `deploy/policies/`), never the sink's `S3_ACCESS_KEY`; endpoint, TLS and region are the shared `S3_*`
    unless `RUNNER_S3_*` say otherwise. A put failing with transport or 5xx errors is retried for
    `blob_retry_s` seconds (300, as long as `backpressure_wait_s`: a store outage stalls the runners as the
    sink's backlog did when PNGs went through the stream), then the attempt ends as `env_error`.
    `concurrency`: rollouts one worker runs at once (`services/runner/threaded.py`). Above 1 (only with
    `execution=inline`: a forking worker runs one work-horse at a time) the worker's main thread dequeues
    while that many threads of the worker process run rollouts, each with its own lease, model session and
    cancellation; a crash inside one records its `runner_error` and leaves the others running. None (unset):
    1 with `fork`, `DEFAULT_INLINE_CONCURRENCY` with `inline` (chosen from `bench/runner_concurrency.py`, see
    bench/README.md).
    `workers`: RQ workers in this runner process (`services/runner/pool.py`): above 1, the process imports
    the job code once and forks that many workers, which share it copy-on-write; each has its own id
    (`<id>-w<slot>`), Redis connections, env provider and reaper.
    """

    model_config = SettingsConfigDict(env_prefix="RUNNER_", extra="ignore", populate_by_name=True)

    gateway_url: str = "http://127.0.0.1:8000"
    gateway_api_key: SecretStr | None = None
    execution: Literal["fork", "inline"] = "fork"
    env_provider: str = "static"
    env_urls: str = ""
    lease_ttl_ms: int = 30_000
    lease_wait_s: float = 600.0
    client_password: str = "password"
    cache_dir: Path = Path("./.cache/osworld")
    model_timeout_s: float = 300.0
    model_connect_timeout_s: float = 5.0
    max_parse_retries: int = Field(default=2, ge=0)
    resample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    wait_action_s: float = 1.0
    token_carry: bool = True
    #: External agents (services/runner/external.py): a run's `agent_options.command` name -> the command line
    #: the runner starts (JSON object in `RUNNER_EXTERNAL_AGENTS`; split like a shell, never run by one).
    external_agents: dict[str, str] = Field(default_factory=dict)
    #: Run external agents without their bubblewrap sandbox when it cannot be built (`RUNNER_EXTERNAL_UNSANDBOXED`;
    #: default False: the episode is a setup_error naming why). services/runner/external_sandbox.py.
    external_unsandboxed: bool = False
    settle_max_s: float = Field(default=2.0, ge=0.0)
    settle_quiet_s: float = Field(default=0.5, ge=0.0)
    settle_no_change_s: float = Field(default=2.0, ge=0.0)  # nothing shown yet: OSWorld's fixed 2 s
    settle_interval_s: float = Field(default=0.05, ge=0.0)
    first_screen_max_s: float = Field(default=60.0, ge=0.0)  # OSWorld's sleep after reset
    first_screen_quiet_s: float = Field(default=1.0, ge=0.0)
    stream_backlog_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    backpressure_wait_s: float = 300.0
    env_flavor: str = "desktop_env"
    env_resolve_interval_s: float = Field(default=10.0, ge=0.0)
    local_envs: int = Field(default=0, ge=0)
    local_envs_dir: Path = Path("./.cache/envs")
    id: str = ""
    k8s_namespace: str = "cua-envs"
    k8s_pod_template: Path = Path("deploy/k8s/env-pod-template.yaml")
    k8s_mode: str = "per-rollout"
    k8s_pool: str = "default"
    k8s_pool_size: int = Field(default=4, ge=0)
    k8s_ready_timeout_s: float = Field(default=300.0, gt=0.0)
    k8s_max_pods: int = Field(default=200, ge=1)
    k8s_creates_per_s: float = Field(default=5.0, gt=0.0)
    k8s_upkeep_interval_s: float = Field(default=2.0, gt=0.0)
    k8s_env_port: int = 5000
    finish_retry_s: float = Field(default=120.0, ge=0.0)
    heartbeat_ttl_s: float = Field(default=15.0, gt=0.0)
    reaper_interval_s: float = Field(default=5.0, gt=0.0)
    reaper_grace_s: float = Field(default=5.0, ge=0.0)
    env_recheck_s: float = Field(default=15.0, gt=0.0)
    redis_reconnect_s: float = Field(default=600.0, ge=0.0)
    maintenance_interval_s: int = Field(default=60, ge=1)
    metrics_port: int = 9101
    concurrency: int | None = Field(default=None, ge=1)
    workers: int = Field(default=1, ge=1)
    queues: str = ""
    with_scheduler: bool = True
    burst: bool = False

    # -- Step files to the object store (issue 27; SPEC section 7): see the docstring. -----------------------
    store_url: str = Field(default="", validation_alias=AliasChoices("RUNNER_STORE_URL", "runner_store_url"))
    s3_endpoint: str = Field(default="127.0.0.1:9000", validation_alias=AliasChoices(
        "RUNNER_S3_ENDPOINT", "S3_ENDPOINT", "runner_s3_endpoint"))
    s3_secure: bool = Field(default=False, validation_alias=AliasChoices("RUNNER_S3_SECURE", "S3_SECURE"))
    s3_region: str = Field(default="us-east-1", validation_alias=AliasChoices("RUNNER_S3_REGION", "S3_REGION"))
    s3_access_key: SecretStr = Field(default=SecretStr(""), validation_alias=AliasChoices(
        "RUNNER_S3_ACCESS_KEY", "runner_s3_access_key"))
    s3_secret_key: SecretStr = Field(default=SecretStr(""), validation_alias=AliasChoices(
        "RUNNER_S3_SECRET_KEY", "runner_s3_secret_key"))
    blob_retry_s: float = Field(default=300.0, ge=0.0)

    @model_validator(mode="after")
    def _store_credential(self) -> RunnerSettings:
        """`RUNNER_STORE_URL` is empty, `file://...` or `s3://bucket`; for `s3://` outside local mode the runner's
        own keys must be set and not well-known (`common.secrets`). Raises: ValueError naming the variable."""
        if self.store_url and not self.store_url.startswith(("file://", "s3://")):
            raise ValueError(f"RUNNER_STORE_URL must be file://DIR, s3://BUCKET or empty, got {self.store_url!r}")
        if self.store_url.startswith("s3://"):
            keys = {"RUNNER_S3_ACCESS_KEY": self.s3_access_key, "RUNNER_S3_SECRET_KEY": self.s3_secret_key}
            check_service_secrets("runner", self.local_mode, {"RUNNER_S3_ENDPOINT": self.s3_endpoint}, keys,
                                  required=keys)
        return self
    # -- end of the step-file block ------------------------------------------------------------------------

    @field_validator("env_provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in ("static", "local", "kubernetes"):
            raise ValueError(f"RUNNER_ENV_PROVIDER must be static, local or kubernetes, got {value!r}")
        return value

    @field_validator("env_flavor")
    @classmethod
    def _known_flavor(cls, value: str) -> str:
        return parse_flavor(value).value

    @field_validator("k8s_mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        if value not in ("per-rollout", "warm-pool"):
            raise ValueError(f"RUNNER_K8S_MODE must be per-rollout or warm-pool, got {value!r}")
        return value

    @model_validator(mode="after")
    def _concurrency_fits_execution(self) -> RunnerSettings:
        if self.execution == "fork" and self.concurrency not in (None, 1):
            raise ValueError(f"RUNNER_CONCURRENCY={self.concurrency} needs RUNNER_EXECUTION=inline: a forking worker "
                             "runs one work-horse at a time (RUNNER_WORKERS runs more workers)")
        return self

    @property
    def rollouts_at_once(self) -> int:
        """Rollouts one worker runs at once: `concurrency`, or its default for `execution` (see the class)."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if self.execution == "fork" else DEFAULT_INLINE_CONCURRENCY

    @model_validator(mode="after")
    def _runner_id(self) -> RunnerSettings:
        if not self.id:
            self.id = f"{socket.gethostname()}-{os.getpid()}"
        return self

    @model_validator(mode="after")
    def _no_weak_secrets(self) -> RunnerSettings:
        redis_address, redis_password = redis_secrets(self.redis_url)
        check_service_secrets("runner", self.local_mode, {"RUNNER_GATEWAY_URL": self.gateway_url, **redis_address},
                              {"RUNNER_GATEWAY_API_KEY": self.gateway_api_key, **redis_password})
        return self

    @property
    def settle_config(self) -> SettleConfig:
        """The screen-settle parameters of these settings."""
        return SettleConfig(quiet_s=self.settle_quiet_s, no_change_s=self.settle_no_change_s,
                            max_s=self.settle_max_s, interval_s=self.settle_interval_s)

    @property
    def first_screen_config(self) -> FirstScreenConfig:
        """The parameters of the wait before the first observation."""
        return FirstScreenConfig(max_s=self.first_screen_max_s, quiet_s=self.first_screen_quiet_s)

    @property
    def env_url_list(self) -> list[str]:
        """`env_urls` split on commas, blanks dropped."""
        return comma_list(self.env_urls)
