"""What recording costs: the same chat requests through the gateway's plain route and through a gateway session
(services/model_gateway/sessions.py: the body parsed, token fields added, images hashed by reference, the
answer parsed and the call published on Redis before it is answered), over loopback to a scripted replica
(no simulated model latency) and a real redis-server. Bodies: 2 KB of text, and a user turn with one
screenshot-sized PNG as a base64 data URL (1 MB of PNG bytes). Prints p50/p99 per path, what the session adds,
and the gateway process's CPU ms per request.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gateway_overhead import cpu_seconds, pct, process  # noqa: E402
from common.polling import free_port  # noqa: E402
from common.redis_server import RedisServerProcess  # noqa: E402


def _png_like(size: int) -> bytes:
    """`size` bytes starting with the PNG signature (the gateway hashes and references them, never decodes)."""
    return b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8)


def _bodies() -> dict[str, bytes]:
    url = "data:image/png;base64," + base64.b64encode(_png_like(1_000_000)).decode()
    return {
        "2KB": json.dumps({"model": "m", "messages": [{"role": "user", "content": "bench " + "x" * 2000}]}).encode(),
        "1MB png": json.dumps({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "bench"}, {"type": "image_url", "image_url": {"url": url}}]}]}).encode(),
    }


def _measure(client: httpx.Client, url: str, body: bytes, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        client.post(url, content=body, headers={"content-type": "application/json", "X-Episode-Id": "ep"}
                    ).raise_for_status()
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def main(rounds: int = 20, per_round: int = 5) -> dict[str, Any]:
    """Start redis-server, replica and gateway; measure both paths interleaved; print the table."""
    work = Path(tempfile.mkdtemp(prefix="session-bench-"))
    scripts = work / "scripts"
    scripts.mkdir()
    (scripts / "s.json").write_text(json.dumps({"instruction": "bench", "replies": ["Action: wait()"] * 10}))
    replica_port, gateway_port = free_port(), free_port()
    replica, gateway = f"http://127.0.0.1:{replica_port}", f"http://127.0.0.1:{gateway_port}"
    results: dict[str, Any] = {}
    redis_server = RedisServerProcess(work / "redis").start()
    try:
        with ExitStack() as stack:
            stack.enter_context(process(
                [sys.executable, "-m", "services.scripted_policy"],
                {"POLICY_PORT": str(replica_port), "POLICY_SCRIPTS_DIR": str(scripts), "LOG_LEVEL": "WARNING"},
                f"{replica}/health", work / "replica.log"))
            gw = stack.enter_context(process(
                [sys.executable, "-m", "services.model_gateway"],
                {"GATEWAY_PORT": str(gateway_port), "GATEWAY_REPLICAS": replica, "GATEWAY_HEALTH_INTERVAL_S": "5",
                 "REDIS_URL": redis_server.url, "LOG_LEVEL": "WARNING"},
                f"{gateway}/healthz", work / "gateway.log"))
            with httpx.Client(timeout=60) as client:
                session = client.post(f"{gateway}/v1/sessions").raise_for_status().json()
                paths = {"plain": f"{gateway}/v1/chat/completions",
                         "session": f"{session['base_url']}/chat/completions"}
                for label, body in _bodies().items():
                    times: dict[str, list[float]] = {name: [] for name in paths}
                    cpu = {name: 0.0 for name in paths}
                    for url in paths.values():
                        _measure(client, url, body, 2)  # warm-up
                    for _ in range(rounds):
                        for name, url in paths.items():
                            before = cpu_seconds(gw.pid)
                            times[name] += _measure(client, url, body, per_round)
                            cpu[name] += cpu_seconds(gw.pid) - before
                    results[label] = {name: {"p50": statistics.median(t), "p99": pct(t, 99),
                                             "cpu_ms": cpu[name] * 1000.0 / len(t)} for name, t in times.items()}
    finally:
        redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'body':8} {'path':8} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'gateway CPU ms/req':>19}")
    for label, by_path in results.items():
        plain = by_path["plain"]
        for name, r in by_path.items():
            print(f"{label:8} {name:8} {r['p50']:8.2f} {r['p99']:8.2f} {r['p50'] - plain['p50']:10.2f} "
                  f"{r['cpu_ms']:19.2f}")
    return results


if __name__ == "__main__":
    main()
