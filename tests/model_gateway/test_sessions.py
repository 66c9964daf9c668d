"""Gateway sessions over real HTTP: an unmodified OpenAI SDK client (PyPI `openai`) pointed at a session's base
URL, two scripted-policy replicas (mocks of vLLM GPU servers, which return token ids and logprobs as vLLM does),
and a real redis-server whose event stream carries the session's `cua.step.v1` records."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import redis
from PIL import Image

from common import keys
from common.events import EpisodeEvent, StepEvent, blobs_of, decode_event
from common.polling import free_port, wait_until
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.scripted_policy.tokens import expected_logprobs
from tests.servers import serve_app

INSTRUCTION = "Sort the column by date"
REPLIES = ["Thought: open the menu\nAction: click(start_box='(10,20)')", "Thought: sort\nAction: hotkey(key='ctrl s')",
           "Thought: done\nAction: finished()"]


def png(color: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 18), (color, 10, 10)).save(buffer, "PNG")
    return buffer.getvalue()


def image_part(data: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()}}


@pytest.fixture()
def gateway(tmp_path: Path, redis_url: str) -> Iterator[str]:
    """A gateway over two scripted replicas, publishing on `redis_url`; yields its URL."""
    (tmp_path / "sort.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": REPLIES}))
    with ExitStack() as stack:
        replicas = [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=tmp_path))))
                    for _ in range(2)]
        settings = GatewaySettings(replicas=",".join(replicas), redis_url=redis_url, health_interval_s=0.1,
                                   session_sweep_interval_s=0.1)
        url = stack.enter_context(serve_app(create_gateway(settings)))
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).json().get("routable") == 2, 10, "replicas")
        yield url


def stream_events(redis_url: str) -> list[tuple[StepEvent | EpisodeEvent, dict[str, bytes]]]:
    client = redis.Redis.from_url(redis_url)
    try:
        entries = client.xrange(keys.EVENTS_STREAM)
    finally:
        client.close()
    return [(decode_event(fields)[0], blobs_of(fields)) for _, fields in entries]


def open_session(gateway: str, **spec: Any) -> dict[str, Any]:
    response = httpx.post(f"{gateway}/v1/sessions", json=spec or None, timeout=10)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_an_openai_client_session_is_sticky_and_every_call_is_recorded(gateway: str, redis_url: str) -> None:
    info = open_session(gateway, model="policy")
    assert info["base_url"] == f"{gateway}/sessions/{info['session_id']}/v1" and info["calls"] == 0
    client = openai.OpenAI(base_url=info["base_url"], api_key="unused", max_retries=0)
    shots = [png(40), png(80), png(120)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a GUI agent."}]
    replicas, versions = set(), set()
    for turn, shot in enumerate(shots):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"{INSTRUCTION} (turn {turn})"},
                                                     image_part(shot)]})
        raw = client.chat.completions.with_raw_response.create(model="policy", messages=messages,  # type: ignore
                                                               temperature=0.0)
        answer = raw.parse()
        assert answer.choices[0].message.content == REPLIES[turn]
        assert answer.choices[0].logprobs is None  # not asked for: the gateway's own fields are taken out
        assert "prompt_token_ids" not in json.loads(raw.text)
        assert raw.headers["x-session-step"] == str(turn)
        replicas.add(raw.headers["x-replica"])
        versions.add(raw.headers["x-model-version"])
        messages.append({"role": "assistant", "content": REPLIES[turn]})
    assert len(replicas) == 1, f"a session moved between replicas: {replicas}"

    events = stream_events(redis_url)
    start, steps = events[0][0], [(e, b) for e, b in events[1:] if isinstance(e, StepEvent)]
    assert isinstance(start, EpisodeEvent) and start.phase == "start" and start.task_id == info["session_id"]
    assert [e.step for e, _ in steps] == [0, 1, 2]
    names = [f"blob_{hashlib.sha256(shot).hexdigest()}.png" for shot in shots]
    for turn, (event, blobs) in enumerate(steps):
        assert event.session_id == info["session_id"] and event.run_id == "sessions"
        assert event.response == REPLIES[turn]
        assert event.token_ids == list(REPLIES[turn].encode())
        assert event.logprobs == expected_logprobs(REPLIES[turn], event.model_version or "")
        assert event.prompt_token_ids and len(event.prompt_token_ids) == event.usage.prompt_tokens
        assert event.replica in replicas and event.model_version in versions and event.timings.model_ms > 0
        assert event.request_params == {"model": "policy", "temperature": 0.0}
        assert list(blobs) == [names[turn]]  # each screenshot rides once, with the call that first sent it
        refs = [part["image_ref"]["name"] for m in event.request_messages or []
                if isinstance(m["content"], list) for part in m["content"] if part["type"] == "image_ref"]
        assert refs == names[:turn + 1]
        assert "base64" not in event.model_dump_json()
    # multi-turn: each call's prompt starts with the previous call's prompt and response
    for (before, _), (after, _) in zip(steps, steps[1:], strict=False):
        assert before.prompt_token_ids and before.token_ids and after.prompt_token_ids
        assert after.prompt_token_ids[:len(before.prompt_token_ids) + len(before.token_ids)] == \
            before.prompt_token_ids + before.token_ids

    closed = httpx.delete(f"{gateway}/v1/sessions/{info['session_id']}", timeout=10)
    assert closed.status_code == 200 and closed.json()["closed"] and len(closed.json()["records"]) == 3
    end = stream_events(redis_url)[-1][0]
    assert isinstance(end, EpisodeEvent) and end.phase == "end" and end.num_steps == 3
    with pytest.raises(openai.NotFoundError, match=f"session '{info['session_id']}' is closed"):
        client.chat.completions.create(model="policy", messages=messages)
    again = httpx.delete(f"{gateway}/v1/sessions/{info['session_id']}", timeout=10)
    assert again.status_code == 404 and "closed by DELETE" in again.json()["error"]


def test_a_streamed_call_is_relayed_and_recorded_and_logprobs_asked_for_stay(gateway: str, redis_url: str) -> None:
    info = open_session(gateway, run_id="run-7", task_id="task-x", rollout_index=2, rollout_id="r-7",
                        episode_events=False)
    client = openai.OpenAI(base_url=info["base_url"], api_key="unused", max_retries=0)
    chunks = client.chat.completions.create(model="policy", stream=True,
                                            messages=[{"role": "user", "content": INSTRUCTION}])
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == REPLIES[0]
    answer = client.chat.completions.create(model="policy", logprobs=True, messages=[
        {"role": "user", "content": INSTRUCTION}, {"role": "assistant", "content": REPLIES[0]},
        {"role": "user", "content": "go on"}])
    assert answer.choices[0].logprobs is not None and len(answer.choices[0].logprobs.content or []) > 0
    wait_until(lambda: len(stream_events(redis_url)) == 2, 10, "both records")
    events = [e for e, _ in stream_events(redis_url)]
    assert all(isinstance(e, StepEvent) for e in events)  # no episode events: the creator publishes them
    first, second = events
    assert isinstance(first, StepEvent) and isinstance(second, StepEvent)
    assert (first.run_id, first.task_id, first.rollout_index, first.rollout_id) == ("run-7", "task-x", 2, "r-7")
    assert first.step == 0 and first.response == REPLIES[0] and first.token_ids == list(REPLIES[0].encode())
    assert first.prompt_token_ids and first.logprobs == expected_logprobs(REPLIES[0], first.model_version or "")
    assert second.step == 1 and second.response == REPLIES[1] and second.request_params["logprobs"] is True


def test_unknown_and_expired_sessions_get_a_404_naming_them(gateway: str) -> None:
    client = openai.OpenAI(base_url=f"{gateway}/sessions/s-nope/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="no session 's-nope'"):
        client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "hi"}])
    info = open_session(gateway, ttl_s=0.3)
    wait_until(lambda: httpx.get(f"{gateway}/v1/sessions/{info['session_id']}", timeout=5).status_code == 404,
               10, "the idle session to expire")
    shown = httpx.get(f"{gateway}/v1/sessions/{info['session_id']}", timeout=5).json()
    assert "idle for more than its TTL of 0.3 s" in shown["error"]


def test_bad_requests_are_named(gateway: str) -> None:
    bad_spec = httpx.post(f"{gateway}/v1/sessions", json={"run_id": "no/slash"}, timeout=5)
    assert bad_spec.status_code == 422 and "run_id" in bad_spec.text
    info = open_session(gateway)
    no_messages = httpx.post(f"{info['base_url']}/chat/completions", json={"model": "policy"}, timeout=5)
    assert no_messages.status_code == 400 and "'messages' list" in no_messages.json()["error"]
    not_json = httpx.post(f"{info['base_url']}/chat/completions", content=b"{", timeout=5)
    assert not_json.status_code == 400 and "bad chat completion request" in not_json.json()["error"]


def test_without_redis_nothing_goes_unrecorded(tmp_path: Path) -> None:
    """Redis unreachable: a session cannot open with its start event, and a call whose record cannot be published
    is answered 503 naming it (the agent may retry; no answer goes out unrecorded)."""
    (tmp_path / "sort.json").write_text(json.dumps({"instruction": INSTRUCTION, "replies": REPLIES}))
    with ExitStack() as stack:
        replica = stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=tmp_path))))
        settings = GatewaySettings(replicas=replica, redis_url=f"redis://127.0.0.1:{free_port()}/0",
                                   health_interval_s=0.1, session_publish_timeout_s=0.5)
        url = stack.enter_context(serve_app(create_gateway(settings)))
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).json().get("routable") == 1, 10, "replica")
        refused = httpx.post(f"{url}/v1/sessions", timeout=10)
        assert refused.status_code == 503 and "could not publish the session's start event" in refused.text
        info = open_session(url, episode_events=False)
        client = openai.OpenAI(base_url=info["base_url"], api_key="unused", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="could not publish the record of call 0"):
            client.chat.completions.create(model="policy", messages=[{"role": "user", "content": INSTRUCTION}])
        shown = httpx.get(f"{url}/v1/sessions/{info['session_id']}", timeout=5).json()
        assert shown["calls"] == 0 and shown["records"] == []
