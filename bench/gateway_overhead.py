"""Gateway overhead: the same chat requests sent straight to a scripted replica, through nginx and through the
gateway, side by side in one run.

Each server is its own process on loopback: the scripted replica (`--latency-ms` of simulated model time per
completion, default 0) and the gateway via `python -m`, nginx (`/usr/sbin/nginx`, installed by scripts/setup.sh)
with a temporary config proxying to the replica over keep-alive connections. Bodies of 2 KB and 4 MB (a
screenshot-sized request). The three paths are measured in interleaved rounds (so load from other processes hits
them alike), `--concurrency` requests at a time. Prints p50/p99 latency (ms) per path, the latency each proxy adds
over direct, in ms and as a share of the direct call's latency (%), gateway/nginx ratios, and the CPU time per
request of the proxy process itself (the replica's for `direct`), read from /proc: unlike latency, it does not
depend on how loaded the machine is.

Target (issue 28): with `--latency-ms 1000` replicas (a model step takes ~1 s), the gateway adds <= 1 % to a
call's latency at 2 KB and 4 MB, p50 and p99.

    python bench/gateway_overhead.py --latency-ms 1000 --rounds 10 --concurrency 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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
def process(args: list[str], env: dict[str, str], health: str, log: Path,
            cwd: Path = ROOT) -> Iterator[subprocess.Popen[bytes]]:
    """A child process started in `cwd`, healthy before yield, stopped by PID after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
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


class Clients:
    """One `httpx.Client` per thread (TCP_NODELAY like nginx and asyncio servers: no Nagle delay between the
    header and body writes); `close()` closes them all."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.all: list[httpx.Client] = []

    def get(self) -> httpx.Client:
        client: httpx.Client | None = getattr(self.local, "client", None)
        if client is None:
            # Idle connections dropped after 3 s: uvicorn closes them after 5 s, and a round of the other paths
            # may last longer (a request on a connection being closed would fail).
            transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                                            limits=httpx.Limits(keepalive_expiry=3.0))
            client = self.local.client = httpx.Client(timeout=120, transport=transport)
            self.all.append(client)
        return client

    def close(self) -> None:
        for client in self.all:
            client.close()


def measure(clients: Clients, pool: ThreadPoolExecutor, url: str, body: bytes, n: int, tag: int) -> list[float]:
    """`n` requests, as many at a time as `pool` has threads; their latencies (ms)."""

    def one(i: int) -> float:
        start = time.perf_counter()
        response = clients.get().post(f"{url}/v1/chat/completions", content=body, headers={
            "content-type": "application/json", "X-Episode-Id": f"ep-{tag}-{i % 8}"})
        response.raise_for_status()
        return (time.perf_counter() - start) * 1000.0

    return list(pool.map(one, range(n)))


def pct(values: list[float], q: int) -> float:
    """The q-th percentile (1..99)."""
    return statistics.quantiles(values, n=100)[q - 1]


def main(rounds: int = 40, per_round_small: int = 10, per_round_large: int = 6, latency_ms: float = 0.0,
         concurrency: int = 1, baseline_tree: Path | None = None) -> dict[str, Any]:
    """Start replica (`latency_ms` of model time per completion), nginx and gateway (and, with `baseline_tree`, the
    gateway of that checkout as path `baseline`, e.g. the code before a change); measure `rounds` rounds of
    `per_round_*` requests per path, `concurrency` at a time; print the table; return the figures."""
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
                {"POLICY_PORT": str(replica_port), "POLICY_SCRIPTS_DIR": str(scripts), "LOG_LEVEL": "WARNING",
                 "POLICY_LATENCY_MS": str(latency_ms)},
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
            if baseline_tree is not None:
                baseline_port = free_port()
                paths["baseline"] = f"http://127.0.0.1:{baseline_port}"
                procs["baseline"] = stack.enter_context(process(
                    [sys.executable, "-m", "services.model_gateway"],
                    {"GATEWAY_PORT": str(baseline_port), "GATEWAY_REPLICAS": replica, "GATEWAY_HEALTH_INTERVAL_S": "5",
                     "GATEWAY_ADMIN_TOKEN": "bench", "LOG_LEVEL": "WARNING", "PYTHONPATH": str(baseline_tree)},
                    f"{paths['baseline']}/healthz", work / "baseline.log", cwd=baseline_tree))
            clients = Clients()
            with ThreadPoolExecutor(concurrency) as pool:
                for label, size, per_round in (("2KB", 2_000, per_round_small), ("4MB", 4_000_000, per_round_large)):
                    body = json.dumps({"model": "m", "messages": [
                        {"role": "user", "content": "bench " + "x" * size}]}).encode()
                    times: dict[str, list[float]] = {name: [] for name in paths}
                    cpu = {name: 0.0 for name in paths}  # CPU s of the proxy process itself (not the replica)
                    for url in paths.values():
                        measure(clients, pool, url, body, concurrency, 0)  # warm-up: connections, caches
                    for r in range(rounds):
                        for name, url in paths.items():
                            before = cpu_seconds(procs[name].pid)
                            times[name] += measure(clients, pool, url, body, per_round, r)
                            cpu[name] += cpu_seconds(procs[name].pid) - before
                    results[label] = {name: {"p50": statistics.median(t), "p99": pct(t, 99),
                                             "cpu_ms": cpu[name] * 1000.0 / len(t)}
                                      for name, t in times.items()}
            clients.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (latency is noise-bound when high; "
          "CPU ms/request of the proxy process is not)")
    print(f"replica latency {latency_ms:g} ms, {concurrency} request(s) at a time, {rounds} rounds")
    print(f"{'body':5} {'path':8} {'p50 ms':>9} {'p99 ms':>9} {'added p50':>10} {'added p99':>10} {'p50 %':>7} "
          f"{'p99 %':>7} {'CPU ms/req':>11}")
    for label, by_path in results.items():
        direct = by_path["direct"]
        for name, r in by_path.items():
            r["added_p50_pct"] = 100.0 * (r["p50"] - direct["p50"]) / direct["p50"]
            r["added_p99_pct"] = 100.0 * (r["p99"] - direct["p99"]) / direct["p99"]
            print(f"{label:5} {name:8} {r['p50']:9.2f} {r['p99']:9.2f} {r['p50'] - direct['p50']:10.2f} "
                  f"{r['p99'] - direct['p99']:10.2f} {r['added_p50_pct']:7.2f} {r['added_p99_pct']:7.2f} "
                  f"{r['cpu_ms']:11.2f}")
        gw, ngx = by_path["gateway"], by_path["nginx"]
        print(f"{label:5} gateway/nginx: p50 {gw['p50'] / ngx['p50']:.2f}x, p99 {gw['p99'] / ngx['p99']:.2f}x")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=0.0, help="replica model time per completion (ms)")
    parser.add_argument("--rounds", type=int, default=40, help="interleaved rounds per body size")
    parser.add_argument("--per-round-small", type=int, default=10, help="2 KB requests per path per round")
    parser.add_argument("--per-round-large", type=int, default=6, help="4 MB requests per path per round")
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight at a time")
    parser.add_argument("--baseline-tree", type=Path, help="a checkout whose gateway runs beside (path `baseline`)")
    args = parser.parse_args()
    main(args.rounds, args.per_round_small, args.per_round_large, args.latency_ms, args.concurrency, args.baseline_tree)
