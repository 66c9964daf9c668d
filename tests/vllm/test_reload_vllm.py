"""Issue 32 point 4: a rolling weight reload on two real vLLM replicas in the middle of a run, through the whole
local stack (producer, RQ runners, gateway, Xvfb desktops, sink), with vLLM's runtime LoRA (`vllm_lora`,
`VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`, two random adapters made with peft by `scripts/make_tiny_model.py`).

Checked: the replicas switch one at a time (never both out, versions mixed while the second reloads); no request
fails (no model error, no retried attempt, no 5xx at vLLM); and every model call a rollout recorded (each step's
answer and its re-sampled, discarded ones) carries the version of the adapter that produced its tokens: vLLM scores
the call's prompt + response tokens with each adapter (`prompt_logprobs`) and the recorded logprobs equal the
scores of the adapter its `model_version` names, and are further from the other adapter's.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from common.objectstore import LocalDirStore
from common.polling import wait_until
from common.task import load_task_file
from services.cli.stack import LocalStack, StackConfig
from tests.vllm_fixtures import VLLMReplicas, build_model

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
FAST_TASKS = sorted((ROOT / "examples" / "tasks" / "fast").glob("*.json"))
VERSIONS = ("v0", "v1")
LORA_NAME = "policy"
#: |recorded - rescored| allowed for the adapter that produced a call (vLLM on CPU reproduces it exactly here; the
#: slack covers a batch of another shape), and the least mean difference per token the other adapter must show over
#: all calls (the trained model is near-certain of most tokens: a random adapter moves those logprobs little).
SAME_ADAPTER_TOL = 0.02
OTHER_ADAPTER_MIN = 0.001


@pytest.fixture(scope="module")
def adapters(vllm_replicas: VLLMReplicas) -> dict[str, str]:
    """Version -> LoRA adapter directory: two random adapters (different seeds) of the replicas' model."""
    return {version: str(build_model(f"tiny-qwen2-osworld-lora-{version}", "--kind", "lora",
                                     "--base", str(vllm_replicas.model_dir), "--seed", str(seed)))
            for seed, version in enumerate(VERSIONS)}


@pytest.fixture(scope="module")
def stack(vllm_replicas: VLLMReplicas, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    config = StackConfig(work_dir=tmp_path_factory.mktemp("stack"), scripts_dir=ROOT / "examples" / "scripts",
                         envs=2, runners=2, policy_urls=vllm_replicas.urls,
                         extra_env={"GATEWAY_RELOAD_METHOD": "vllm_lora", "GATEWAY_HEALTH_INTERVAL_S": "0.5",
                                    "PRODUCER_RETRY_INTERVALS_S": "[0]"})
    with LocalStack(config) as running:
        yield running


def reload(gateway: httpx.Client, version: str, source: str) -> dict[str, Any]:
    """Start a rolling reload (one replica at a time) and wait for its end; its status."""
    started = gateway.post("/admin/reload", json={"version": version, "source": source, "lora_name": LORA_NAME,
                                                  "max_unavailable": 1})
    assert started.status_code == 202, started.text

    def ended() -> dict[str, Any] | None:
        view = gateway.get("/admin/reload").json()
        return view["reload"] if not view["running"] else None

    status: dict[str, Any] = wait_until(ended, 300, f"the reload to {version}", interval_s=0.1)
    return status


def server_errors(urls: list[str]) -> int:
    """5xx responses of vLLM's chat route so far, summed over `urls` (its `http_requests_total`)."""
    total = 0.0
    for url in urls:
        for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
            if line.startswith("http_requests_total{") and 'status="5xx"' in line:
                total += float(line.rsplit(" ", 1)[1])
    return int(total)


class Sampler(threading.Thread):
    """Polls the gateway's replica states every 50 ms until stopped: (draining ids, routable ids, versions)."""

    def __init__(self, gateway_url: str) -> None:
        super().__init__(daemon=True)
        self.url = gateway_url
        self.samples: list[tuple[set[str], set[str], frozenset[str | None]]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while not self.stopped.wait(0.05):
                replicas = client.get("/admin/replicas").json()["replicas"]
                self.samples.append(({r["id"] for r in replicas if r["draining"]},
                                     {r["id"] for r in replicas if r["healthy"] and not r["draining"]},
                                     frozenset(r["model_version"] for r in replicas)))


def model_calls(store: LocalDirStore, run_id: str) -> list[dict[str, Any]]:
    """Every model call the run's stored steps record: each step's answer and its discarded re-samples, with the
    step's prompt token ids (a re-sample has the step's prompt)."""
    calls = []
    for key in store.list(f"{run_id}/"):
        if not re.search(r"/step_\d{4}\.json$", key):
            continue
        step = json.loads(store.get(key))
        for call in [step, *step.get("discarded", [])]:
            calls.append({"key": key, "prompt": step["prompt_token_ids"], "tokens": call["token_ids"],
                          "logprobs": call["logprobs"], "version": call["model_version"], "replica": call["replica"]})
    return calls


def rescored(url: str, model: str, prompt: list[int], tokens: list[int]) -> list[float]:
    """vLLM's logprobs of `tokens` after `prompt` under `model` (`prompt_logprobs` of a 1-token completion)."""
    response = httpx.post(f"{url}/v1/completions", json={"model": model, "prompt": prompt + tokens, "max_tokens": 1,
                                                          "temperature": 0.0, "prompt_logprobs": 0}, timeout=300)
    assert response.status_code == 200, response.text
    scores = response.json()["choices"][0]["prompt_logprobs"]
    return [scores[len(prompt) + i][str(token)]["logprob"] for i, token in enumerate(tokens)]


@pytest.mark.timeout(1500)
def test_lora_reload_mid_run_switches_replica_by_replica_and_every_call_has_its_adapters_version(
        stack: LocalStack, vllm_replicas: VLLMReplicas, adapters: dict[str, str]) -> None:
    producer = httpx.Client(base_url=stack.producer_url, timeout=30)
    gateway = httpx.Client(base_url=stack.gateway_url, timeout=30)
    first = reload(gateway, "v0", adapters["v0"])  # the adapter the run starts on, loaded by the same machinery
    assert first["state"] == "succeeded", first
    errors_before = server_errors(vllm_replicas.urls)

    tasks = [load_task_file(path) for path in FAST_TASKS]
    created = producer.post("/v1/runs", json={
        "tasks": [t.to_json_dict() for t in tasks], "rollouts_per_task": 3, "max_steps": 4, "run_id": "lora-run",
        "agent": "osworld_prompt", "agent_options": {"observation_type": "a11y_tree", "a11y_tree_max_tokens": 400},
        "model": LORA_NAME, "sampling": {"temperature": 1.0, "max_tokens": 48, "logprobs": True},
        "policy_version": "v1", "max_staleness": 1})
    assert created.status_code == 201, created.text

    def some_done() -> bool:
        run = producer.get("/v1/runs/lora-run").json()
        return run["done"] >= 2 and not run["finished"]

    wait_until(some_done, 600, "a few rollouts to finish", interval_s=0.2)
    sampler = Sampler(stack.gateway_url)
    sampler.start()
    try:
        second = reload(gateway, "v1", adapters["v1"])
    finally:
        sampler.stopped.set()
        sampler.join()
    assert second["state"] == "succeeded", second
    waves = sorted(second["replicas"], key=lambda p: p["wave"])
    assert [(p["wave"], p["state"]) for p in waves] == [(0, "done"), (1, "done")]
    assert waves[1]["started_at"] >= waves[0]["ended_at"]  # one replica at a time
    assert all(len(draining) <= 1 and routable for draining, routable, _ in sampler.samples)
    # switched replica by replica: versions were mixed from the first replica's switch to the second's (read from
    # the reload's own timeline: the sampler cannot be relied on to land in a window of a LoRA load, ~100 ms)
    assert waves[0]["ended_at"] < waves[1]["ended_at"]
    assert {versions for _, _, versions in sampler.samples} <= {frozenset({"v0"}), frozenset({"v0", "v1"}),
                                                               frozenset({"v1"})}
    assert not producer.get("/v1/runs/lora-run").json()["finished"]  # the reload really happened mid-run

    def finished() -> dict[str, Any] | None:
        run = producer.get("/v1/runs/lora-run").json()
        return run if run["finished"] else None

    run = wait_until(finished, 900, "the run to finish", interval_s=0.5)
    outcomes = [(r["status"], r["attempt"]) for r in run["rollouts"]]
    assert all(status in ("completed", "agent_fail", "truncated") and attempt == 1 for status, attempt in outcomes), \
        outcomes  # no model_error, nothing retried
    assert "gateway_retries_total 0.0" in gateway.get("/metrics").text
    assert server_errors(vllm_replicas.urls) == errors_before

    store = LocalDirStore(Path(stack.store_url.removeprefix("file://")))
    wait_until(lambda: sum(k.endswith("/manifest.json") for k in store.list("lora-run/")) == len(run["rollouts"]), 120,
               "the sink to write every manifest")
    calls = model_calls(store, "lora-run")
    assert {c["version"] for c in calls} == {"v0", "v1"}, "the run's calls did not span the reload"
    scorer = vllm_replicas.urls[0]
    names = {version: f"score-{version}" for version in VERSIONS}
    for version, name in names.items():
        loaded = httpx.post(f"{scorer}/v1/load_lora_adapter", json={"lora_name": name, "lora_path": adapters[version]},
                            timeout=120)
        assert loaded.status_code == 200, loaded.text
    try:
        worst_same, other_total, tokens = 0.0, 0.0, 0
        for call in calls:
            assert call["tokens"] and len(call["logprobs"]) == len(call["tokens"]), call["key"]
            other = "v1" if call["version"] == "v0" else "v0"
            same = [abs(a - b) for a, b in zip(call["logprobs"], rescored(scorer, names[call["version"]],
                                                                          call["prompt"], call["tokens"]), strict=True)]
            differs = [abs(a - b) for a, b in zip(call["logprobs"], rescored(scorer, names[other], call["prompt"],
                                                                             call["tokens"]), strict=True)]
            assert max(same) <= SAME_ADAPTER_TOL, (call["key"], call["version"], max(same))
            # closer to its own adapter than to the other
            assert sum(same) < sum(differs), (call["key"], call["version"], sum(same), sum(differs))
            worst_same, other_total, tokens = max(worst_same, max(same)), other_total + sum(differs), tokens + len(same)
        assert other_total / tokens >= OTHER_ADAPTER_MIN, other_total / tokens
        print(f"{len(calls)} calls, {tokens} tokens ({sum(c['version'] == 'v1' for c in calls)} calls at v1): max "
              f"|recorded - own adapter| {worst_same:.2g}, mean |recorded - other adapter| {other_total / tokens:.4f}")
    finally:
        for name in names.values():
            httpx.post(f"{scorer}/v1/unload_lora_adapter", json={"lora_name": name}, timeout=60)
