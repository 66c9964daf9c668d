"""The stand-in API server's "kubelet": runs each scheduled pod's container as a real local process.

Images come from a fixed map (`IMAGES`: image -> Python module); any other image fails to pull
(`ErrImagePull`, then `ImagePullBackOff`), as an unknown image does on a real node. Each pod gets
its own loopback address (`127.<net>.x.y`) as its pod IP, so every env listens on the template's
container port (5000) at its own address, like pods do; its own free X display; its own home. The
container's `env` from the pod spec is passed through. Readiness follows the pod's `readinessProbe`
(`httpGet` or `tcpSocket`) when it has one. A container that exits ends the pod `Failed` (with
`OOMKilled` when `oom_kill` killed it; `Evicted` when `node_pressure_evict` did).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from common.processes import stop_child
from services.desktop_env.session import display_in_use
from tests.k8s.apiserver import PodStore, now_rfc3339

ROOT = Path(__file__).resolve().parents[2]
#: Image -> module run for it (the real env server, or our env with only OSWorld's routes).
IMAGES = {
    "cua-rollout/desktop-env:test": "services.desktop_env",
    "osworld/vm-server:test": "tests.k8s.osworld_only",
}


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    killed_as: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)


class Kubelet:
    """Runs pods of `store` under `work_dir` (logs in `work_dir/<pod>/container.log`)."""

    def __init__(self, store: PodStore, work_dir: Path, width: int = 1920, height: int = 1080) -> None:
        self.store = store
        self.work_dir = work_dir
        self.width, self.height = width, height
        self.net = random.randrange(64, 250)
        self._next_ip = 2
        self._next_display = random.randrange(300, 800)
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], _Running] = {}
        store.kubelet = self

    def _ip(self) -> str:
        with self._lock:
            n = self._next_ip
            self._next_ip += 1
        return f"127.{self.net}.{n // 250}.{n % 250 + 2}"

    def _display(self) -> int:
        with self._lock:
            while display_in_use(self._next_display):
                self._next_display += 1
            number = self._next_display
            self._next_display += 1
            return number

    def _set(self, namespace: str, name: str, **status: Any) -> None:
        def change(pod: dict[str, Any]) -> None:
            pod["status"].update(status)
        self.store.update(namespace, name, change)

    def _container(self, namespace: str, name: str, state: dict[str, Any], ready: bool = False,
                   **extra: Any) -> None:
        def change(pod: dict[str, Any]) -> None:
            for status in pod["status"].get("containerStatuses") or []:
                status["state"], status["ready"] = state, ready
                status["started"] = "running" in state
            pod["status"].update(extra)
        self.store.update(namespace, name, change)

    # -- called by the store ------------------------------------------------------------------
    def start(self, namespace: str, name: str) -> None:
        """Pull the image and start the container (in a thread: the API answers meanwhile)."""
        threading.Thread(target=self._run_pod, args=(namespace, name), daemon=True).start()

    def stop(self, namespace: str, name: str) -> None:
        """Stop the pod's container (SIGTERM, then SIGKILL after 10 s)."""
        with self._lock:
            running = self._running.pop((namespace, name), None)
        if running is not None:
            running.stop.set()
            stop_child(running.process, 10.0)
            running.log.close()

    def stop_all(self) -> None:
        """Stop every container still running (fixture teardown)."""
        for namespace, name in list(self._running):
            self.stop(namespace, name)

    # -- failure knobs --------------------------------------------------------------------------
    def oom_kill(self, namespace: str, name: str) -> None:
        """SIGKILL the container as the kernel's OOM killer would (reason `OOMKilled`, exit 137)."""
        running = self._running[(namespace, name)]
        running.killed_as = "OOMKilled"
        running.process.send_signal(signal.SIGKILL)

    def node_pressure_evict(self, namespace: str, name: str) -> None:
        """Evict for node pressure: the container is killed, the pod ends `Failed` / `Evicted`."""
        running = self._running[(namespace, name)]
        running.killed_as = "Evicted"
        running.process.send_signal(signal.SIGKILL)

    def pid(self, namespace: str, name: str) -> int:
        """PID of the pod's container process."""
        return self._running[(namespace, name)].process.pid

    # -- the pod's life -------------------------------------------------------------------------
    def _run_pod(self, namespace: str, name: str) -> None:
        pod = self.store.get(namespace, name)
        container = pod["spec"]["containers"][0]
        image = container.get("image", "")
        module = IMAGES.get(image)
        if module is None:
            message = f'Back-off pulling image "{image}": not found in the stand-in registry'
            self._container(namespace, name, {"waiting": {"reason": "ErrImagePull", "message": message}})
            self._container(namespace, name, {"waiting": {"reason": "ImagePullBackOff", "message": message}})
            return
        ports = [p["containerPort"] for p in container.get("ports") or []]
        ip, port, display = self._ip(), int(ports[0]) if ports else 5000, self._display()
        pod_dir = self.work_dir / name
        (pod_dir / "home").mkdir(parents=True, exist_ok=True)
        variables = {**os.environ, "PYTHONPATH": str(ROOT),
                     **{e["name"]: str(e.get("value", "")) for e in container.get("env") or []},
                     "DESKTOP_HOST": ip, "DESKTOP_PORT": str(port), "DESKTOP_DISPLAY": f":{display}",
                     "DESKTOP_HOME": str(pod_dir / "home"), "DESKTOP_START_XVFB": "true",
                     "DESKTOP_WIDTH": str(self.width), "DESKTOP_HEIGHT": str(self.height),
                     "DESKTOP_ENV_ID": name}
        log = (pod_dir / "container.log").open("ab")
        process = subprocess.Popen([sys.executable, "-m", module], env=variables, cwd=ROOT, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT)
        running = _Running(process, log)
        with self._lock:
            if self.store.pods.get((namespace, name), {}).get("metadata", {}).get("deletionTimestamp") is not None:
                stop_child(process, 10.0)
                return
            self._running[(namespace, name)] = running
        started = now_rfc3339()
        self._container(namespace, name, {"running": {"startedAt": started}}, phase="Running", podIP=ip,
                        podIPs=[{"ip": ip}], startTime=started)
        self._probe_until_ready(namespace, name, running, container.get("readinessProbe"), ip, port)
        code = process.wait()
        if running.stop.is_set():
            return  # deleted: the store removes the object
        reason = running.killed_as or ("Completed" if code == 0 else "Error")
        exit_code = 137 if running.killed_as else code
        terminated = {"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": started,
                                     "finishedAt": now_rfc3339()}}
        if reason == "Evicted":
            self._container(namespace, name, terminated, phase="Failed", reason="Evicted",
                            message="The node was low on resource: memory.")
        else:
            self._container(namespace, name, terminated, phase="Failed" if code else "Succeeded")

    def _probe_until_ready(self, namespace: str, name: str, running: _Running, probe: dict[str, Any] | None,
                           ip: str, port: int) -> None:
        """Run the readiness probe every `periodSeconds` (default 0.2 s here) until it passes."""
        period = float((probe or {}).get("periodSeconds", 0.2))
        while not running.stop.is_set() and running.process.poll() is None:
            if probe is None or self._probe(probe, ip, port):
                def ready(pod: dict[str, Any]) -> None:
                    pod["status"]["conditions"] = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"]
                    pod["status"]["conditions"].append({"type": "Ready", "status": "True",
                                                        "lastTransitionTime": now_rfc3339()})
                    for status in pod["status"].get("containerStatuses") or []:
                        status["ready"] = True
                self.store.update(namespace, name, ready)
                return
            running.stop.wait(min(period, 0.2))

    @staticmethod
    def _probe(probe: dict[str, Any], ip: str, port: int) -> bool:
        if "httpGet" in probe:
            get = probe["httpGet"]
            target = int(get.get("port", port)) if str(get.get("port", port)).isdigit() else port
            try:
                return httpx.get(f"http://{ip}:{target}{get.get('path', '/')}", timeout=2.0).status_code < 400
            except httpx.HTTPError:
                return False
        if "tcpSocket" in probe:
            sock_port = probe["tcpSocket"].get("port", port)
            target = int(sock_port) if str(sock_port).isdigit() else port
            try:
                with socket.create_connection((ip, target), timeout=1.0):
                    return True
            except OSError:
                return False
        return True

