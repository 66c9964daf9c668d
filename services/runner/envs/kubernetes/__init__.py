"""The `kubernetes` env provider: env pods from a template, per rollout or as a warm pool (see
`provider`), kept up by `keeper.PoolKeeper`, on the official `kubernetes` client."""

from services.runner.envs.kubernetes.provider import KubeConfig, KubernetesProvider

__all__ = ["KubeConfig", "KubernetesProvider"]
