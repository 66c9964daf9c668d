"""`local` provider: desktop env processes on this machine (`services.desktop_env.launcher`).

With `count` > 0 the runner worker starts that many envs itself at start (sandboxed when it can,
see the launcher), registers them, and stops and unregisters them at stop. With 0, the envs are
registered by whoever started them (`cua-rollout up`, `make demo`, the tests) and any `urls` given
are registered as they are.
"""

from __future__ import annotations

from pathlib import Path

from common.envpool import EnvPool, env_id_for_url
from services.desktop_env.launcher import LocalEnvLauncher
from services.runner.envs.base import PooledProvider


class LocalProvider(PooledProvider):
    """Starts `count` local envs of `width` x `height` pixels under `root_dir` (or registers `urls`)."""

    name = "local"

    def __init__(self, pool: EnvPool, lease_ttl_ms: int, count: int, root_dir: Path, urls: list[str],
                 flavor: str, width: int = 1920, height: int = 1080) -> None:
        super().__init__(pool, lease_ttl_ms)
        if count < 0:
            raise ValueError(f"RUNNER_LOCAL_ENVS must be >= 0, got {count}")
        self.count, self.root_dir, self.urls, self.flavor = count, root_dir, urls, flavor
        self.width, self.height = width, height
        self.launcher: LocalEnvLauncher | None = None
        self._started: list[str] = []

    def start(self) -> None:
        """Start the envs (if `count`) and register them with the given `urls`.
        Raises: RuntimeError when an env does not become healthy (see `LocalEnvLauncher.start`)."""
        urls = list(self.urls)
        if self.count:
            self.launcher = LocalEnvLauncher(self.count, self.root_dir, width=self.width, height=self.height)
            self._started = self.launcher.start()
            urls += self._started
        for url in urls:
            self.pool.register(url, provider=self.name, flavor=self.flavor)

    def stop(self) -> None:
        """Unregister and stop the envs this provider started."""
        for url in self._started:
            self.pool.unregister(env_id_for_url(url))
        self._started = []
        if self.launcher is not None:
            self.launcher.stop()
            self.launcher = None
