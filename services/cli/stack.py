"""The whole pipeline on one machine (`cua-rollout up`, `make demo`, the end-to-end tests).

Each part is either given (an external service, by URL) or started here as a child process:
Redis (`redis_url`, else a private `redis-server`), the desktop envs (`env_urls`: existing env pods
or OSWorld VMs, DNS names expanded to every address; else N local desktops), the policy servers
(`policy_urls`: OpenAI-compatible servers such as vLLM; else R scripted-policy replicas, the vLLM
stand-in), the object store (`store_url`, else a local directory); always the gateway (balancing
across the policy servers), the producer, K runner workers and the sink. `stop()` ends every child,
by PID, in reverse order, and unregisters the local envs from the env pool.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import redis

from common.dns import expand_urls
from common.envpool import EnvPool, env_id_for_url
from common.polling import GiveUp, free_port, wait_until
from common.processes import parent_pid
from common.redis_server import RedisServerProcess
from common.service import redis_client
from services.cli import cache_ops
from services.cli.processes import ManagedProcess, stop_all
from services.desktop_env.launcher import LocalEnvLauncher

log = logging.getLogger(__name__)


@dataclass
class StackConfig:
    """Sizes, paths and ports of a local stack. Port 0 = pick a free port. `fixtures_dir`: files and
    an `index.json` (URL -> file) copied into the runners' URL cache, so tasks' `download` steps find
    them offline (e.g. `examples/fixtures`). `cache_dir`: that URL cache (None: `<work_dir>/cache`,
    where `cua-rollout cache fill|add` put files by default).

    External parts: `redis_url`; `store_url` (`s3://bucket` with `S3_*` from the environment, or
    `file:///dir`); `policy_urls` (OpenAI-compatible base URLs, replacing the `replicas` scripted
    ones; `policy_latency_ms` applies to scripted replicas only); `env_urls` (OSWorld server base
    URLs, replacing the `envs` local desktops). `display_base`: first X display number of the local
    desktops (None: spread by pid). `desktop_shell`: their `DESKTOP_SHELL` (`gnome`, `openbox`; None: the
    environment's, else GNOME Shell where installed). `settle_max_s`: the runners' `RUNNER_SETTLE_MAX_S`
    (None: default).
    `api_token`: the producer's `PRODUCER_API_TOKEN` (default `CUA_TOKEN`, the token the CLI sends);
    empty: the producer's write routes are open. `runners`: RQ workers, all in one runner process (its
    pool, `RUNNER_WORKERS`: one import of the job code for all of them).
    """

    work_dir: Path
    scripts_dir: Path
    store_url: str | None = None
    redis_url: str | None = None
    envs: int = 2
    replicas: int = 2
    runners: int = 2
    producer_port: int = 0
    gateway_port: int = 0
    width: int = 1920
    height: int = 1080
    desktop_shell: str | None = None
    max_infra_retries: int = 2
    policy_latency_ms: float = 0.0
    extra_env: dict[str, str] = field(default_factory=dict)
    fixtures_dir: Path | None = None
    cache_dir: Path | None = None
    policy_urls: list[str] = field(default_factory=list)
    env_urls: list[str] = field(default_factory=list)
    display_base: int | None = None
    settle_max_s: float | None = None
    api_token: str = field(default_factory=lambda: os.environ.get("CUA_TOKEN", ""))


def runner_env(config: StackConfig, gateway_url: str, cache_dir: Path) -> dict[str, str]:
    """Environment of one runner worker of the stack: gateway, env provider (`static` for given env
    URLs, registered by the stack; `local` otherwise), URL cache, a free metrics port, and
    `RUNNER_SETTLE_MAX_S` when `config.settle_max_s` is set."""
    env = {
        "RUNNER_GATEWAY_URL": gateway_url,
        "RUNNER_ENV_PROVIDER": "static" if config.env_urls else "local",
        "RUNNER_METRICS_PORT": str(free_port()),
        "RUNNER_CACHE_DIR": str(cache_dir),
    }
    if config.settle_max_s is not None:
        env["RUNNER_SETTLE_MAX_S"] = str(config.settle_max_s)
    return env


def runner_store_env(store_url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The runners' step-file store (`RUNNER_STORE_URL`, `common.blobs`): the stack's own store, so screenshots
    go to it and the stream carries their keys. For `s3://`, the runners' keys are `RUNNER_S3_ACCESS_KEY` /
    `RUNNER_S3_SECRET_KEY` of `environ` (the stack's environment) when set, else its `S3_*` ones (one machine,
    one operator). A `RUNNER_STORE_URL` in `environ` wins (empty: PNGs ride in the stream entries, as before)."""
    store_url = environ.get("RUNNER_STORE_URL", store_url)
    env = {"RUNNER_STORE_URL": store_url}
    if store_url.startswith("s3://"):
        for name in ("ACCESS_KEY", "SECRET_KEY"):
            value = environ.get(f"RUNNER_S3_{name}") or environ.get(f"S3_{name}")
            if value:
                env[f"RUNNER_S3_{name}"] = value
    return env


class LocalStack:
    """Starts and stops every service of cua-rollout as local processes. Use as a context manager."""

    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.work_dir = config.work_dir.resolve()
        self.cache_dir = (config.cache_dir or self.work_dir / "cache").resolve()
        self.log_dir = self.work_dir / "logs"
        self.redis_server: RedisServerProcess | None = None
        self.env_launcher: LocalEnvLauncher | None = None
        self.processes: list[ManagedProcess] = []
        self.redis_url = config.redis_url or ""
        self.store_url = config.store_url or f"file://{self.work_dir / 'trajectories'}"
        self.producer_url = ""
        self.gateway_url = ""
        self.env_urls: list[str] = []

    def __enter__(self) -> LocalStack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, module: str, env: dict[str, str], health_url: str | None) -> ManagedProcess:
        process = ManagedProcess(
            name=name,
            module=module,
            env={"REDIS_URL": self.redis_url, "LOG_LEVEL": "INFO", **self.config.extra_env, **env},
            log_path=self.log_dir / f"{name}.log",
            health_url=health_url,
        ).start()
        self.processes.append(process)
        return process

    def start(self, timeout_s: float = 60.0) -> None:
        """Start every part not given as a URL, and poll each service's health.

        Raises: RuntimeError naming what failed; ValueError when the fixtures index is invalid.
        """
        cfg = self.config
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if not self.redis_url:
            self.redis_server = RedisServerProcess(self.work_dir / "redis").start()
            self.redis_url = self.redis_server.url
        if cfg.fixtures_dir is not None:
            cache_ops.seed(cfg.fixtures_dir, self.cache_dir)
        # The desktops boot while the services' processes import (seconds each; overlapping them pays where there
        # are cores to spare: on 2 busy cores the start measured the same, see bench/README.md, demo.py).
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stack-envs") as pool:
            envs = pool.submit(self._start_envs)
            self._spawn_services()  # raising or not, the pool's exit waits for the envs: `stop()` sees the launcher
        envs.result()
        for process in self.processes:
            process.wait_healthy(timeout_s)
        self._wait_for_workers(timeout_s)

    def _spawn_services(self) -> None:
        """Spawn the scripted replicas (unless given), gateway, producer, sink and runners, not waiting
        for them to be healthy."""
        cfg = self.config
        replica_urls = cfg.policy_urls or self._start_scripted_replicas()

        gateway_port = cfg.gateway_port or free_port()
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"
        self._spawn("gateway", "services.model_gateway", {
            "GATEWAY_PORT": str(gateway_port),
            "GATEWAY_REPLICAS": ",".join(replica_urls),
        }, f"{self.gateway_url}/healthz")

        producer_port = cfg.producer_port or free_port()
        self.producer_url = f"http://127.0.0.1:{producer_port}"
        self._spawn("producer", "services.task_producer", {
            "PRODUCER_PORT": str(producer_port),
            "PRODUCER_MAX_INFRA_RETRIES": str(cfg.max_infra_retries),
            "STORE_URL": self.store_url,
            "PRODUCER_GATEWAY_URL": self.gateway_url,  # the dashboard's replica view
            **({"PRODUCER_API_TOKEN": cfg.api_token} if cfg.api_token else {}),
        }, f"{self.producer_url}/healthz")

        self._spawn("sink", "services.storage_sink", {
            "STORE_URL": self.store_url,
            "SINK_METRICS_PORT": str(free_port()),
        }, None)

        if cfg.runners:  # one process for all the workers: it imports the job code once and forks them (pool.py)
            self._spawn("runners", "services.runner", {**runner_env(cfg, self.gateway_url, self.cache_dir),
                                                       **runner_store_env(self.store_url,
                                                                          {**os.environ, **cfg.extra_env}),
                                                       "RUNNER_WORKERS": str(cfg.runners)}, None)

    def _start_envs(self) -> None:
        """Register the given env URLs (DNS names expanded), or start `envs` local desktops and register them."""
        cfg = self.config
        if cfg.env_urls:
            self.env_urls, unresolved = expand_urls(cfg.env_urls)
            if unresolved:
                raise ValueError(f"--env-url host(s) {', '.join(unresolved)} do not resolve")
            provider = "static"
        else:
            self.env_launcher = LocalEnvLauncher(count=cfg.envs, root_dir=self.work_dir / "envs",
                                                 base_display=cfg.display_base, width=cfg.width, height=cfg.height,
                                                 shell=cfg.desktop_shell)
            self.env_urls = self.env_launcher.start()
            provider = "local"
        with redis_client(self.redis_url) as client:
            pool = EnvPool(client)
            for url in self.env_urls:
                pool.register(url, provider=provider)

    def _start_scripted_replicas(self) -> list[str]:
        """Start `replicas` scripted-policy processes (the vLLM stand-in); returns their base URLs."""
        cfg = self.config
        urls = []
        for i in range(cfg.replicas):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            self._spawn(f"policy-{i}", "services.scripted_policy", {
                "POLICY_PORT": str(port),
                "POLICY_SCRIPTS_DIR": str(cfg.scripts_dir.resolve()),
                "POLICY_LATENCY_MS": str(cfg.policy_latency_ms),
            }, f"{url}/health")
            urls.append(url)
        return urls

    def _wait_for_workers(self, timeout_s: float) -> None:
        from rq import Worker

        from common.rqjobs import SERIALIZER

        ours = {p.process.pid for p in self.processes if p.module == "services.runner" and p.process is not None}
        with redis_client(self.redis_url) as client:

            def registered() -> bool:
                for process in self.dead_processes():
                    raise GiveUp(f"{process.name} exited:\n{process.log_tail()}")
                # A shared Redis may list other stacks' workers too: count ours, the runner processes or their
                # forked workers.
                pids = {worker.pid for worker in Worker.all(connection=client, serializer=SERIALIZER) if worker.pid}
                return len([pid for pid in pids if pid in ours or parent_pid(pid) in ours]) >= self.config.runners

            wait_until(registered, timeout_s, f"{self.config.runners} runner workers to register", interval_s=0.1)

    def dead_processes(self) -> list[ManagedProcess]:
        """Children that exited while the stack should be up."""
        return [p for p in self.processes if not p.alive()]

    def _unregister(self, urls: list[str]) -> None:
        try:
            with redis_client(self.redis_url) as client:
                pool = EnvPool(client)
                for url in urls:
                    pool.unregister(env_id_for_url(url))
        except redis.RedisError as exc:  # Redis already gone: nothing left to clean
            log.warning("unregistering the local envs failed: %s", exc)

    def restart_dead(self) -> list[ManagedProcess]:
        """Start again every child that exited (a killed runner, sink, replica...): same module, settings
        and log file. Returns the restarted children."""
        dead = self.dead_processes()
        for process in dead:
            log.warning("%s exited (code %s): restarting it", process.name,
                        process.process.returncode if process.process else None)
            process.start()
        return dead

    def stop(self) -> None:
        """Stop the runners (all at once: they may still publish), then every other child and the envs at
        once (nothing uses an env once the runners are gone), then the private Redis."""
        runners = [p for p in self.processes if p.module == "services.runner"]
        try:
            _stop_tier(runners)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stack-stop-envs") as pool:
                envs = pool.submit(self._stop_envs)
                _stop_tier([p for p in self.processes if p not in runners])
            self.processes.clear()
            envs.result()
        finally:
            if self.redis_server is not None:
                self.redis_server.stop()
                self.redis_server = None

    def _stop_envs(self) -> None:
        if self.env_launcher is not None:
            self._unregister(self.env_urls)  # a shared Redis must not keep envs that are gone
            self.env_launcher.stop()
            self.env_launcher = None


def _stop_tier(processes: list[ManagedProcess]) -> None:
    """`stop_all`, a failure logged (the stack keeps stopping the others)."""
    try:
        stop_all(processes)
    except Exception as exc:
        log.warning("stopping %s failed: %s", ", ".join(p.name for p in processes), exc)
