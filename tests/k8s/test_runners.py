"""End to end through the `kubernetes` provider, in both modes: real runner workers (`python -m
services.runner`, forking RQ workers) lease env pods through the official client (the stand-in API
server by default, a real cluster with KUBECONFIG), run example tasks on the real desktop envs
behind the pods, with the producer and the scripted policy (the vLLM stand-in: no GPU here) over
HTTP and a real redis-server. One runner is killed (SIGKILL, worker and work-horse) in the middle of
an episode: the other runner finishes the run's other rollouts, and no pod is leaked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import redis
from rq import Worker

from common import keys
from common.envpool import EnvPool
from common.events import StepEvent, decode_event
from common.polling import free_port, wait_until
from common.run import make_rollout_id, rq_job_id
from common.runstate import load_rollouts
from common.task import load_task_file
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.k8s.conftest import IDLE, Cluster
from tests.servers import serve_app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["os-make-notes-dir", "fast-terminal-echo"]


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (RQ's work-horse runs in its own session, so a process-group
    kill would miss it)."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@dataclass
class Runner:
    """A runner worker process, started in its own process group."""

    name: str
    process: subprocess.Popen[bytes]

    def kill(self) -> None:
        """SIGKILL the worker and every process under it (its work-horse), as a node loss would."""
        for pid in [self.process.pid, *_descendants(self.process.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory, redis_server: Any, policy_url: str) -> Iterator[dict[str, str]]:
    """The producer and the scripted policy over HTTP (Redis: the session's redis-server)."""
    work = tmp_path_factory.mktemp("k8s-e2e")
    producer = ProducerSettings(redis_url=redis_server.url, store_url=f"file://{work}/store", max_infra_retries=1,
                                retry_intervals_s=[0])
    with serve_app(create_producer(producer)) as producer_url:
        yield {"producer": producer_url, "policy": policy_url, "work": str(work)}


def _start_runner(name: str, cluster: Cluster, redis_url: str, policy_url: str, template: Path, mode: str,
                  pool: str, work: Path) -> Runner:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REDIS_URL": redis_url, "LOG_LEVEL": "INFO",
           "KUBECONFIG": str(cluster.kubeconfig), "RUNNER_ID": name, "RUNNER_GATEWAY_URL": policy_url,
           "RUNNER_ENV_PROVIDER": "kubernetes", "RUNNER_K8S_NAMESPACE": cluster.namespace,
           "RUNNER_K8S_POD_TEMPLATE": str(template), "RUNNER_K8S_MODE": mode, "RUNNER_K8S_POOL": pool,
           "RUNNER_K8S_POOL_SIZE": "2", "RUNNER_K8S_UPKEEP_INTERVAL_S": "0.5", "RUNNER_K8S_READY_TIMEOUT_S": "120",
           "RUNNER_LEASE_TTL_MS": "3000", "RUNNER_LEASE_WAIT_S": "120", "RUNNER_WAIT_ACTION_S": "0.5",
           "RUNNER_METRICS_PORT": str(free_port()), "RUNNER_CACHE_DIR": str(work / "cache")}
    log = (work / f"{name}.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "services.runner"], env=env, cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return Runner(name, process)


def _steps(client: redis.Redis, rollout_id: str) -> int:
    entries = client.xrange(keys.EVENTS_STREAM)
    events = [decode_event(fields)[0] for _, fields in entries]  # type: ignore[union-attr]
    return sum(1 for e in events if isinstance(e, StepEvent) and e.rollout_id == rollout_id)


@pytest.mark.parametrize("mode", ["per-rollout", "warm-pool"])
def test_examples_run_through_the_provider_and_a_killed_runner_leaks_no_pod(
        mode: str, cluster: Cluster, redis_url: str, services: dict[str, str], pool_name: str,
        tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url)
    template = cluster.template()
    runners = [_start_runner(f"runner-{c}-{pool_name}", cluster, redis_url, services["policy"], template, mode,
                             pool_name, tmp_path) for c in "ab"]
    try:
        wait_until(lambda: len(Worker.all(connection=client)) >= 2, 60, "both runner workers to register")
        tasks = [load_task_file(next((ROOT / "examples" / "tasks").rglob(f"{t}.json"))).to_json_dict()
                 for t in EXAMPLES]
        tasks.append({"id": "idle", "instruction": IDLE["instruction"], "evaluator": {"func": "infeasible"},
                      "domain": "tests"})
        run_id = f"k8s-{mode}"
        response = httpx.post(f"{services['producer']}/v1/runs", timeout=30,
                              json={"tasks": tasks, "run_id": run_id, "max_steps": 12})
        assert response.status_code == 201, response.text

        # Kill the runner that runs the idle rollout once its episode is under way.
        idle_rollout = make_rollout_id(run_id, "idle", 0)
        wait_until(lambda: _steps(client, idle_rollout) >= 2, 180, "the idle rollout to take two steps")
        job_id = rq_job_id(run_id, "idle", 0)
        holder = next(w for w in Worker.all(connection=client) if w.get_current_job_id() == job_id)
        victim = next(r for r in runners if r.process.pid == holder.pid)
        victim.kill()
        survivor = next(r for r in runners if r is not victim)

        def others_done() -> dict[str, Any] | None:
            records = {r.task_id: r for r in load_rollouts(client, run_id).values()}
            done = all(t in records and records[t].status.is_terminal for t in EXAMPLES)
            return records if done else None

        records = wait_until(others_done, 240, "the surviving runner to finish the other rollouts", interval_s=0.5)
        assert {t: (records[t].status.value, records[t].reward) for t in EXAMPLES} == \
            {t: ("completed", 1.0) for t in EXAMPLES}, {t: records[t].error for t in EXAMPLES}
        assert survivor.process.poll() is None

        pool = EnvPool(client)
        if mode == "per-rollout":  # every pod was its rollout's: all deleted, the killed one's by the reaper
            wait_until(lambda: not cluster.pods(pool_name) and not pool.envs(), 60, "zero env pods left")
        else:  # the warm pool is exactly its registered, unleased pods (the killed lease expired)
            def pool_is_exact() -> bool:
                names = {p.metadata.name for p in cluster.pods(pool_name)}
                status = pool.status()
                return len(names) == 2 and names == {e["env_id"] for e in status.envs} and status.leased == 0
            wait_until(pool_is_exact, 60, "the warm pool to hold exactly its 2 registered pods")
    finally:
        for runner in runners:
            runner.stop()
        cluster.delete_all(pool_name)
    wait_until(lambda: not cluster.pods(pool_name), 60, "every pod deleted at teardown")
