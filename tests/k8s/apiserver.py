"""A stand-in for the Kubernetes API server (which cannot run here: no cluster, no container runtime).

It serves, over real HTTP, the pod subset the `kubernetes` env provider uses through the official
client: create / get / list (label and field selectors) / delete pods, the eviction subresource, and
watch streams (chunked JSON lines) that resume from a `resourceVersion`. Its "scheduler" holds pods
`Pending` for `schedule_delay_s` and leaves a pod whose `nodeSelector` the node lacks `Unschedulable`;
its "kubelet" (`tests.k8s.kubelet`) pulls images from a fixed map (others end in `ImagePullBackOff`)
and runs each pod as real local processes (a real `desktop_env`), so rollouts on these pods are real.
Knobs for the failures a real node produces: `oom_kill()` (container `OOMKilled`) and
`node_pressure_evict()` (phase `Failed`, reason `Evicted`).
"""

from __future__ import annotations

import copy
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from common.polling import free_port


def now_rfc3339() -> str:
    """The current time as Kubernetes writes it (`2026-01-02T03:04:05Z`)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _matches_labels(pod: dict[str, Any], selector: str) -> bool:
    labels = pod["metadata"].get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key.rstrip("=")) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _matches_fields(pod: dict[str, Any], selector: str) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        key, _, value = term.partition("=")
        if key == "metadata.name" and pod["metadata"]["name"] != value:
            return False
        if key == "status.phase" and pod["status"].get("phase") != value:
            return False
    return True


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class ApiError(Exception):
    """An API error reply (`Status` object with `code`)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.body = _status(code, reason, message)


class PodStore:
    """Pods by (namespace, name), a global resourceVersion, and the event log watches replay."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.changed = threading.Condition()
        self.kubelet: Any = None  # set by the cluster: `start(pod)`, `stop(pod)`
        self.schedule_delay_s = 0.0
        self.node_labels: dict[str, str] = {"kubernetes.io/hostname": "stand-in-node"}
        self.created_total = 0

    def _emit(self, kind: str, pod: dict[str, Any]) -> None:
        # caller holds self.changed
        self.version += 1
        pod["metadata"]["resourceVersion"] = str(self.version)
        self.events.append((self.version, kind, copy.deepcopy(pod)))
        self.changed.notify_all()

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        meta = body.setdefault("metadata", {})
        name = meta.get("name") or (meta.get("generateName", "pod-") + secrets.token_hex(3))
        if not body.get("spec", {}).get("containers"):
            raise ApiError(422, "Invalid", f'Pod "{name}" is invalid: spec.containers: Required value')
        with self.changed:
            if (namespace, name) in self.pods:
                raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists')
            meta.update(name=name, namespace=namespace, uid=secrets.token_hex(16), creationTimestamp=now_rfc3339())
            body["status"] = {"phase": "Pending", "conditions": [], "qosClass": "Burstable"}
            self.pods[(namespace, name)] = body
            self.created_total += 1
            self._emit("ADDED", body)
            pod = copy.deepcopy(body)
        threading.Thread(target=self._schedule, args=(namespace, name), daemon=True).start()
        return pod

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        with self.changed:
            pod = self.pods.get((namespace, name))
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            return copy.deepcopy(pod)

    def list(self, namespace: str, labels: str = "", fields: str = "") -> tuple[list[dict[str, Any]], int]:
        with self.changed:
            items = [copy.deepcopy(p) for (ns, _), p in sorted(self.pods.items()) if ns == namespace
                     and _matches_labels(p, labels) and _matches_fields(p, fields)]
            return items, self.version

    def update(self, namespace: str, name: str, change: Any) -> dict[str, Any] | None:
        """Apply `change(pod)` to a live pod and emit MODIFIED; None when the pod is gone."""
        with self.changed:
            pod = self.pods.get((namespace, name))
            if pod is None:
                return None
            change(pod)
            self._emit("MODIFIED", pod)
            return copy.deepcopy(pod)

    def delete(self, namespace: str, name: str) -> dict[str, Any]:
        with self.changed:
            pod = self.pods.get((namespace, name))
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            if pod["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(pod)
            pod["metadata"]["deletionTimestamp"] = now_rfc3339()
            pod["metadata"]["deletionGracePeriodSeconds"] = 0
            self._emit("MODIFIED", pod)
            snapshot = copy.deepcopy(pod)
        threading.Thread(target=self._finish_delete, args=(namespace, name), daemon=True).start()
        return snapshot

    def _finish_delete(self, namespace: str, name: str) -> None:
        if self.kubelet is not None:
            self.kubelet.stop(namespace, name)  # the containers stop, then the object goes
        with self.changed:
            pod = self.pods.pop((namespace, name), None)
            if pod is not None:
                self._emit("DELETED", pod)

    def evict(self, namespace: str, name: str) -> None:
        """The eviction subresource: a `DisruptionTarget` condition, then a graceful delete."""
        def mark(pod: dict[str, Any]) -> None:
            pod["status"]["conditions"].append({
                "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting", "lastTransitionTime": now_rfc3339()})
        if self.update(namespace, name, mark) is None:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        self.delete(namespace, name)

    # -- the "scheduler" ------------------------------------------------------------------------
    def _schedule(self, namespace: str, name: str) -> None:
        deadline = time.monotonic() + self.schedule_delay_s
        with self.changed:
            while time.monotonic() < deadline and (namespace, name) in self.pods:
                self.changed.wait(max(0.0, deadline - time.monotonic()))
            pod = self.pods.get((namespace, name))
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                return
            wanted = pod["spec"].get("nodeSelector") or {}
            missing = {k: v for k, v in wanted.items() if self.node_labels.get(k) != v}
        if missing:
            def unschedulable(p: dict[str, Any]) -> None:
                p["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
                    "lastTransitionTime": now_rfc3339()}]
            self.update(namespace, name, unschedulable)
            return

        def scheduled(p: dict[str, Any]) -> None:
            p["spec"]["nodeName"] = self.node_labels["kubernetes.io/hostname"]
            p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                          "lastTransitionTime": now_rfc3339()}]
            p["status"]["containerStatuses"] = [
                {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "restartCount": 0,
                 "started": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
                for c in p["spec"]["containers"]]
        if self.update(namespace, name, scheduled) is not None and self.kubelet is not None:
            self.kubelet.start(namespace, name)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: PodStore

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> tuple[str, str | None, str | None, dict[str, str]]:
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        # api/v1/namespaces/{ns}/pods[/{name}[/eviction]]
        if len(parts) < 5 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({url.path})")
        name = parts[5] if len(parts) > 5 else None
        sub = parts[6] if len(parts) > 6 else None
        return parts[3], name, sub, query

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return dict(json.loads(self.rfile.read(length) or b"{}"))

    def _handle(self, method: str) -> None:
        try:
            namespace, name, sub, query = self._route()
            if method == "GET" and name is None and query.get("watch") in ("true", "True", "1"):
                self._watch(namespace, query)
            elif method == "GET" and name is None:
                items, version = self.store.list(namespace, query.get("labelSelector", ""),
                                                 query.get("fieldSelector", ""))
                self._send(200, {"kind": "PodList", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": str(version)}, "items": items})
            elif method == "GET" and name:
                self._send(200, self.store.get(namespace, name))
            elif method == "POST" and name is None:
                self._send(201, self.store.create(namespace, self._body()))
            elif method == "POST" and name and sub == "eviction":
                body = self._body()
                self.store.evict(namespace, name)
                self._send(201, body)
            elif method == "DELETE" and name:
                self._send(200, self.store.delete(namespace, name))
            else:
                raise ApiError(405, "MethodNotAllowed", f"{method} {self.path} is not supported by the stand-in")
        except ApiError as exc:
            self._send(int(exc.body["code"]), exc.body)

    def _watch(self, namespace: str, query: dict[str, str]) -> None:
        labels, fields = query.get("labelSelector", ""), query.get("fieldSelector", "")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 300)
        since = int(query.get("resourceVersion") or 0)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(event: dict[str, Any]) -> None:
            data = json.dumps(event).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        store = self.store
        try:
            if since == 0:  # no version: the current objects first, as ADDED
                items, since = store.list(namespace, labels, fields)
                for pod in items:
                    chunk({"type": "ADDED", "object": pod})
            while time.monotonic() < deadline:
                with store.changed:
                    fresh = [(v, k, p) for v, k, p in store.events if v > since]
                    if not fresh:
                        store.changed.wait(min(1.0, max(0.0, deadline - time.monotonic())))
                        continue
                for version, kind, pod in fresh:
                    since = version
                    if pod["metadata"]["namespace"] == namespace and _matches_labels(pod, labels) \
                            and _matches_fields(pod, fields):
                        chunk({"type": kind, "object": pod})
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")


class StandInApiServer:
    """The HTTP server over a `PodStore` on a free loopback port; `kubeconfig(path)` writes a
    kubeconfig file pointing the official client at it."""

    def __init__(self, store: PodStore) -> None:
        self.store = store
        handler = type("Handler", (_Handler,), {"store": store})
        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="k8s-stand-in", daemon=True)

    def write_kubeconfig(self, path: Path, namespace: str) -> Path:
        """A kubeconfig with one cluster (this server), context and user."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "stand-in",
            "clusters": [{"name": "stand-in", "cluster": {"server": self.url}}],
            "users": [{"name": "stand-in", "user": {"token": "stand-in"}}],
            "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "stand-in",
                                                          "namespace": namespace}}],
        }
        path.write_text(json.dumps(config))
        return path

    @contextmanager
    def running(self) -> Iterator[StandInApiServer]:
        """Serve until the block ends."""
        self._thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
