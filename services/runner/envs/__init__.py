"""Env providers behind one interface (`base.EnvProvider`): `static`, `local`, `kubernetes`.

`make_provider(settings, client)` builds the one `RUNNER_ENV_PROVIDER` names. The runner worker's
main process calls `start()` / `stop()` (upkeep); each rollout attempt calls `acquire()` /
`release()` in the work-horse.
"""

from __future__ import annotations

import redis

from common.envpool import EnvPool
from services.runner.envs.base import EnvProvider, EnvRequest, EnvUnavailable
from services.runner.settings import RunnerSettings

__all__ = ["EnvProvider", "EnvRequest", "EnvUnavailable", "make_provider"]


def make_provider(settings: RunnerSettings, client: redis.Redis) -> EnvProvider:
    """The provider of `settings.env_provider` over the env pool in `client`'s Redis.
    Raises: ValueError for a bad setting (e.g. an unreadable pod template)."""
    pool = EnvPool(client)
    if settings.env_provider == "static":
        from services.runner.envs.static import StaticProvider

        return StaticProvider(pool, settings.lease_ttl_ms, settings.env_url_list, settings.env_flavor,
                              settings.env_resolve_interval_s)
    if settings.env_provider == "local":
        from services.runner.envs.local import LocalProvider

        return LocalProvider(pool, settings.lease_ttl_ms, settings.local_envs, settings.local_envs_dir,
                             settings.env_url_list, settings.env_flavor)
    from services.runner.envs.kubernetes import KubeConfig, KubernetesProvider

    cfg = KubeConfig(namespace=settings.k8s_namespace, template=settings.k8s_pod_template, mode=settings.k8s_mode,
                     pool=settings.k8s_pool, pool_size=settings.k8s_pool_size,
                     ready_timeout_s=settings.k8s_ready_timeout_s, max_pods=settings.k8s_max_pods,
                     creates_per_s=settings.k8s_creates_per_s, upkeep_interval_s=settings.k8s_upkeep_interval_s,
                     flavor=settings.env_flavor, env_port=settings.k8s_env_port, runner_id=settings.id)
    return KubernetesProvider(pool, settings.lease_ttl_ms, client, cfg)
