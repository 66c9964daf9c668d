"""`kubernetes` provider: env pods created from a template, per rollout or as a warm pool.

- `per-rollout`: `acquire` takes the lease of a fresh pod name first (so a pod never exists without
  a lease: the reaper deletes any pod whose lease is gone), creates the pod within the creation
  caps, watches it to `Ready` plus the env's health endpoint, registers it as a dedicated env and
  returns its lease; `release` unregisters and deletes it.
- `warm-pool`: `PoolKeeper` (the runner main process) keeps `pool_size` ready pods registered;
  `acquire` leases one from the registry like any pooled env (an `osworld_vm` pod becomes dedicated
  to its leaser: used, never leased again); `release` resets a `desktop_env` in place and deletes an
  `osworld_vm` (or one that fails its reset), which the keeper replaces.

A pod that will not start surfaces as `EnvUnavailable` (`env_init_failed`) with the Kubernetes
reason; while an env is leased its pod is watched, and `explain()` gives the reason of a failure
mid-episode (eviction, OOMKilled, deletion) for the rollout's `env_error`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import redis
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.config import ConfigException

from common.env_client import DesktopEnvClient
from common.envpool import EnvInfo, EnvPool, Lease, LeaseKeeper
from common.envprotocol import spec
from services.runner.envs.base import EnvRequest, EnvUnavailable, PooledProvider
from services.runner.envs.kubernetes import podspec
from services.runner.envs.kubernetes.caps import CreationCaps
from services.runner.envs.kubernetes.cluster import (
    TRANSPORT_ERRORS,
    PodFailed,
    PodWatcher,
    core_api,
    delete_pod,
    read_pod,
    wait_ready,
)
from services.runner.envs.kubernetes.podstate import classify

if TYPE_CHECKING:
    from services.runner.envs.kubernetes.keeper import PoolKeeper

log = logging.getLogger(__name__)

#: Seconds `explain()` waits for the pod's watch to report why its env failed.
EXPLAIN_WAIT_S = 5.0
#: Annotation holding the env flavor of a pod (the keeper registers adopted pods with it).
FLAVOR_ANNOTATION = "cua-rollout/flavor"


@dataclass(frozen=True)
class KubeConfig:
    """The provider's settings (from `RUNNER_K8S_*`, see `RunnerSettings`): namespace, pod template
    file, mode, pool name and size, readiness deadline (s), caps, upkeep interval (s), flavor,
    default env port, and this runner's id."""

    namespace: str
    template: Path
    mode: str
    pool: str
    pool_size: int
    ready_timeout_s: float
    max_pods: int
    creates_per_s: float
    upkeep_interval_s: float
    flavor: str
    env_port: int
    runner_id: str


class KubernetesProvider(PooledProvider):
    """Env pods on a Kubernetes cluster through the official client (`api`: a `CoreV1Api`, default
    from `KUBECONFIG` or the in-cluster account). Its envs are registered with provider
    `kubernetes:<namespace>/<pool>`, so pools sharing a Redis keep to their own envs.
    Raises ValueError at construction for a bad template file."""

    name = "kubernetes"

    def __init__(self, pool: EnvPool, lease_ttl_ms: int, redis_client: redis.Redis, cfg: KubeConfig,
                 api: client.CoreV1Api | None = None) -> None:
        super().__init__(pool, lease_ttl_ms)
        self.name = f"kubernetes:{cfg.namespace}/{cfg.pool}"
        self.lease_from = self.name  # its warm pool only: it deletes what it discards
        self.cfg = cfg
        self.redis = redis_client
        self.template = podspec.PodTemplate(cfg.template, cfg.env_port)
        self._api = api
        self._watchers: dict[str, PodWatcher] = {}
        self._keeper: PoolKeeper | None = None

    @property
    def api(self) -> client.CoreV1Api:
        """The `CoreV1Api` (loaded on first use)."""
        if self._api is None:
            self._api = core_api()
        return self._api

    @property
    def caps(self) -> CreationCaps:
        """The namespace's creation caps."""
        return CreationCaps(self.redis, self.api, self.cfg.namespace, self.cfg.max_pods, self.cfg.creates_per_s)

    # -- upkeep (runner main process) ---------------------------------------------------------
    def start(self) -> None:
        """Start the `PoolKeeper` (leadership, reaper, and in `warm-pool` mode the pool).
        Raises: RuntimeError when no cluster configuration is found."""
        from services.runner.envs.kubernetes.keeper import PoolKeeper

        try:
            self.api  # noqa: B018 - load the configuration now: a worker without one must not start
        except ConfigException as exc:
            raise RuntimeError("RUNNER_ENV_PROVIDER=kubernetes needs KUBECONFIG (a kubeconfig file) or an "
                               f"in-cluster service account: {exc}") from exc

        keeper = PoolKeeper(self)
        keeper.start()
        self._keeper = keeper

    def stop(self) -> None:
        """Stop the keeper (pods stay: another runner's keeper takes the pool over)."""
        if self._keeper is not None:
            self._keeper.stop()
        self._keeper = None

    # -- pods ---------------------------------------------------------------------------------
    def create_pod(self, name: str, mode: str, request: EnvRequest | None = None) -> None:
        """Create pod `name` from the template with our labels. Raises: ApiException."""
        labels, annotations = podspec.pod_labels(
            mode, self.cfg.pool, self.cfg.runner_id,
            run_id=request.run_id if request else "", rollout_id=request.rollout_id if request else "",
            owner=request.owner if request else "")
        annotations[FLAVOR_ANNOTATION] = self.cfg.flavor
        manifest = self.template.render(name, self.cfg.namespace, labels, annotations)
        self.api.create_namespaced_pod(self.cfg.namespace, manifest, _request_timeout=30)

    def remove(self, env_id: str) -> None:
        """Unregister env `env_id` and delete its pod; an API failure is logged (the reaper retries)."""
        self.pool.unregister(env_id)
        try:
            delete_pod(self.api, self.cfg.namespace, env_id)
        except (ApiException, *TRANSPORT_ERRORS) as exc:
            log.warning("deleting pod %s failed (the reaper will retry): %s", env_id, exc)

    def wait_ready(self, name: str) -> str:
        """The pod's env URL once it serves. Raises: PodFailed with the Kubernetes reason."""
        return wait_ready(self.api, self.cfg.namespace, name, self.template.port, self.cfg.flavor,
                          self.cfg.ready_timeout_s)

    # -- leasing (work-horse) -----------------------------------------------------------------
    def acquire(self, request: EnvRequest, wait_s: float) -> Lease:
        """A leased env pod: from the warm pool, or (per-rollout) a new pod for this attempt.
        Raises: EnvUnavailable with the Kubernetes reason (`env_init_failed`)."""
        if self.cfg.mode == podspec.WARM_POOL:
            lease = super().acquire(request, wait_s)
            if spec(lease.env.flavor).reset_strategy == "replace":
                # Used from now on: dedicated, so never leased again, even if this owner dies before
                # `release` (the keeper deletes a dedicated warm pod whose lease is gone).
                info = self.pool.register(lease.env.url, self.name, env_id=lease.env.env_id, flavor=lease.env.flavor,
                                          dedicated=True)
                lease = Lease(info, lease.owner, lease.ttl_ms)
        else:
            lease = self._new_pod_lease(request, wait_s)
        self._watchers[lease.env.env_id] = PodWatcher(self.api, self.cfg.namespace, lease.env.env_id)
        return lease

    def _new_pod_lease(self, request: EnvRequest, wait_s: float) -> Lease:
        name = podspec.new_pod_name(podspec.PER_ROLLOUT, self.cfg.pool)
        claim = Lease(EnvInfo(name, "", self.name, self.cfg.flavor, dedicated=True), request.owner, self.lease_ttl_ms)
        if not self.pool.claim(name, request.owner, self.lease_ttl_ms):
            raise EnvUnavailable(f"pod name {name} is already leased")
        try:
            with LeaseKeeper(self.pool, claim):  # renewed while the pod starts (image pulls take minutes)
                url = self._start_pod(name, request, wait_s)
        except BaseException:
            self.remove(name)
            self.pool.release(claim)
            raise
        info = self.pool.register(url, self.name, env_id=name, flavor=self.cfg.flavor, dedicated=True)
        return Lease(info, request.owner, self.lease_ttl_ms)

    def _start_pod(self, name: str, request: EnvRequest, wait_s: float) -> str:
        reason = self.caps.wait_slot(time.monotonic() + wait_s)
        if reason is not None:
            raise EnvUnavailable(f"no env pod created within {wait_s:.0f}s: {reason}")
        try:
            self.create_pod(name, podspec.PER_ROLLOUT, request)
            return self.wait_ready(name)
        except PodFailed as exc:
            raise EnvUnavailable(f"env pod {name} did not start: {exc.reason}") from exc
        except ApiException as exc:
            raise EnvUnavailable(f"Kubernetes API refused env pod {name}: {exc.status} {exc.reason}: "
                                 f"{(exc.body or '')[:300]}") from exc
        except TRANSPORT_ERRORS as exc:
            raise EnvUnavailable(f"Kubernetes API unreachable creating env pod {name}: {exc}") from exc

    def release(self, lease: Lease, env: DesktopEnvClient) -> None:
        """Stop watching the pod; a per-rollout pod is deleted, a warm one reset or replaced."""
        watcher = self._watchers.pop(lease.env.env_id, None)
        if watcher is not None:
            watcher.stop()
        if lease.env.dedicated:
            try:
                self.remove(lease.env.env_id)
            finally:
                self.pool.release(lease)
            return
        super().release(lease, env)

    def discard(self, env: EnvInfo, why: str) -> None:
        """A dirty warm pod is deleted (the keeper creates its replacement)."""
        log.info("env pod %s %s: replaced", env.env_id, why)
        self.remove(env.env_id)

    def explain(self, lease: Lease) -> str | None:
        """The pod's Kubernetes failure reason (`Evicted`, `OOMKilled`, deleted, ...), or None."""
        watcher = self._watchers.get(lease.env.env_id)
        reason = watcher.wait_reason(EXPLAIN_WAIT_S) if watcher is not None else None
        if reason is None:
            try:
                pod = read_pod(self.api, self.cfg.namespace, lease.env.env_id)
            except (ApiException, *TRANSPORT_ERRORS):
                return None
            if pod is None:
                reason = "pod deleted"
            else:
                state = classify(pod)
                reason = state.reason if state.kind == "failed" else None
        return f"Kubernetes: pod {lease.env.env_id}: {reason}" if reason else None
