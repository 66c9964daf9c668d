"""A pod lost in the middle of an episode ends the rollout as `env_error` with the Kubernetes reason
in its recorded error: the real rollout code (`RolloutRunner`) on a `kubernetes` per-rollout pod, the
scripted policy over HTTP (the vLLM stand-in), the pod evicted through the eviction API mid-episode."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import redis

from common import keys
from common.events import StepEvent, decode_event
from common.polling import wait_until
from common.run import RolloutJob, SamplingParams
from common.runstate import load_rollouts
from common.status import RolloutStatus
from common.task import OSWorldTask
from services.runner.outcome import RolloutOutcome
from services.runner.rollout import RolloutRunner
from services.runner.settings import RunnerSettings
from tests.k8s.conftest import IDLE, Cluster


def _steps(client: redis.Redis) -> int:
    events = [decode_event(fields)[0] for _, fields in client.xrange(keys.EVENTS_STREAM)]  # type: ignore[union-attr]
    return sum(1 for e in events if isinstance(e, StepEvent))


def test_an_evicted_pod_mid_episode_is_env_error_with_the_kubernetes_reason(
        cluster: Cluster, redis_url: str, pool_name: str, policy_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    settings = RunnerSettings(redis_url=redis_url, gateway_url=policy_url, env_provider="kubernetes",
                              k8s_namespace=cluster.namespace, k8s_pod_template=cluster.template(),
                              k8s_pool=pool_name, k8s_ready_timeout_s=60, cache_dir=tmp_path / "cache",
                              settle_max_s=0.5, lease_wait_s=30, id="evicted-runner")
    task = OSWorldTask.model_validate({"id": "idle", "instruction": IDLE["instruction"],
                                       "evaluator": {"func": "infeasible"}})
    job = RolloutJob(run_id="evict-run", task=task, rollout_index=0, max_steps=12, agent="ui_tars_1_5",
                     model="ui-tars-1.5-7b", sampling=SamplingParams())
    client = redis.Redis.from_url(redis_url)
    outcomes: list[RolloutOutcome] = []
    worker = threading.Thread(target=lambda: outcomes.append(
        RolloutRunner(client, settings).run(job, attempt=1, final_attempt=True)))
    worker.start()
    try:
        wait_until(lambda: _steps(client) >= 2, 120, "the episode to take two steps")
        pod = cluster.pods(pool_name)[0].metadata.name
        cluster.evict(pod)
    finally:
        worker.join(timeout=120)
    outcome = outcomes[0]
    assert outcome.status is RolloutStatus.ENV_ERROR and outcome.reward is None
    assert f"Kubernetes: pod {pod}" in (outcome.error or "") and "Evict" in (outcome.error or ""), outcome.error
    record = load_rollouts(client, "evict-run")[job.rollout_id]
    assert record.status is RolloutStatus.ENV_ERROR and "Evict" in (record.error or "")
    wait_until(lambda: not cluster.pods(pool_name), 30, "the evicted pod to be gone")
