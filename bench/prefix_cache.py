"""Prefix-cache hit rate on real vLLM replicas behind the gateway: sticky routing vs round-robin, side by side in one
run (the engine-side measurement of what bench/routing_sim.py simulates).

Two vLLM OpenAI servers of the tiny text model (`.venv-vllm`, `.cua/models/tiny-qwen2-osworld`, started with
`--enable-prefix-caching` by `tests/vllm_fixtures.py`'s launcher; `--replicas URL,URL` uses running ones instead),
and per routing policy a gateway process over them (`python -m services.model_gateway`, `GATEWAY_ROUTING=sticky`
or `round_robin`). Each policy replays the same multi-step rollouts: `--episodes` episodes of `--steps` steps,
`--concurrency` at a time, each step's request the whole conversation so far as an OSWorld a11y-tree agent
sends it (OSWorld's system prompt for `a11y_tree` + `pyautogui`, the task instruction, then per step the
accessibility tree of that step (`--tree-lines` lines, different at every step) and the model's reply to the
previous one, as its text), with `X-Episode-Id`, sampled at temperature 1 with `max_tokens` `--max-tokens`.

Before and after each policy the bench reads `vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total`
(prompt tokens looked up / found) from both replicas' `/metrics`; hit rate = delta hits / delta queries. Each
policy's episodes carry a salt of their own at the start of the system prompt, so the second policy finds none
of the first one's blocks. vLLM caches whole KV blocks (128 tokens on CPU), so a prompt's last partial block
never hits. Prints one line per policy, and the ratio.

    python bench/prefix_cache.py [--episodes 8 --steps 8 --concurrency 4] [--replicas http://h:p,http://h:p]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common.polling import free_port, http_ok, wait_until  # noqa: E402
from common.processes import stop_child  # noqa: E402
from services.model_gateway.engine_load import parse_engine_load  # noqa: E402
from services.runner.agent.osworld_prompts import system_prompt  # noqa: E402

POLICIES = ("sticky", "round_robin")
ROLES = ["push-button", "label", "text", "menu-item", "toggle-button", "entry", "list-item", "panel", "link"]
WORDS = ["File", "Edit", "View", "Save", "Open", "Close", "Settings", "Search", "Home", "Documents", "Terminal",
         "Downloads", "Cancel", "OK", "Apply", "Help", "Tools", "Window", "Format", "Insert", "Table", "Share"]


@dataclass
class PolicyResult:
    """One policy's figures: prefix-cache queries and hits (tokens), requests sent, failed ones, wall time (s)."""

    policy: str
    queries: float
    hits: float
    requests: int
    failed: int
    seconds: float

    @property
    def hit_rate(self) -> float:
        """hits / queries (0 when nothing was queried)."""
        return self.hits / self.queries if self.queries else 0.0


def accessibility_tree(rng: random.Random, lines: int) -> str:
    """A synthetic linearised accessibility tree (OSWorld's tab-separated `tag name text position size` rows)."""
    rows = ["tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"]
    for _ in range(lines):
        position = f"({rng.randrange(1920)}, {rng.randrange(1080)})"
        size = f"({rng.randrange(20, 400)}, {rng.randrange(16, 60)})"
        rows.append(f"{rng.choice(ROLES)}\t{rng.choice(WORDS)} {rng.choice(WORDS)}\t{rng.choice(WORDS)}\t\t\t"
                    f"{position}\t{size}")
    return "\n".join(rows)


def replay_episode(gateway: str, model: str, salt: str, episode: int, args: argparse.Namespace) -> tuple[int, int]:
    """One episode of `args.steps` steps through the gateway; (requests sent, failed)."""
    rng = random.Random(f"{salt}-{episode}")
    messages: list[dict[str, str]] = [
        {"role": "system", "content": f"[{salt}] " + system_prompt("a11y_tree", "pyautogui", "password")},
        {"role": "user", "content": f"You are asked to complete the following task: task {episode}: "
                                    f"{' '.join(rng.choice(WORDS) for _ in range(12))}"}]
    sent = failed = 0
    with httpx.Client(base_url=gateway, timeout=300) as client:
        for _ in range(args.steps):
            messages.append({"role": "user", "content": "Given the info from accessibility tree as below:\n"
                             f"{accessibility_tree(rng, args.tree_lines)}\nWhat's the next step that you will do "
                             "to help with the task?"})
            response = client.post("/v1/chat/completions", headers={"X-Episode-Id": f"{salt}-{episode}"}, json={
                "model": model, "messages": messages, "max_tokens": args.max_tokens, "temperature": 1.0})
            sent += 1
            if response.status_code != 200:
                print(f"episode {episode}: HTTP {response.status_code} {response.text[:200]}", file=sys.stderr)
                failed += 1
                break
            messages.append({"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]})
    return sent, failed


def cache_counters(replicas: list[str]) -> tuple[float, float]:
    """(queries, hits) of the prefix cache summed over `replicas` (tokens since each started). Raises: RuntimeError
    when a replica does not export them (no `--enable-prefix-caching`, or not vLLM)."""
    queries = hits = 0.0
    for url in replicas:
        load = parse_engine_load(httpx.get(f"{url}/metrics", timeout=10).text)
        if load is None or load.prefix_cache_queries is None or load.prefix_cache_hits is None:
            raise RuntimeError(f"{url}/metrics has no vllm:prefix_cache_* counters (--enable-prefix-caching?)")
        queries += load.prefix_cache_queries
        hits += load.prefix_cache_hits
    return queries, hits


@contextmanager
def gateway(replicas: list[str], policy: str, log_dir: Path) -> Iterator[str]:
    """A gateway process over `replicas` with `GATEWAY_ROUTING=policy`; yields its base URL, stopped by PID after."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUA_LOCAL_MODE": "1", "GATEWAY_PORT": str(port),
           "GATEWAY_REPLICAS": ",".join(replicas), "GATEWAY_ROUTING": policy, "GATEWAY_HEALTH_INTERVAL_S": "1"}
    with (log_dir / f"gateway-{policy}.log").open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.model_gateway"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.poll() is None and http_ok(f"{url}/healthz"), 60, f"gateway healthy at {url}")
        yield url
    finally:
        stop_child(proc, 10.0)


@contextmanager
def vllm_replicas(given: str, log_dir: Path) -> Iterator[tuple[list[str], str]]:
    """(replica URLs, served model name): `given` (comma-separated URLs, model from their `/v1/models`), else two
    servers of the tiny text model started here and stopped by PID after."""
    if given:
        urls = [u.rstrip("/") for u in given.split(",") if u]
        yield urls, httpx.get(f"{urls[0]}/v1/models", timeout=10).json()["data"][0]["id"]
        return
    from tests.vllm_fixtures import SERVED_MODEL, build_model, start_vllm, stop_vllm, wait_healthy

    model_dir = build_model("tiny-qwen2-osworld", "--kind", "text", "--train", "osworld_pyautogui")
    servers = [start_vllm(model_dir, log_dir) for _ in range(2)]
    try:
        wait_healthy(servers, timeout_s=1200.0)  # a loaded 2-core machine: minutes
        yield [s.url for s in servers], SERVED_MODEL
    finally:
        for server in servers:
            stop_vllm(server)


def run_policy(replicas: list[str], model: str, policy: str, args: argparse.Namespace, log_dir: Path) -> PolicyResult:
    """Replay every episode through a `policy` gateway; the prefix-cache counters' deltas over the replay."""
    salt = f"{policy}-{time.time_ns()}"
    with gateway(replicas, policy, log_dir) as url:
        queries0, hits0 = cache_counters(replicas)
        started = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(lambda e: replay_episode(url, model, salt, e, args), range(args.episodes)))
        seconds = time.perf_counter() - started
        queries1, hits1 = cache_counters(replicas)
    return PolicyResult(policy, queries1 - queries0, hits1 - hits0, sum(r[0] for r in results),
                        sum(r[1] for r in results), seconds)


def main(argv: list[str] | None = None) -> list[PolicyResult]:
    """Parse arguments, replay under each policy, print the table; returns the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--tree-lines", type=int, default=12, help="accessibility-tree rows per step")
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--replicas", default="", help="comma-separated vLLM base URLs (default: start two)")
    args = parser.parse_args(argv)
    results = []
    with ExitStack() as stack:
        log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="prefix-cache-")))
        replicas, model = stack.enter_context(vllm_replicas(args.replicas, log_dir))
        for policy in POLICIES:
            results.append(run_policy(replicas, model, policy, args, log_dir))
    print(f"{len(replicas)} vLLM replicas, {args.episodes} episodes x {args.steps} steps, {args.concurrency} at once")
    print(f"{'policy':<12} {'hit rate':>9} {'hits':>10} {'queries':>10} {'requests':>9} {'failed':>7} {'wall s':>7}")
    for r in results:
        print(f"{r.policy:<12} {r.hit_rate:>8.1%} {r.hits:>10.0f} {r.queries:>10.0f} {r.requests:>9} {r.failed:>7} "
              f"{r.seconds:>7.1f}")
    by = {r.policy: r for r in results}
    if by["round_robin"].hit_rate:
        print(f"sticky / round_robin hit rate: {by['sticky'].hit_rate / by['round_robin'].hit_rate:.2f}x")
    return results


if __name__ == "__main__":
    main()
