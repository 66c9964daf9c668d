"""`PoolKeeper`: the `kubernetes` provider's upkeep in each runner worker's main process.

Every tick (`RUNNER_K8S_UPKEEP_INTERVAL_S`):
1. one runner per pool leads (`cua:k8s:<ns>:<pool>:manager`, TTL 3 ticks, taken over by another
   runner when the leader dies); the leader alone lists the pool's pods and
2. reaps: a per-rollout pod whose lease is gone (released, or expired because its owner, the
   rollout attempt's work-horse, died with its runner: the lease is renewed every TTL/3 by the
   owner itself, so it is the owner's liveness); a warm pod that failed (evicted, OOMKilled) or did
   not become ready in time; a used `osworld_vm` warm pod whose lease is gone; a registry entry
   whose pod no longer exists;
3. in `warm-pool` mode, adopts ready pods nobody registered (a previous leader's) and creates pods
   (within the creation caps) until `pool_size` are ready or starting; each new pod is watched to
   readiness in a thread, then registered.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client.rest import ApiException

from common import keys
from common.envpool import EnvInfo
from common.envprotocol import probe_health
from services.runner.envs.base import Upkeep
from services.runner.envs.kubernetes import podspec
from services.runner.envs.kubernetes.cluster import TRANSPORT_ERRORS, PodFailed, delete_pod
from services.runner.envs.kubernetes.podstate import classify
from services.runner.envs.kubernetes.provider import FLAVOR_ANNOTATION, KubernetesProvider

log = logging.getLogger(__name__)

_RENEW_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""


class PoolKeeper:
    """Heartbeat, leadership, reaper and warm pool of one `KubernetesProvider` (see module doc)."""

    def __init__(self, provider: KubernetesProvider) -> None:
        self.provider = provider
        self.cfg = provider.cfg
        self.redis = provider.redis
        self.ttl_ms = int(self.cfg.upkeep_interval_s * 3000)
        self._lead_script = self.redis.register_script(_RENEW_LUA)
        self._starting: set[str] = set()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=max(2, min(self.cfg.pool_size, 16)),
                                            thread_name_prefix="env-pod-start")
        self._upkeep = Upkeep("k8s-pool-keeper", self.cfg.upkeep_interval_s, self.tick,
                              transient=(ApiException, *TRANSPORT_ERRORS, *Upkeep.default_transient()))
        self.leading = False

    def start(self) -> None:
        """Tick once now, then every interval in a daemon thread."""
        self._upkeep.start()

    def stop(self) -> None:
        """Stop ticking and give up leadership; pods in creation finish starting."""
        self._upkeep.stop()
        self._executor.shutdown(wait=False, cancel_futures=True)
        try:
            if self.leading:
                manager = keys.k8s_pool_manager(self.cfg.namespace, self.cfg.pool)
                if self.redis.get(manager) == self.cfg.runner_id.encode():
                    self.redis.delete(manager)
        except Exception as exc:  # stopping must not fail on a Redis hiccup
            log.warning("pool keeper stop: %s", exc)

    # -- one tick -----------------------------------------------------------------------------
    def tick(self) -> None:
        """As the pool's leader: reap, then fill the pool."""
        manager = keys.k8s_pool_manager(self.cfg.namespace, self.cfg.pool)
        self.leading = bool(self._lead_script(keys=[manager], args=[self.cfg.runner_id, self.ttl_ms]))
        if not self.leading:
            return
        pods = self.provider.api.list_namespaced_pod(
            self.cfg.namespace, label_selector=podspec.selector(self.cfg.pool), _request_timeout=30).items
        self._forget_missing({p.metadata.name for p in pods})
        registered = {e.env_id: e for e in self.provider.pool.envs() if e.provider == self.provider.name}
        live_warm = 0
        for pod in pods:
            if pod.metadata.deletion_timestamp is not None:
                continue
            if (pod.metadata.labels or {}).get(podspec.MODE) == podspec.PER_ROLLOUT:
                self._reap_if_orphaned(pod)
            elif self._keep_warm(pod, registered):
                live_warm += 1
        if self.cfg.mode == podspec.WARM_POOL:
            self._fill(live_warm, {p.metadata.name for p in pods})

    def _forget_missing(self, pod_names: set[str]) -> None:
        """Unregister our envs whose pod no longer exists."""
        for env in self.provider.pool.envs():
            if env.provider == self.provider.name and env.env_id not in pod_names and env.env_id not in self._starting:
                log.info("env pod %s is gone: unregistered", env.env_id)
                self.provider.pool.unregister(env.env_id)

    def _delete(self, name: str, why: str) -> None:
        log.warning("reaping env pod %s: %s", name, why)
        self.provider.pool.unregister(name)
        delete_pod(self.provider.api, self.cfg.namespace, name)

    def _reap_if_orphaned(self, pod: Any) -> None:
        name = pod.metadata.name
        if self.provider.pool.lease_owner(name) is None:
            owner = (pod.metadata.annotations or {}).get(podspec.LEASE_OWNER, "?")
            self._delete(name, f"its lease (owner {owner}) expired or was released")

    def _keep_warm(self, pod: Any, registered: dict[str, EnvInfo]) -> bool:
        """Reap a failed, stuck or used-and-abandoned warm pod, adopt a ready unregistered one;
        True when it stays."""
        name = pod.metadata.name
        state = classify(pod)
        if state.kind == "failed":
            self._delete(name, state.reason)
            return False
        env = registered.get(name)
        if env is not None and env.dedicated and self.provider.pool.lease_owner(name) is None:
            self._delete(name, f"used {env.flavor} pod whose lease is gone (cannot be reset in place)")
            return False
        if env is not None or name in self._starting:
            return True
        if state.kind == "ready":
            url = f"http://{state.ip}:{self.provider.template.port}"
            flavor = (pod.metadata.annotations or {}).get(FLAVOR_ANNOTATION, self.cfg.flavor)
            if probe_health(url, flavor) is None:
                self.provider.pool.register(url, self.provider.name, env_id=name, flavor=flavor)
                log.info("adopted warm env pod %s at %s", name, url)
            return True
        created = pod.metadata.creation_timestamp
        age_s = time.time() - created.timestamp() if created is not None else 0.0
        if age_s > self.cfg.ready_timeout_s:
            self._delete(name, f"not ready after {age_s:.0f}s: {state.reason}")
            return False
        return True

    def _fill(self, live: int, existing: set[str]) -> None:
        with self._lock:
            starting = len(self._starting - existing)
        for _ in range(self.cfg.pool_size - live - starting):
            reason = self.provider.caps.try_slot()
            if reason is not None:
                log.info("warm pool %s: not creating a pod now: %s", self.cfg.pool, reason)
                return
            name = podspec.new_pod_name(podspec.WARM_POOL, self.cfg.pool)
            with self._lock:
                self._starting.add(name)
            try:
                self.provider.create_pod(name, podspec.WARM_POOL)
            except BaseException:
                with self._lock:
                    self._starting.discard(name)
                raise
            self._executor.submit(self._bring_up, name)

    def _bring_up(self, name: str) -> None:
        """Watch a new warm pod to readiness and register it; delete it when it fails."""
        try:
            url = self.provider.wait_ready(name)
            self.provider.pool.register(url, self.provider.name, env_id=name, flavor=self.cfg.flavor)
            log.info("warm env pod %s ready at %s", name, url)
        except PodFailed as exc:
            log.warning("warm env pod %s failed: %s", name, exc.reason)
            self.provider.remove(name)
        except Exception:
            log.exception("warm env pod %s: bringing it up crashed", name)
            self.provider.remove(name)
        finally:
            with self._lock:
                self._starting.discard(name)
