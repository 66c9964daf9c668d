"""Issue 34 attack 2, performed inside the compose stack of `make compose-test`: code run in a desktop container
(Python sent to its `/execute` and `/run_python`, the path of an agent's actions and of a task's `execute` step)
tries to reach the control plane and must find nothing.

Targets: Redis (`redis:6379`, answered with a `PING`), the store (`minio:9000`), the producer (`producer:8080`),
the gateway and its admin routes (`gateway:8000`), the sink's and a replica's ports, by service name and by
each container's addresses on its networks, and the host's published ports through the desktop's default route.
Each attempt must fail (no such name, unreachable, refused, timed out). As a control, the same probe from a
runner (which is on the control network) must reach Redis and be refused for want of its password (`NOAUTH`):
the probe does reach what is reachable.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

#: Runs in the desktop (or a runner): tries each `host:port` of TARGETS (a JSON list, substituted) and the host's
#: HOST_PORTS at its default route, all at once (threads: a dropped packet costs its 5 s timeout once, within
#: `/run_python`'s 30 s), sends Redis' `PING` to port 6379 (`GET /healthz` elsewhere), prints one JSON list of
#: {"target", "reached", "reply"|"error"}.
PROBE = r'''
import json, socket, struct, threading
def gateway_ip():
    for line in open("/proc/net/route").read().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":
            return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
    return None
targets = TARGETS
host_ip = gateway_ip()
targets += [[host_ip, port] for port in HOST_PORTS] if host_ip else []
results = [{"target": f"{host}:{port}", "reached": False, "error": "no answer within 20 s"} for host, port in targets]
def attempt(i, host, port):
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            results[i] = {"target": f"{host}:{port}", "reached": True}
            s.sendall(b"PING\r\n" if port == 6379 else b"GET /healthz HTTP/1.0\r\n\r\n")
            s.settimeout(3)
            results[i]["reply"] = s.recv(200).decode(errors="replace")
    except OSError as exc:
        results[i] = {"target": f"{host}:{port}", "reached": False, "error": repr(exc)}
threads = [threading.Thread(target=attempt, args=(i, h, p), daemon=True) for i, (h, p) in enumerate(targets)]
for t in threads:
    t.start()
for t in threads:
    t.join(20 / len(threads) if threads else 0)  # all in parallel: within /run_python's 30 s
print("PROBE" + json.dumps(results))
'''

#: Runs in a runner: sends PROBE to the desktop's `/execute` (argv `python3 -c`) and `/run_python`, prints both
#: replies as one JSON object.
DRIVER = r'''
import json, urllib.request
def post(path, body):
    request = urllib.request.Request("http://desktop_env:5000" + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=120))
code = CODE
print("DRIVER" + json.dumps({"execute": post("/execute", {"command": ["python3", "-c", code], "shell": False}),
                             "run_python": post("/run_python", {"code": code})}))
'''

log = logging.getLogger("compose-test")

#: Service name -> its port the attack tries.
SERVICE_PORTS = {"redis": 6379, "minio": 9000, "producer": 8080, "gateway": 8000, "sink": 9102, "policy": 8001,
                 "prometheus": 9090}


def probe_code(targets: list[tuple[str, int]], host_ports: list[int]) -> str:
    """PROBE with its targets filled in."""
    return PROBE.replace("TARGETS", json.dumps([list(t) for t in targets])).replace("HOST_PORTS",
                                                                                   json.dumps(host_ports))


def _marked(output: str, mark: str) -> Any:
    """The JSON printed after `mark` on one line of `output`. Raises: ValueError when absent."""
    for line in output.splitlines():
        if mark in line:
            return json.loads(line.split(mark, 1)[1])
    raise ValueError(f"no {mark} line in the output: {output[-1500:]!r}")


def check_desktop_isolation(exec_in: Callable[[str, str], str], addresses: dict[str, list[str]],
                            host_ports: list[int]) -> list[str]:
    """Run the attack; the problems found (empty: every attempt failed, and the runner's control reached Redis
    and was refused without its password).

    `exec_in(service, code)`: the stdout of `python -c code` in one container of `service`; `addresses`:
    service -> its containers' IP addresses; `host_ports`: the host's published ports."""
    targets = [(name, port) for name, port in SERVICE_PORTS.items()]
    targets += [(ip, SERVICE_PORTS[name]) for name, ips in addresses.items() for ip in ips]
    code = probe_code(targets, host_ports)
    replies = _marked(exec_in("runner", DRIVER.replace("CODE", json.dumps(code))), "DRIVER")
    problems = []
    for route, reply in replies.items():
        text = reply.get("output") if route == "execute" else reply.get("message")
        try:
            results = _marked(text or "", "PROBE")
        except ValueError as exc:
            problems.append(f"/{route}: the probe did not run: {exc} ({reply})")
            continue
        outcomes = Counter(r.get("error", "reached").split("(")[0] for r in results)
        log.info("attack via /%s: %d targets: %s", route, len(results), dict(outcomes))
        if len(results) != len(targets) + len(host_ports):
            problems.append(f"/{route}: probed {len(results)} targets, expected {len(targets) + len(host_ports)}")
        problems += [f"/{route}: the desktop reached {r['target']} ({r.get('reply', '')!r})"
                     for r in results if r["reached"]]
    control = _marked(exec_in("runner", probe_code([("redis", 6379)], [])), "PROBE")
    if not control or not control[0]["reached"] or "NOAUTH" not in control[0].get("reply", ""):
        problems.append(f"control: a runner's PING to redis:6379 without the password was not refused with "
                        f"NOAUTH: {control}")
    return problems
