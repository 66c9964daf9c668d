"""A gateway session (the external agents' path: an unmodified OpenAI client, the gateway records each call) in
front of the two real vLLM replicas: every recorded call carries the ids vLLM sampled, their text and logprobs,
streamed or not; the session export places faithful turns in one sequence and records where an agent rewrote
its history as a new segment with its reason (issue 32, point 3: the runner cannot carry an external agent's
ids)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from common.polling import wait_until
from services.cli.export_session import session_segments
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from tests.servers import serve_app
from tests.vllm.fidelity import logprob_mismatches, rescored_logprobs
from tests.vllm_fixtures import VLLMReplicas, tokenizer_oracle

#: The first test may wait for the model build and the servers' start (minutes on busy cores).
pytestmark = pytest.mark.timeout(1800)

SYSTEM = "You are asked to complete the following task: wait for the window."


@pytest.fixture()
def gateway(vllm_replicas: VLLMReplicas, redis_url: str) -> Iterator[str]:
    settings = GatewaySettings(replicas=",".join(vllm_replicas.urls), redis_url=redis_url, health_interval_s=0.2)
    with serve_app(create_gateway(settings)) as url:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).json().get("routable") == 2, 30, "replicas")
        yield url


def test_session_calls_record_vllm_tokens_and_a_rewritten_history_starts_a_segment(
        gateway: str, vllm_replicas: VLLMReplicas) -> None:
    info = httpx.post(f"{gateway}/v1/sessions", json={"model": vllm_replicas.model}, timeout=10).json()
    client = openai.OpenAI(base_url=info["base_url"], api_key="unused", max_retries=0, timeout=120)
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "step 0"}]
    stream = client.chat.completions.create(model=vllm_replicas.model, messages=messages,  # type: ignore[arg-type]
                                            temperature=1.0, max_tokens=16, stream=True)
    first = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    messages += [{"role": "assistant", "content": first}, {"role": "user", "content": "step 1"}]
    second = client.chat.completions.create(model=vllm_replicas.model, messages=messages,  # type: ignore[arg-type]
                                            temperature=1.0, max_tokens=16).choices[0].message.content or ""
    # the agent keeps a summary instead of its replies (as agents with a memory do): the history is rewritten
    rewritten = [messages[0], {"role": "user", "content": "summary: waited twice"},
                 {"role": "user", "content": "step 2"}]
    client.chat.completions.create(model=vllm_replicas.model, messages=rewritten,  # type: ignore[arg-type]
                                   temperature=1.0, max_tokens=16)
    records = httpx.delete(f"{gateway}/v1/sessions/{info['session_id']}", timeout=30).json()["records"]
    assert [r["response"] for r in records[:2]] == [first, second]
    assert len({r["replica"] for r in records}) == 1  # sticky: one replica's prefix cache

    oracle = tokenizer_oracle(vllm_replicas.model_dir, decode=[r["token_ids"] for r in records],
                              chats=[messages[:2], messages, rewritten])
    for record, text, prompt in zip(records, oracle["decode"], oracle["chats"], strict=True):
        assert text == record["response"] and record["prompt_token_ids"] == prompt
        assert len(record["logprobs"]) == len(record["token_ids"])
        rescored = rescored_logprobs(vllm_replicas.urls[0], vllm_replicas.model, prompt, record["token_ids"])
        assert logprob_mismatches(record["logprobs"], rescored) == []

    segments = session_segments(records)
    assert [s["segment_reason"] for s in segments][-1] == \
        "step 2: the call's prompt does not extend the sequence before it"
    assert segments[-1]["steps"] == [2] and segments[-1]["prompt_ids"] == records[2]["prompt_token_ids"]
    faithful = records[1]["prompt_token_ids"][:len(records[0]["prompt_token_ids"]) + len(records[0]["token_ids"])]
    same = faithful == records[0]["prompt_token_ids"] + records[0]["token_ids"]
    print(f"\ngateway session on vLLM: the re-encoded reply of call 0 {'extends' if same else 'BREAKS'} the "
          f"sequence; {len(segments)} segments: {[s['segment_reason'] for s in segments]}")
    assert len(segments) == (2 if same else 3)
