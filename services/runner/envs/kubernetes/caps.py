"""API-server-friendly limits on env pod creation, shared by every runner through Redis.

- at most `max_pods` of our env pods (`app=cua-env`) in the namespace (counted with one list call;
  concurrent runners may overshoot by a few: put a `ResourceQuota` on `pods` in the namespace for
  a hard cap, whose 403 "exceeded quota" is treated like a full namespace);
- at most `creates_per_s` pod creations per second in the namespace, fleet-wide: a fixed-window
  counter `INCR cua:k8s:<ns>:created:<window>`, windows of max(1, 1/rate) seconds holding
  max(1, floor(rate * window)) creations (expires a few seconds after its window).
"""

from __future__ import annotations

import math
import time

import redis
from kubernetes import client

from common import keys
from common import redis_typed as rt
from services.runner.envs.kubernetes.podspec import APP_LABEL, MANAGED_BY


class CreationCaps:
    """`try_slot()` says whether one more pod may be created now (and counts it when so)."""

    def __init__(self, redis_client: redis.Redis, api: client.CoreV1Api, namespace: str, max_pods: int,
                 creates_per_s: float) -> None:
        self.redis, self.api, self.namespace = redis_client, api, namespace
        self.max_pods = max_pods
        self.creates_per_s = creates_per_s

    def pod_count(self) -> int:
        """Our env pods in the namespace now (any pool, any phase, terminating included)."""
        selector = f"{APP_LABEL[0]}={APP_LABEL[1]},{MANAGED_BY[0]}={MANAGED_BY[1]}"
        pods = self.api.list_namespaced_pod(self.namespace, label_selector=selector, _request_timeout=10)
        return len(pods.items)

    def try_slot(self) -> str | None:
        """None when a pod may be created now (the creation is counted), else why not."""
        count = self.pod_count()
        if count >= self.max_pods:
            return f"namespace {self.namespace} has {count} env pods (cap RUNNER_K8S_MAX_PODS={self.max_pods})"
        window_s = max(1.0, 1.0 / self.creates_per_s)  # e.g. 0.5/s: one creation per 2 s window
        limit = max(1, math.floor(self.creates_per_s * window_s))
        key = keys.k8s_creations(self.namespace, int(time.time() / window_s))
        used = rt.incr(self.redis, key)
        if used == 1:
            self.redis.expire(key, int(window_s) + 5)
        if used > limit:
            return f"creation rate cap RUNNER_K8S_CREATES_PER_S={self.creates_per_s:g} reached"
        return None

    def wait_slot(self, deadline: float, poll_s: float = 0.2) -> str | None:
        """Poll `try_slot()` until a slot is free (None returned) or the monotonic `deadline`
        passes (the last reason returned)."""
        while True:
            reason = self.try_slot()
            if reason is None or time.monotonic() >= deadline:
                return reason
            time.sleep(poll_s)
