"""Session level of the trainer export (`services/cli/export_session.py`).

Units on stored step records, then the whole path read back: an OpenAI SDK client's gateway session over a
scripted-policy replica (mock of a vLLM GPU server), its records on a real redis-server, persisted by the sink
into moto's S3 server, served by the producer API, exported by `cua-rollout export --level session` as Parquet
and JSON Lines and read back."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pyarrow.parquet as pq
import redis
from PIL import Image
from typer.testing import CliRunner

from common.objectstore import S3Store
from common.polling import free_port, wait_until
from services.cli.export_session import session_records, session_segments
from services.cli.main import app
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.scripted_policy.tokens import expected_logprobs
from services.storage_sink.consumer import SinkConsumer
from services.storage_sink.settings import SinkSettings
from services.storage_sink.writer import TrajectoryWriter
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app


def step(index: int, prompt: list[int] | None, response: list[int] | None, logprobs: list[float] | None = None,
         version: str = "v1", session: str | None = "s-1") -> dict[str, Any]:
    return {"step": index, "prompt_token_ids": prompt, "token_ids": response, "policy_version": version,
            "logprobs": logprobs if logprobs is not None else ([-0.5] * len(response) if response else None),
            "session_id": session}


def test_calls_that_extend_the_sequence_make_one_masked_sequence() -> None:
    [record] = session_segments([
        step(1, [1, 2, 10, 11, 3], [12], [-0.3], "v2"),  # out of order on purpose: laid out by step
        step(0, [1, 2], [10, 11], [-0.1, -0.2]),
    ])
    assert record["prompt_ids"] == [1, 2]
    assert record["response_ids"] == [10, 11, 3, 12]
    assert record["response_mask"] == [1, 1, 0, 1]
    assert record["rollout_log_probs"] == [-0.1, -0.2, 0.0, -0.3]
    assert (record["turn_starts"], record["turn_ends"]) == ([0, 3], [2, 4])
    assert (record["steps"], record["policy_versions"]) == ([0, 1], ["v1", "v2"])
    assert record["segment_reason"] == "first call" and record["skipped_steps"] == []


def test_a_rewritten_history_or_a_call_without_ids_starts_a_new_segment() -> None:
    records = session_segments([
        step(0, [1, 2], [10]),
        step(1, [1, 9, 10, 4], [11]),  # the agent rewrote its history
        step(2, None, [12]),  # a server that gave no prompt ids
        step(3, [7], [13], logprobs=[]),  # logprobs missing: none for the segment
        step(4, None, None),
    ])
    assert [r["prompt_ids"] for r in records] == [[1, 2], [1, 9, 10, 4], [7]]
    assert "step 1: the call's prompt does not extend" in records[1]["segment_reason"]
    assert "step 3: after calls without token ids" in records[2]["segment_reason"]
    assert records[2]["skipped_steps"] == [2, 4] and records[2]["rollout_log_probs"] is None
    assert session_segments([step(0, None, None)]) == []


def test_steps_without_a_session_are_the_trajectorys_session() -> None:
    rollout = {"rollout_id": "r-1", "reward": 1.0}
    records = session_records(rollout, [step(0, [1], [2], session=None), step(1, [1, 2, 3], [4], session=None)])
    assert len(records) == 1 and records[0]["session_id"] == "r-1" and records[0]["reward"] == 1.0
    assert records[0]["response_mask"] == [1, 0, 1] and records[0]["num_segments"] == 1


def png(color: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 9), (color, 0, 0)).save(buffer, "PNG")
    return buffer.getvalue()


REPLIES = ["Action: click(start_box='(1,2)')", "Action: type(content='abc')", "Action: finished()"]


def test_a_gateway_session_exports_with_token_ids_and_loss_mask(tmp_path: Path, redis_url: str,
                                                                s3_endpoint: str) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "t.json").write_text(json.dumps({"instruction": "Fill the form", "replies": REPLIES}))
    bucket = f"sessions-{free_port()}"
    store = S3Store(bucket, s3_endpoint, "testing", "testing")
    producer_settings = ProducerSettings(redis_url=redis_url, store_url=f"s3://{bucket}", s3_endpoint=s3_endpoint,
                                         s3_access_key="testing", s3_secret_key="testing")
    with serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts))) as replica, \
            serve_app(create_gateway(GatewaySettings(replicas=replica, redis_url=redis_url,
                                                     health_interval_s=0.1))) as gateway, \
            serve_app(create_producer(producer_settings)) as producer:
        wait_until(lambda: httpx.get(f"{gateway}/healthz", timeout=5).json().get("routable") == 1, 10, "replica")
        info = httpx.post(f"{gateway}/v1/sessions", json={"model": "policy", "agent": "test"}, timeout=10).json()
        client = openai.OpenAI(base_url=info["base_url"], api_key="unused", max_retries=0)
        messages: list[dict[str, Any]] = []
        for turn in range(3):
            url = "data:image/png;base64," + base64.b64encode(png(turn)).decode()
            messages.append({"role": "user", "content": [{"type": "text", "text": f"Fill the form, turn {turn}"},
                                                         {"type": "image_url", "image_url": {"url": url}}]})
            answer = client.chat.completions.create(model="policy", messages=messages)  # type: ignore[arg-type]
            messages.append({"role": "assistant", "content": answer.choices[0].message.content})
        assert httpx.delete(f"{gateway}/v1/sessions/{info['session_id']}", timeout=10).status_code == 200

        sink = SinkConsumer(redis.Redis.from_url(redis_url), TrajectoryWriter(store),
                            SinkSettings(redis_url=redis_url, consumer="c1"))
        sink.ensure_group()
        wait_until(lambda: sink.process_once() == 0 and _manifest_written(store, info), 20, "the sink to persist")
        prefix = f"sessions/{info['session_id']}_0"
        for turn in range(3):  # each screenshot stored once, by its content
            assert store.get(f"{prefix}/blob_{hashlib.sha256(png(turn)).hexdigest()}.png") == png(turn)

        out = tmp_path / "sessions.parquet"
        result = CliRunner().invoke(app, ["export", "sessions", "--level", "session", "--format", "parquet",
                                          "--out", str(out), "--producer", producer])
        assert result.exit_code == 0, result.output
        jsonl = tmp_path / "sessions.jsonl"
        assert CliRunner().invoke(app, ["export", "sessions", "--level", "session", "--out", str(jsonl),
                                        "--producer", producer]).exit_code == 0

    [record] = pq.read_table(out).to_pylist()
    assert record == json.loads(jsonl.read_text())
    assert record["session_id"] == info["session_id"] and record["group_id"] == f"sessions/{info['session_id']}"
    assert record["num_segments"] == 1 and record["steps"] == [0, 1, 2]
    ids, mask, logprobs = record["response_ids"], record["response_mask"], record["rollout_log_probs"]
    assert len(ids) == len(mask) == len(logprobs)
    version = record["policy_versions"][0]
    for turn, (start, end) in enumerate(zip(record["turn_starts"], record["turn_ends"], strict=True)):
        assert bytes(ids[start:end]).decode() == REPLIES[turn] and set(mask[start:end]) == {1}
        assert logprobs[start:end] == expected_logprobs(REPLIES[turn], version)
    model_tokens = sum(len(r.encode()) for r in REPLIES)
    assert sum(mask) == model_tokens and len(ids) > model_tokens  # observations (text, screenshots) masked 0
    assert all(lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 0)
    assert record["prompt_ids"] and 151655 in record["prompt_ids"]  # the first screenshot's image tokens


def _manifest_written(store: S3Store, info: dict[str, Any]) -> bool:
    try:
        store.get(f"sessions/{info['session_id']}_0/manifest.json")
    except KeyError:
        return False
    return True
