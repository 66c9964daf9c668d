"""Attack 1 of issue 34 against the real stack: task configs that name a runner host path.

A local stack (`cua-rollout up`'s: real redis-server, a real Xvfb desktop, a scripted replica behind the gateway,
a forking RQ runner, the sink writing to moto's S3 server) whose runner holds known secret values (its S3 secret
key, the gateway API key, the producer token, a canary variable). Three tasks try to carry the runner's files
into their trajectory: an evaluator rule naming `/proc/self/environ`, a `cache_file` and an `upload_file` naming a
symlink in the runners' URL cache that leads to a runner file (invisible at submission). Each rollout ends with a
clear error; then every object of the bucket and every value in Redis is searched for the secrets. What the
producer can recognise (an absolute or climbing `local_path` / `path`) is refused with a 422 naming the field,
and nothing of that run is enqueued.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from common.objectstore import S3Store
from common.polling import wait_until
from services.cli.stack import LocalStack, StackConfig

pytestmark = pytest.mark.e2e

INSTRUCTION = "Say that you are done"
SECRETS = {name: f"canary-{name.lower()}-{secrets.token_hex(12)}" for name in
           ("S3_SECRET_KEY", "GATEWAY_API_KEYS", "PRODUCER_API_TOKEN", "CUA_CANARY")}


def _task(task_id: str, evaluator: dict[str, Any], config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"id": task_id, "instruction": INSTRUCTION, "config": config or [], "evaluator": evaluator,
            "domain": "security"}


ENVIRON_RULE = _task("leak-environ-rule", {"func": "compare_text_file",
                                           "result": {"type": "rule", "rules": "/proc/self/environ"},
                                           "expected": {"type": "rule", "rules": "/proc/self/environ"}})
CACHE_SYMLINK = _task("leak-cache-symlink", {"func": "compare_text_file",
                                             "result": {"type": "cache_file", "path": "leak"},
                                             "expected": {"type": "cache_file", "path": "leak"}})
UPLOAD_SYMLINK = _task("leak-upload-symlink",
                       {"func": "compare_text_file",
                        "result": {"type": "vm_file", "path": "/home/user/leak.txt", "dest": "leak.txt"},
                        "expected": {"type": "vm_file", "path": "/home/user/leak.txt", "dest": "leak2.txt"}},
                       [{"type": "upload_file",
                         "parameters": {"files": [{"local_path": "leak", "path": "/home/user/leak.txt"}]}}])


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str) -> Iterator[LocalStack]:
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "done.json").write_text(json.dumps({"instruction": INSTRUCTION,
                                                   "replies": ["Thought: done.\nAction: finished(content='done')"]}))
    runner_secret = tmp_path_factory.mktemp("runner-home") / "runner.env"  # a runner file outside the cache
    runner_secret.write_text("".join(f"{name}={value}\n" for name, value in SECRETS.items()))
    cache = tmp_path_factory.mktemp("cache")
    (cache / "leak").symlink_to(runner_secret)
    config = StackConfig(
        work_dir=tmp_path_factory.mktemp("stack"), scripts_dir=scripts, store_url="s3://trajectories",
        envs=1, runners=1, replicas=1, max_infra_retries=0, cache_dir=cache, api_token=SECRETS["PRODUCER_API_TOKEN"],
        extra_env={"S3_ENDPOINT": s3_endpoint, "S3_ACCESS_KEY": "testing", "S3_SECRET_KEY": SECRETS["S3_SECRET_KEY"],
                   "GATEWAY_API_KEYS": SECRETS["GATEWAY_API_KEYS"],
                   "RUNNER_GATEWAY_API_KEY": SECRETS["GATEWAY_API_KEYS"], "CUA_CANARY": SECRETS["CUA_CANARY"],
                   "PRODUCER_RETRY_INTERVALS_S": "[0]"})
    with LocalStack(config) as running:
        yield running


@pytest.fixture(scope="module")
def producer(stack: LocalStack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {SECRETS['PRODUCER_API_TOKEN']}"}
    with httpx.Client(base_url=stack.producer_url, headers=headers, timeout=20) as client:
        yield client


def _redis_values(client: redis.Redis) -> Iterator[bytes]:
    """Every value in Redis (strings, hashes, lists, sets, sorted sets, streams), as bytes."""
    for key in client.scan_iter(count=500):
        kind = client.type(key)
        if kind == b"string":
            yield client.get(key) or b""
        elif kind == b"hash":
            yield from (k + b"=" + v for k, v in client.hgetall(key).items())
        elif kind == b"list":
            yield from client.lrange(key, 0, -1)
        elif kind == b"set":
            yield from client.smembers(key)
        elif kind == b"zset":
            yield from client.zrange(key, 0, -1)
        elif kind == b"stream":
            for _, fields in client.xrange(key):
                yield from (k + b"=" + v for k, v in fields.items())


def test_a_run_of_path_attacks_ends_in_clear_errors_and_stores_no_runner_secret(
        stack: LocalStack, producer: httpx.Client, s3_endpoint: str) -> None:
    tasks = [ENVIRON_RULE, CACHE_SYMLINK, UPLOAD_SYMLINK]
    response = producer.post("/v1/runs", json={"tasks": tasks, "rollouts_per_task": 1, "max_steps": 3,
                                               "run_id": "attack-paths"})
    assert response.status_code == 201, response.text
    run = wait_until(lambda: (r := producer.get("/v1/runs/attack-paths").json())["finished"] and r, 240,
                     "the attack run to finish", interval_s=0.5)
    by_task = {r["task_id"]: r for r in run["rollouts"]}
    assert by_task["leak-environ-rule"]["status"] == "eval_error"
    assert "/proc/self/environ" in by_task["leak-environ-rule"]["error"]
    assert "never a runner host path" in by_task["leak-environ-rule"]["error"]
    assert by_task["leak-cache-symlink"]["status"] == "eval_error"
    assert "'leak' not found" in by_task["leak-cache-symlink"]["error"]
    assert by_task["leak-upload-symlink"]["status"] == "setup_error"
    assert "'leak' not found" in by_task["leak-upload-symlink"]["error"]

    store = S3Store("trajectories", s3_endpoint, "testing", SECRETS["S3_SECRET_KEY"])
    wait_until(lambda: all(store.list(f"attack-paths/{t['id']}_0/manifest.json") for t in tasks), 60,
               "the trajectories to be written")
    keys = store.list("")
    assert any(key.startswith("attack-paths/") for key in keys)  # the search below covers the run's files
    values = [value.encode() for value in SECRETS.values()]
    for key in keys:
        data = store.get(key)
        leaked = [name for name, value in zip(SECRETS, values, strict=True) if value in data]
        assert not leaked, f"{key} holds the runner's {leaked}"
    with redis.Redis.from_url(stack.redis_url) as client:
        for data in _redis_values(client):
            assert not any(value in data for value in values), data[:200]


@pytest.mark.parametrize(("task", "field"), [
    (_task("abs-upload", {"func": "infeasible"},
           [{"type": "upload_file", "parameters": {"files": [{"local_path": "/proc/self/environ",
                                                              "path": "/home/user/x"}]}}]),
     "files[0].local_path '/proc/self/environ' is an absolute path"),
    (_task("climb-upload", {"func": "infeasible"},
           [{"type": "upload_file", "parameters": {"files": [{"local_path": "a/../../../etc/passwd",
                                                              "path": "/home/user/x"}]}}]),
     "files[0].local_path 'a/../../../etc/passwd' climbs out"),
    (_task("climb-cache", {"func": "compare_text_file", "result": {"type": "rule", "rules": "x"},
                           "expected": {"type": "cache_file", "path": "../../proc/self/environ"}}),
     "expected.path '../../proc/self/environ' (cache_file) climbs out"),
    (_task("abs-cache", {"func": ["exact_match"], "result": [{"type": "cache_file", "path": "/root/.env"}],
                         "expected": [{"type": "rule", "rules": {"expected": "x"}}]}),
     "result[0].path '/root/.env' (cache_file) is an absolute path"),
])
def test_the_producer_refuses_a_runner_path_naming_the_field_and_enqueues_nothing(
        stack: LocalStack, producer: httpx.Client, task: dict[str, Any], field: str) -> None:
    run_id = f"refused-{task['id']}"
    response = producer.post("/v1/runs", json={"tasks": [_task("harmless", {"func": "infeasible"}), task],
                                               "rollouts_per_task": 1, "max_steps": 1, "run_id": run_id})
    assert response.status_code == 422, response.text
    assert field in response.json()["error"] and "tasks.1" in response.json()["error"], response.json()["error"]
    assert producer.get(f"/v1/runs/{run_id}").status_code == 404
    with redis.Redis.from_url(stack.redis_url) as client:
        assert not [key for key in client.scan_iter(match=f"*{run_id}*")]
