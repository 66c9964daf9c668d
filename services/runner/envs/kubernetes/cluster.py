"""The API-server side of env pods, on the official `kubernetes` client: config, watches, readiness.

`core_api()` loads `KUBECONFIG` (or `~/.kube/config`), or the in-cluster service account when the
runner runs in a pod. Readiness is watched (`watch` on the one pod, from its resourceVersion), never
slept for: `wait_ready` returns the env's URL once the pod is `Ready` and the env's own health
endpoint (its flavor's, `common.envprotocol`) answers, or raises `PodFailed` with the Kubernetes reason.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from common.envprotocol import probe_health
from services.runner.envs.kubernetes.podstate import PodState, classify, gone_reason

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Errors of the API server's transport (connection refused, dropped watch): retried by the caller.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (urllib3.exceptions.HTTPError, OSError)


class PodFailed(RuntimeError):
    """An env pod will not serve: `reason` is the Kubernetes reason (`ImagePullBackOff: ...`,
    `phase Failed: Evicted: ...`, `still Pending after 30s: Unschedulable: ...`)."""

    def __init__(self, pod: str, reason: str) -> None:
        super().__init__(f"pod {pod}: {reason}")
        self.pod = pod
        self.reason = reason


def core_api() -> client.CoreV1Api:
    """A `CoreV1Api` for the in-cluster service account (inside a pod) or `KUBECONFIG`.
    Raises: kubernetes.config.ConfigException when neither is available."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config()
        return client.CoreV1Api()
    return client.CoreV1Api(config.new_client_from_config(config_file=os.environ.get("KUBECONFIG")))


def read_pod(api: client.CoreV1Api, namespace: str, name: str) -> Any | None:
    """The pod, or None when it does not exist. Raises: ApiException for other errors."""
    try:
        return api.read_namespaced_pod(name, namespace, _request_timeout=10)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def delete_pod(api: client.CoreV1Api, namespace: str, name: str, grace_s: int | None = None) -> bool:
    """Delete a pod (no error when it is already gone); True when this call deleted it."""
    try:
        api.delete_namespaced_pod(name, namespace, grace_period_seconds=grace_s, _request_timeout=10)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def watch_pod(api: client.CoreV1Api, namespace: str, name: str,
              until: Callable[[Any | None, str], T | None], timeout_s: float,
              stop: threading.Event | None = None) -> T | None:
    """Call `until(pod, event_type)` on the pod's current state (`INITIAL`), then on every watch
    event (`ADDED`, `MODIFIED`, `DELETED`; the pod is None when it does not exist) until it returns
    a value (returned), `timeout_s` seconds pass or `stop` is set (None returned). A dropped or
    expired watch is resumed from a fresh read."""
    deadline = time.monotonic() + timeout_s
    while True:
        pod = read_pod(api, namespace, name)
        result = until(pod, "INITIAL")
        if result is not None or pod is None:
            return result
        version = pod.metadata.resource_version
        watcher = watch.Watch()
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (stop is not None and stop.is_set()):
            return None
        try:
            for event in watcher.stream(api.list_namespaced_pod, namespace, field_selector=f"metadata.name={name}",
                                        resource_version=version, timeout_seconds=max(1, int(remaining + 0.999)),
                                        _request_timeout=(5, remaining + 10)):
                if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK
                obj = event["object"]
                result = until(obj, event["type"])
                if result is not None:
                    watcher.stop()
                    return result
                if event["type"] == "DELETED":
                    return until(None, "DELETED")
                if (stop is not None and stop.is_set()) or time.monotonic() >= deadline:
                    watcher.stop()
                    return None
        except ApiException as exc:
            if exc.status != 410:  # 410 Gone: the resourceVersion expired, read again
                raise
        except TRANSPORT_ERRORS as exc:
            log.debug("watch of pod %s dropped, resuming: %s", name, exc)
        if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
            return None


def wait_ready(api: client.CoreV1Api, namespace: str, name: str, port: int, flavor: str,
               timeout_s: float, health_interval_s: float = 0.2) -> str:
    """Watch the pod until it is `Ready`, then poll the env's health endpoint, all within
    `timeout_s` seconds; returns the env's base URL `http://<pod IP>:<port>`.
    Raises: PodFailed with the Kubernetes reason (a fatal state, deletion, or the deadline with
    the last pending reason)."""
    started = time.monotonic()
    last: list[PodState] = [PodState("starting", "not created yet")]

    def ready(pod: Any | None, event: str) -> PodState | None:
        if pod is None:
            raise PodFailed(name, gone_reason(None) if event != "DELETED" else "pod deleted while starting")
        state = classify(pod)
        last[0] = state
        if state.kind == "failed":
            raise PodFailed(name, state.reason)
        return state if state.kind == "ready" else None

    state = watch_pod(api, namespace, name, ready, timeout_s)
    if state is None:
        raise PodFailed(name, f"still not Ready after {timeout_s:.0f}s: {last[0].reason}")
    url = f"http://{state.ip}:{port}"
    problem: str | None = "not probed"
    while time.monotonic() - started < timeout_s:
        problem = probe_health(url, flavor, timeout_s=min(5.0, max(0.5, timeout_s - (time.monotonic() - started))))
        if problem is None:
            return url
        time.sleep(health_interval_s)
    raise PodFailed(name, f"Ready but its env at {url} is not healthy after {timeout_s:.0f}s: {problem}")


class PodWatcher:
    """Watches one leased pod in a daemon thread and keeps its last known object, so the reason of
    an env failure mid-episode (eviction, OOMKilled, deletion) is known even after the pod is gone."""

    def __init__(self, api: client.CoreV1Api, namespace: str, name: str) -> None:
        self.api, self.namespace, self.name = api, namespace, name
        self.last: Any | None = None
        self.gone = False
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{name}", daemon=True)
        self._thread.start()

    def _seen(self, pod: Any | None, event: str) -> bool | None:
        with self._changed:
            if pod is None:
                self.gone = True
            else:
                self.last = pod
            self._changed.notify_all()
        return True if pod is None else None

    def _run(self) -> None:
        while not self._stop.is_set() and not self.gone:
            try:
                watch_pod(self.api, self.namespace, self.name, self._seen, 60.0, stop=self._stop)
            except (ApiException, *TRANSPORT_ERRORS) as exc:
                log.debug("watching pod %s: %s", self.name, exc)
                self._stop.wait(1.0)

    def reason(self) -> str | None:
        """The pod's failure reason (or why it is gone), None when it looks fine."""
        if self.gone:
            return gone_reason(self.last)
        if self.last is None:
            return None
        state = classify(self.last)
        return state.reason if state.kind == "failed" else None

    def wait_reason(self, timeout_s: float) -> str | None:
        """`reason()`, waiting up to `timeout_s` seconds for the watch to report a failure (the env
        usually fails a moment before the API server records why)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                reason = self.reason()
                remaining = deadline - time.monotonic()
                if reason is not None or remaining <= 0:
                    return reason
                self._changed.wait(remaining)

    def stop(self) -> None:
        """Stop watching (the thread ends at its next event or watch timeout; it is a daemon)."""
        self._stop.set()
