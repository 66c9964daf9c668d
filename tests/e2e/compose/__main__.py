"""`python -m tests.e2e.compose` (`make compose-test`): docker-compose.yml deployed on a real Docker engine,
every example rollout run in the containers, then everything torn down.

1. A Docker engine (installed and started when there is none; stopped at the end if started here), the
   compose plugin, the base images the compose file names (built locally when absent: no registry is
   reachable here), the host's CA certificates for the builds (`docker_host`).
2. `docker compose build` and `up --wait` with a fresh `.env` of random secrets, MinIO replaced by moto's
   S3 server (`docker-compose.moto.yml`, the one stand-in); host ports are free ones on 127.0.0.1.
3. `examples/tasks` submitted over HTTP from the host; every rollout must end as its script expects (as
   `make demo` checks), every trajectory's manifest must be in the bucket (read back through the
   producer), and `/ui`, `/metrics`, `/v1/queues` must answer (with the token; without it: 401).
4. Attack 2 of issue 34 from inside a desktop container (`attack.py`): Python sent to its `/execute` and
   `/run_python` tries Redis, the store, the producer, the gateway, Prometheus (by name, by address, through the
   host's published ports) and must reach none; a runner's PING to Redis without the password must be refused.
   Prometheus must have scraped the queue-depth gauge and every service, and the dashboard read it.
   Then one rollout through the CPU vLLM container (profile `vllm-cpu`, `vllm_phase.py`) behind the gateway
   (`--no-vllm` leaves it out when iterating on the rest; CI runs it).
5. `docker compose down -v`, whatever happened. Exits 0 only when every check held; prints the times
   (build, up, up -> first finished run, whole run).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from common.env_file import write_env_file
from common.polling import free_port, wait_until
from common.task import load_tasks
from cua_rollout.client import RolloutClient
from services.cli.commands.stack import load_expectations, mismatches
from tests.e2e.compose import docker_host, vllm_phase
from tests.e2e.compose.attack import SERVICE_PORTS, check_desktop_isolation
from tests.e2e.compose.docker_host import ROOT, DockerEngine

log = logging.getLogger("compose-test")
OVERRIDE = Path(__file__).with_name("docker-compose.moto.yml")
PROJECT = "cua-compose-test"
#: Images no registry gives here, built by docker_host when absent (the compose file's own images
#: derive from debian; redis:7 is used as it is; minio's are replaced by the override).
BASE_IMAGES = ["debian:bookworm-slim", "redis:7"]
#: Scrape jobs of deploy/monitoring/prometheus.yml that must be up (every service with a /metrics).
PROMETHEUS_JOBS = {"producer", "gateway", "runner", "sink", "policy", "prometheus"}
#: compose's own builder (Debian's docker.io has no buildx plugin for compose's "bake" path).
COMPOSE_ENV = {**os.environ, "COMPOSE_BAKE": "false"}


class Compose:
    """`docker compose` on docker-compose.yml + the moto override, project `PROJECT`, with `env_file`."""

    def __init__(self, env_file: Path) -> None:
        self.base = ["docker", "compose", "-p", PROJECT, "--project-directory", str(ROOT),
                     "-f", str(ROOT / "docker-compose.yml"), "-f", str(OVERRIDE), "--env-file", str(env_file)]

    def __call__(self, *args: str, timeout_s: float, capture: bool = False,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run one compose command (`env`: variables added to its environment, e.g. to override the env file's);
        raises docker_host.DockerHostError with its output on failure."""
        log.info("docker compose %s", " ".join(args))
        environ = {**COMPOSE_ENV, **(env or {})}
        if capture:
            return docker_host.run([*self.base, *args], timeout_s, env=environ)
        done = subprocess.run([*self.base, *args], timeout=timeout_s, check=False, text=True, env=environ)
        if done.returncode != 0:
            raise docker_host.DockerHostError(f"docker compose {' '.join(args)} exited {done.returncode}")
        return done


def check_endpoints(producer: str, token: str) -> list[str]:
    """Problems with `/ui`, `/metrics`, `/v1/queues` (each must answer 200 with the token; `/v1/queues`
    must refuse a request without it)."""
    problems = []
    auth = {"Authorization": f"Bearer {token}"}
    for path, headers in (("/ui", auth), ("/metrics", {}), ("/v1/queues", auth)):
        response = httpx.get(producer + path, headers=headers, timeout=10)
        if response.status_code != 200:
            problems.append(f"GET {path}: HTTP {response.status_code}")
    if httpx.get(producer + "/v1/queues", timeout=10).status_code != 401:
        problems.append("GET /v1/queues without the token was not refused (401)")
    return problems


def container_addresses(compose: Compose, services: list[str]) -> dict[str, list[str]]:
    """Service -> the IP addresses of its containers on every network they are on (`docker inspect`)."""
    addresses: dict[str, list[str]] = {}
    for service in services:
        ids = compose("ps", "-q", service, timeout_s=60, capture=True).stdout.split()
        for container in ids:
            shown = docker_host.run(["docker", "inspect", "-f",
                                     "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container], 60)
            addresses.setdefault(service, []).extend(shown.stdout.split())
    return addresses


def attack_from_desktop(compose: Compose, host_ports: list[int]) -> list[str]:
    """Issue 34 attack 2 (`attack.check_desktop_isolation`); its problems."""
    def exec_in(service: str, code: str) -> str:
        return compose("exec", "-T", service, "python", "-c", code, timeout_s=300, capture=True).stdout

    problems = check_desktop_isolation(exec_in, container_addresses(compose, list(SERVICE_PORTS)), host_ports)
    log.info("attack from a desktop: %s", "; ".join(problems) or "every attempt refused or unreachable")
    return problems


def check_prometheus(prometheus: str, producer: str, token: str, timeout_s: float = 120.0) -> list[str]:
    """Problems with the `prometheus` service: it must have scraped the producer's queue-depth gauge
    (`cua_queue_jobs`) and every other job of deploy/monitoring/prometheus.yml (each `up`), and the producer's
    dashboard must read its last-hour series from it (`PRODUCER_PROMETHEUS_URL`)."""
    def query(expr: str) -> list[dict]:
        body = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10).json()
        return list(body.get("data", {}).get("result", []))

    try:
        wait_until(lambda: bool(query('cua_queue_jobs{job="producer",state="waiting"}')), timeout_s,
                   "Prometheus to scrape the queue-depth gauge cua_queue_jobs", interval_s=2)
        wait_until(lambda: {r["metric"]["job"] for r in query("up == 1")} >= PROMETHEUS_JOBS, timeout_s,
                   f"Prometheus to scrape every job up: {sorted(PROMETHEUS_JOBS)}", interval_s=2)
        series = httpx.get(f"{producer}/v1/dashboard/series", headers={"Authorization": f"Bearer {token}"},
                           timeout=10).json()
    except (TimeoutError, httpx.HTTPError, ValueError) as exc:
        try:
            down = sorted(PROMETHEUS_JOBS - {r["metric"]["job"] for r in query("up == 1")})
        except (httpx.HTTPError, ValueError):
            down = sorted(PROMETHEUS_JOBS)
        return [f"Prometheus: {exc} (jobs not up: {down})"]
    if series.get("source") != "prometheus" or not series.get("t") or series.get("error"):
        return [f"the dashboard's series is not read from Prometheus: {str(series)[:300]}"]
    return []


def run_examples(producer: str, token: str, timeout_s: float, started: float,
                 paths: list[Path]) -> tuple[list[str], dict[str, float]]:
    """Submit the tasks of `paths` (examples/tasks), wait for the run, check results and stored trajectories;
    returns (problems, timings in s)."""
    tasks = [task for path in paths for task in load_tasks(path)]
    expected = load_expectations(ROOT / "examples" / "scripts")
    timings: dict[str, float] = {}
    with RolloutClient(producer, token=token, timeout_s=30) as client:
        run_id = client.submit(tasks, rollouts_per_task=1, max_steps=15).run_id
        log.info("run %s: %d rollouts submitted", run_id, len(tasks))

        def progress() -> dict:
            run = client.request_json("GET", f"/v1/runs/{run_id}")
            assert isinstance(run, dict)
            if run["done"] and "first_rollout_s" not in timings:
                timings["first_rollout_s"] = time.monotonic() - started
            if run["done"] != shown[0]:
                shown[0] = run["done"]
                log.info("run %s: %d/%d rollouts done", run_id, run["done"], run["total"])
            return run

        shown = [-1]

        run: dict = {}

        def finished() -> bool:
            nonlocal run
            run = progress()
            return bool(run["finished"])

        wait_until(finished, timeout_s, f"run {run_id} to finish", interval_s=2.0)
        timings["first_run_s"] = time.monotonic() - started
        problems = mismatches(run, expected)
        counts = {r["status"]: 0 for r in run["rollouts"]}
        for rollout in run["rollouts"]:
            counts[rollout["status"]] += 1
        log.info("run %s finished: %s", run_id, json.dumps(counts))
        stored = lambda: sum(1 for t in client.trajectories(run_id) if t.get("manifest"))  # noqa: E731
        try:
            wait_until(lambda: stored() >= len(run["rollouts"]), 120, "every trajectory's manifest in the bucket",
                       interval_s=1.0)
        except TimeoutError as exc:
            problems.append(str(exc))
    return problems, timings


def main() -> int:
    """Run the whole compose test (module doc); returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=ROOT / ".cua" / "compose-test")
    parser.add_argument("--run-timeout-s", type=float, default=1800.0)
    parser.add_argument("--keep", action="store_true", help="leave the stack up (no `down -v`) to inspect it")
    parser.add_argument("--no-vllm", action="store_true", help="leave out the vLLM container phase (CI runs it)")
    parser.add_argument("--tasks", type=Path, action="append",
                        help="task files or directories to run instead of all of examples/tasks (repeatable)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per poll otherwise
    args.work_dir.mkdir(parents=True, exist_ok=True)
    engine = DockerEngine(args.work_dir / "dockerd.log")
    problems: list[str] = []
    times: dict[str, float] = {}
    try:
        engine.ensure()
        docker_host.install_compose_plugin()
        docker_host.trust_host_certificates()
        built = docker_host.ensure_base_images(BASE_IMAGES)
        log.info("base images built here: %s", built or "none (all present)")
        env_file = args.work_dir / "test.env"
        secrets = write_env_file(env_file, force=True)
        producer_port, gateway_port, prometheus_port = free_port(), free_port(), free_port()
        with env_file.open("a") as handle:
            handle.write(f"CUA_PRODUCER_PORT={producer_port}\nCUA_GATEWAY_PORT={gateway_port}\n"
                         f"CUA_PROMETHEUS_PORT={prometheus_port}\n")
        compose = Compose(env_file)
        try:
            with_vllm = not args.no_vllm
            if with_vllm:
                log.info("torch CPU wheel for the vLLM image: %s", vllm_phase.fetch_cpu_torch())
            t0 = time.monotonic()
            compose(*(("--profile", vllm_phase.PROFILE) if with_vllm else ()), "build", timeout_s=3600)
            times["build_s"] = time.monotonic() - t0
            t0 = time.monotonic()
            compose("up", "--detach", "--wait", "--wait-timeout", "600", timeout_s=900)
            times["up_s"] = time.monotonic() - t0
            producer = f"http://127.0.0.1:{producer_port}"
            run_problems, run_times = run_examples(producer, secrets["PRODUCER_TOKEN"], args.run_timeout_s, t0,
                                                   args.tasks or [ROOT / "examples" / "tasks"])
            problems += run_problems
            times.update(run_times)
            problems += check_endpoints(producer, secrets["PRODUCER_TOKEN"])
            problems += check_prometheus(f"http://127.0.0.1:{prometheus_port}", producer, secrets["PRODUCER_TOKEN"])
            problems += attack_from_desktop(compose, [producer_port, gateway_port, prometheus_port])
            if with_vllm:
                vllm_problems, vllm_times = vllm_phase.run_through_vllm(compose, producer, secrets["PRODUCER_TOKEN"],
                                                                        args.run_timeout_s)
                problems += vllm_problems
                times.update(vllm_times)
            else:
                log.info("vLLM container phase left out (--no-vllm)")
        except Exception:
            subprocess.run([*compose.base, "--profile", vllm_phase.PROFILE, "ps", "-a"], check=False, timeout=60)
            subprocess.run([*compose.base, "--profile", vllm_phase.PROFILE, "logs", "--tail", "40"], check=False,
                           timeout=120)
            raise
        finally:
            if problems:
                subprocess.run([*compose.base, "logs", "--tail", "60", "runner", "desktop_env"], check=False,
                               timeout=120)
            if not args.keep:
                compose("--profile", vllm_phase.PROFILE, "down", "--volumes", "--remove-orphans", timeout_s=300)
    except (docker_host.DockerHostError, TimeoutError, httpx.HTTPError, subprocess.TimeoutExpired) as exc:
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        if not args.keep:
            engine.stop()
    for name, value in times.items():
        print(f"{name}: {value:.1f}")
    if problems:
        print("compose-test FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("compose-test passed: every example rollout ended as its script expects, inside containers"
          + ("" if args.no_vllm else ", and a rollout ran through the CPU vLLM container"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
