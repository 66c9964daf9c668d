"""The whole pipeline on one machine (`cua-rollout up`, `make demo`, the end-to-end tests).

Redis (from REDIS_URL or a private `redis-server`), N desktop envs (`local` provider), R scripted
policy replicas (the vLLM stand-in), the gateway, the producer, K runner workers and the sink, each a
child process; `stop()` ends them all, by PID, in reverse order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from common.envpool import EnvPool
from common.polling import GiveUp, free_port, wait_until
from common.redis_server import RedisServerProcess
from common.service import redis_client
from services.cli.processes import ManagedProcess
from services.desktop_env.launcher import LocalEnvLauncher

log = logging.getLogger(__name__)


@dataclass
class StackConfig:
    """Sizes, paths and ports of a local stack. Port 0 = pick a free port."""

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
    max_infra_retries: int = 2
    policy_latency_ms: float = 0.0
    extra_env: dict[str, str] = field(default_factory=dict)


class LocalStack:
    """Starts and stops every service of cua-rollout as local processes. Use as a context manager."""

    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.work_dir = config.work_dir.resolve()
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
        """Start everything and poll each service's health. Raises: RuntimeError naming what failed."""
        cfg = self.config
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if not self.redis_url:
            self.redis_server = RedisServerProcess(self.work_dir / "redis").start()
            self.redis_url = self.redis_server.url

        self.env_launcher = LocalEnvLauncher(
            count=cfg.envs, root_dir=self.work_dir / "envs", width=cfg.width, height=cfg.height
        )
        self.env_urls = self.env_launcher.start()
        with redis_client(self.redis_url) as client:
            pool = EnvPool(client)
            for url in self.env_urls:
                pool.register(url, provider="local")

        replica_urls = []
        for i in range(cfg.replicas):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            self._spawn(f"policy-{i}", "services.scripted_policy", {
                "POLICY_PORT": str(port),
                "POLICY_SCRIPTS_DIR": str(cfg.scripts_dir.resolve()),
                "POLICY_LATENCY_MS": str(cfg.policy_latency_ms),
            }, f"{url}/health")
            replica_urls.append(url)

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
        }, f"{self.producer_url}/healthz")

        self._spawn("sink", "services.storage_sink", {
            "STORE_URL": self.store_url,
            "SINK_METRICS_PORT": str(free_port()),
        }, None)

        for i in range(cfg.runners):
            self._spawn(f"runner-{i}", "services.runner", {
                "RUNNER_GATEWAY_URL": self.gateway_url,
                "RUNNER_ENV_PROVIDER": "local",
                "RUNNER_METRICS_PORT": str(free_port()),
                "RUNNER_CACHE_DIR": str(self.work_dir / "cache"),
            }, None)

        for process in self.processes:
            process.wait_healthy(timeout_s)
        self._wait_for_workers(timeout_s)

    def _wait_for_workers(self, timeout_s: float) -> None:
        from rq import Worker

        with redis_client(self.redis_url) as client:

            def registered() -> bool:
                for process in self.dead_processes():
                    raise GiveUp(f"{process.name} exited:\n{process.log_tail()}")
                return len(Worker.all(connection=client)) >= self.config.runners

            wait_until(registered, timeout_s, f"{self.config.runners} runner workers to register", interval_s=0.1)

    def dead_processes(self) -> list[ManagedProcess]:
        """Children that exited while the stack should be up."""
        return [p for p in self.processes if not p.alive()]

    def stop(self) -> None:
        """Stop every child in reverse start order, then the envs and the private Redis."""
        for process in reversed(self.processes):
            try:
                process.stop()
            except Exception as exc:  # keep stopping the others
                log.warning("stopping %s failed: %s", process.name, exc)
        self.processes.clear()
        if self.env_launcher is not None:
            self.env_launcher.stop()
            self.env_launcher = None
        if self.redis_server is not None:
            self.redis_server.stop()
            self.redis_server = None
