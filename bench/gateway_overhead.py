"""Gateway overhead: the same chat requests sent straight to a scripted replica, through nginx and through the
gateway, side by side in one run.

Each server is its own process on loopback: the scripted replica (no simulated model time) and the gateway via
`python -m`, nginx (`/usr/sbin/nginx`, installed by scripts/setup.sh) with a temporary config proxying to the
replica over keep-alive connections. Bodies of 2 KB and 4 MB (a screenshot-sized request). The three paths are
measured in interleaved rounds (so load from other processes hits them alike). Prints p50/p99 latency (ms)
per path, the gateway's added latency over direct, gateway/nginx ratios, and the CPU time per request of
the proxy process itself (the replica's for `direct`), read from /proc: unlike latency, it does not depend
on how loaded the machine is.

Targets (issue 8): added p50 <= 1 ms (2 KB) and <= 3 ms (4 MB), added p99 <= 5 ms, gateway within 1.5x nginx.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.polling import free_port, http_ok, wait_until  # noqa: E402
from common.processes import child_pids, stop_child  # noqa: E402

NGINX = "/usr/sbin/nginx"
NGINX_CONF = """
worker_processes 1;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 64m;
    client_body_buffer_size 8m;
    upstream replica {{ server 127.0.0.1:{upstream}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replica;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffer_size 64k;
            proxy_buffers 16 64k;
        }}
    }}
}}
"""


@contextmanager
def process(args: list[str], env: dict[str, str], health: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child process, healthy before yield, stopped by PID after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: proc.poll() is None and http_ok(health), 30, f"{args[0]} healthy at {health}")
        yield proc
    finally:
        stop_child(proc, 10.0)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` and its direct children (nginx's worker), from /proc."""
    total = 0.0
    for p in [pid, *child_pids(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measure(client: httpx.Client, url: str, body: bytes, n: int, tag: int) -> list[float]:
    """`n` sequential requests; their latencies (ms)."""
    times = []
    for i in range(n):
        start = time.perf_counter()
        response = client.post(f"{url}/v1/chat/completions", content=body,
                               headers={"content-type": "application/json", "X-Episode-Id": f"ep-{tag}-{i % 8}"})
        response.raise_for_status()
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def pct(values: list[float], q: int) -> float:
    """The q-th percentile (1..99)."""
    return statistics.quantiles(values, n=100)[q - 1]


def main(rounds: int = 40, per_round_small: int = 10, per_round_large: int = 6) -> dict[str, Any]:
    """Start replica, nginx and gateway; measure; print the table; return the figures."""
    if not Path(NGINX).exists():
        raise SystemExit(f"{NGINX} not found: run scripts/setup.sh (it installs nginx for this bench)")
    work = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    scripts = work / "scripts"
    scripts.mkdir()
    (scripts / "s.json").write_text(json.dumps({"instruction": "bench", "replies": ["Action: wait()"] * 1000}))
    replica_port, nginx_port, gateway_port = free_port(), free_port(), free_port()
    replica = f"http://127.0.0.1:{replica_port}"
    nginx = f"http://127.0.0.1:{nginx_port}"
    gateway = f"http://127.0.0.1:{gateway_port}"
    (work / "nginx.conf").write_text(NGINX_CONF.format(prefix=work, upstream=replica_port, port=nginx_port))
    results: dict[str, Any] = {}
    try:
        with ExitStack() as stack:
            procs: dict[str, subprocess.Popen[bytes]] = {}
            procs["direct"] = stack.enter_context(process(
                [sys.executable, "-m", "services.scripted_policy"],
                {"POLICY_PORT": str(replica_port), "POLICY_SCRIPTS_DIR": str(scripts), "LOG_LEVEL": "WARNING"},
                f"{replica}/health", work / "replica.log"))
            procs["nginx"] = stack.enter_context(process(
                [NGINX, "-p", str(work), "-c", str(work / "nginx.conf"), "-g", "daemon off;"], {},
                f"{nginx}/health", work / "nginx.log"))
            procs["gateway"] = stack.enter_context(process(
                [sys.executable, "-m", "services.model_gateway"],
                {"GATEWAY_PORT": str(gateway_port), "GATEWAY_REPLICAS": replica, "GATEWAY_HEALTH_INTERVAL_S": "5",
                 "GATEWAY_ADMIN_TOKEN": "bench", "LOG_LEVEL": "WARNING"},
                f"{gateway}/healthz", work / "gateway.log"))
            paths = {"direct": replica, "nginx": nginx, "gateway": gateway}
            # TCP_NODELAY like nginx and asyncio servers: no Nagle delay between the header and body writes.
            transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            with httpx.Client(timeout=60, transport=transport) as client:
                for label, size, per_round in (("2KB", 2_000, per_round_small), ("4MB", 4_000_000, per_round_large)):
                    body = json.dumps({"model": "m", "messages": [
                        {"role": "user", "content": "bench " + "x" * size}]}).encode()
                    times: dict[str, list[float]] = {name: [] for name in paths}
                    cpu = {name: 0.0 for name in paths}  # CPU s of the proxy process itself (not the replica)
                    for url in paths.values():
                        measure(client, url, body, 3, 0)  # warm-up: connections, caches
                    for r in range(rounds):
                        for name, url in paths.items():
                            before = cpu_seconds(procs[name].pid)
                            times[name] += measure(client, url, body, per_round, r)
                            cpu[name] += cpu_seconds(procs[name].pid) - before
                    results[label] = {name: {"p50": statistics.median(t), "p99": pct(t, 99),
                                             "cpu_ms": cpu[name] * 1000.0 / len(t)}
                                      for name, t in times.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (latency is noise-bound when high; "
          "CPU ms/request of the proxy process is not)")
    print(f"{'body':5} {'path':8} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} {'CPU ms/req':>11}")
    for label, by_path in results.items():
        direct = by_path["direct"]
        for name, r in by_path.items():
            print(f"{label:5} {name:8} {r['p50']:8.2f} {r['p99']:8.2f} {r['p50'] - direct['p50']:10.2f} "
                  f"{r['p99'] - direct['p99']:10.2f} {r['cpu_ms']:11.2f}")
        gw, ngx = by_path["gateway"], by_path["nginx"]
        print(f"{label:5} gateway/nginx: p50 {gw['p50'] / ngx['p50']:.2f}x, p99 {gw['p99'] / ngx['p99']:.2f}x")
    return results


if __name__ == "__main__":
    main()
