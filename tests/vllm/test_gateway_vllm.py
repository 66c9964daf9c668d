"""The gateway against real vLLM replicas (issue 32 point 5): vLLM's own 404 for an unknown model, streaming with
logprobs (relayed and recorded by a session), load from vLLM's `/metrics`, prefix caching, and `vllm_sleep` on the
CPU build. The replicas are the session's two vLLM servers (`tests/vllm_fixtures.py`); each test runs its own
gateway in-process over real HTTP."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import redis

from common import keys
from common.events import StepEvent, decode_event
from common.polling import wait_until
from services.model_gateway.engine_load import parse_engine_load
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from tests.servers import serve_app
from tests.vllm_fixtures import VLLMReplicas

CHAT = "/v1/chat/completions"
#: The first test also waits for the session's vLLM servers to start (minutes on busy cores).
pytestmark = pytest.mark.timeout(900)


@contextmanager
def gateway(urls: list[str], **settings: Any) -> Iterator[str]:
    """A gateway over `urls` (health every 0.2 s), every replica routable before yield; yields its URL."""
    config = GatewaySettings(replicas=",".join(urls), **{"health_interval_s": 0.2, **settings})
    with serve_app(create_gateway(config)) as url:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).json().get("routable") == len(urls), 30,
                   "replicas routable")
        yield url


def replicas_view(gw: str) -> dict[str, dict[str, Any]]:
    """The gateway's replicas by id. 30 s: in make test the busy replica's generation, two gateways and the other
    workers' tests share 2 cores (load average 10), and 5 s ran out once."""
    return {r["id"]: r for r in httpx.get(f"{gw}/admin/replicas", timeout=30).json()["replicas"]}


def greedy(model: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], "temperature": 0.0, "max_tokens": 16,
            **extra}


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    """The JSON events of a server-sent event stream (`data: {...}`; `data: [DONE]` left out)."""
    events = []
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            events.append(json.loads(line[len("data: "):]))
    return events


def test_unknown_model_gets_vllms_own_404_through_the_gateway_and_a_session(vllm_replicas: VLLMReplicas,
                                                                            redis_url: str) -> None:
    body = greedy("no-such-model", "hello")
    direct = httpx.post(vllm_replicas.urls[0] + CHAT, json=body, timeout=60)
    assert direct.status_code == 404 and direct.json()["error"]["type"] == "NotFoundError"
    with gateway(vllm_replicas.urls, redis_url=redis_url) as gw:
        relayed = httpx.post(gw + CHAT, json=body, headers={"X-Episode-Id": "e404"}, timeout=60)
        assert relayed.status_code == 404
        assert relayed.json() == direct.json()  # vLLM's body, not one of the gateway's
        assert relayed.headers["x-replica"] in replicas_view(gw)
        session = httpx.post(f"{gw}/v1/sessions", json={"model": "no-such-model"}, timeout=10).json()
        in_session = httpx.post(f"{session['base_url']}/chat/completions", json=body, timeout=60)
        assert in_session.status_code == 404 and in_session.json() == direct.json()
        assert httpx.get(f"{gw}/v1/sessions/{session['session_id']}", timeout=10).json()["calls"] == 0
        # a client's mistake is not the replica's failure
        assert all(r["healthy"] and r["consecutive_failures"] == 0 for r in replicas_view(gw).values())


def test_streaming_with_logprobs_equals_the_non_streamed_answer_and_is_recorded(vllm_replicas: VLLMReplicas,
                                                                                redis_url: str) -> None:
    tokens = {"logprobs": True, "return_token_ids": True}
    body = greedy(vllm_replicas.model, "Open the terminal and list the files in the home folder.", **tokens)
    with gateway(vllm_replicas.urls, redis_url=redis_url, session_sweep_interval_s=0.2) as gw:
        headers = {"X-Episode-Id": "stream-1"}
        whole = httpx.post(gw + CHAT, json=body, headers=headers, timeout=120)
        assert whole.status_code == 200, whole.text
        choice = whole.json()["choices"][0]
        with httpx.stream("POST", gw + CHAT, json={**body, "stream": True}, headers=headers, timeout=120) as streamed:
            assert streamed.status_code == 200
            assert streamed.headers["content-type"].startswith("text/event-stream")
            assert streamed.headers["x-replica"] == whole.headers["x-replica"]  # sticky: same replica, same cache
            chunks = [chunk for chunk in streamed.iter_raw()]
        raw = b"".join(chunks)
        events = sse_events(raw)
        # vLLM's first event carries the role and prompt ids, then deltas. Their count is not fixed: vLLM's output
        # collector merges the deltas a lagging reader has not taken yet (vllm/v1/engine/output_processor.py,
        # RequestOutputCollector), so on busy cores the whole answer can come as one delta. The relay chunk by
        # chunk is tests/model_gateway/test_forwarding.py's; here, every delta together equals the whole answer.
        assert len(events) >= 2 and raw.rstrip().endswith(b"data: [DONE]"), "the answer did not arrive as a stream"
        assert events[0]["prompt_token_ids"] == whole.json()["prompt_token_ids"]
        deltas = [e["choices"][0] for e in events if e.get("choices")]
        assert sum((d.get("token_ids") or [] for d in deltas), []) == choice["token_ids"]
        streamed_logprobs = [c["logprob"] for d in deltas for c in (d.get("logprobs") or {}).get("content") or []]
        assert streamed_logprobs == pytest.approx([c["logprob"] for c in choice["logprobs"]["content"]], abs=1e-4)
        assert "".join(d["delta"].get("content") or "" for d in deltas) == choice["message"]["content"]

        # the same call streamed in a session, the client asking for no token fields: recorded all the same
        session = httpx.post(f"{gw}/v1/sessions", json={"model": vllm_replicas.model}, timeout=10).json()
        plain = greedy(vllm_replicas.model, "Open the terminal and list the files in the home folder.", stream=True)
        with httpx.stream("POST", f"{session['base_url']}/chat/completions", json=plain, timeout=120) as call:
            assert call.status_code == 200
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in sse_events(call.read())
                           if e.get("choices"))
        assert text == choice["message"]["content"]
        client = redis.Redis.from_url(redis_url)
        try:
            steps = [decode_event(f)[0] for _, f in client.xrange(keys.EVENTS_STREAM)]
        finally:
            client.close()
        recorded = [e for e in steps if isinstance(e, StepEvent) and e.session_id == session["session_id"]]
        assert len(recorded) == 1
        step = recorded[0]
        assert step.token_ids == choice["token_ids"]
        assert step.prompt_token_ids == whole.json()["prompt_token_ids"]
        assert step.logprobs == pytest.approx([c["logprob"] for c in choice["logprobs"]["content"]], abs=1e-4)
        assert step.response == choice["message"]["content"]
        assert httpx.delete(f"{gw}/v1/sessions/{session['session_id']}", timeout=30).status_code == 200


def test_prefix_caching_is_on_and_counted_in_metrics(vllm_replicas: VLLMReplicas) -> None:
    url = vllm_replicas.urls[0]
    before = parse_engine_load(httpx.get(f"{url}/metrics", timeout=10).text)
    assert before is not None and before.prefix_cache_hits is not None and before.prefix_cache_queries is not None
    long_text = "Click the Save button in the toolbar, then close the dialog. " * 60  # > 2 KV blocks of 128
    for _ in range(2):
        assert httpx.post(url + CHAT, json=greedy(vllm_replicas.model, long_text, max_tokens=1),
                          timeout=120).status_code == 200
    after = parse_engine_load(httpx.get(f"{url}/metrics", timeout=10).text)
    assert after is not None and after.prefix_cache_hits is not None and after.prefix_cache_queries is not None
    assert after.prefix_cache_hits - before.prefix_cache_hits >= 256  # the second call found the first's blocks


class DirectLoad:
    """`count` threads sending completions straight to one replica (not through the gateway), each sent again
    when it ends, until the block exits. Each is a long prompt of its own (1,500 words no other prompt shares: no
    prefix-cache hit) and one output token: prefill keeps vLLM's engine busy (`num_requests_running` >= 1
    throughout, measured) while its API server stays free to answer `/metrics` in ~50 ms. Long decodes do not do
    this on 2 cores: the tiny model decodes faster than vLLM's API server turns tokens into output, so the engine
    reports 0 running while the API server, still sending, answers `/metrics` 4-30 s late."""

    def __init__(self, url: str, model: str, count: int) -> None:
        self.stop_event = threading.Event()
        self.sent = itertools.count()
        self.threads = [threading.Thread(target=self._one, args=(url, model), daemon=True) for _ in range(count)]

    def _one(self, url: str, model: str) -> None:
        while not self.stop_event.is_set():
            n = next(self.sent)
            prompt = " ".join(f"w{n}x{i}" for i in range(1500))
            httpx.post(url + CHAT, json=greedy(model, prompt, max_tokens=1), timeout=300)

    def __enter__(self) -> DirectLoad:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=60)


def test_load_from_vllm_metrics_steers_requests_away_from_a_busy_replica(vllm_replicas: VLLMReplicas) -> None:
    busy, idle = sorted(vllm_replicas.urls, key=lambda u: u.split("//", 1)[1])  # `busy` wins ties by id
    busy_id, idle_id = busy.split("//", 1)[1], idle.split("//", 1)[1]
    small = greedy(vllm_replicas.model, "hello", max_tokens=1)
    with DirectLoad(busy, vllm_replicas.model, 3), gateway(vllm_replicas.urls) as gw, \
            gateway(vllm_replicas.urls, engine_metrics=False) as blind:
        def both_read() -> bool:  # each replica's /metrics is scraped after its own health probe
            view = replicas_view(gw)
            return (view[busy_id]["engine_running"] or 0) >= 1 and view[idle_id]["engine_running"] is not None

        wait_until(both_read, 60, "the gateway to read both replicas' /metrics (the busy one's running requests)")
        view = replicas_view(gw)
        assert view[busy_id]["in_flight"] == 0 and view[idle_id]["engine_running"] == 0
        assert 0.0 <= view[busy_id]["kv_cache_usage"] <= 1.0
        # requests without a session key go to the least loaded replica: by vLLM's own count, the idle one
        assert [httpx.post(gw + CHAT, json=small, timeout=60).headers["x-replica"] for _ in range(3)] == [idle_id] * 3
        # control: a gateway that does not read /metrics sees two idle replicas and takes the first by id
        assert replicas_view(blind)[busy_id]["engine_running"] is None
        assert httpx.post(blind + CHAT, json=small, timeout=60).headers["x-replica"] == busy_id


def test_vllm_sleep_is_refused_by_the_cpu_build_with_a_clear_error(vllm_replicas: VLLMReplicas) -> None:
    with gateway(vllm_replicas.urls[:1]) as gw:
        started = httpx.post(f"{gw}/admin/reload", json={"version": "s1", "source": str(vllm_replicas.model_dir),
                                                         "method": "vllm_sleep"}, timeout=10)
        assert started.status_code == 202, started.text

        def ended() -> dict[str, Any] | None:
            view = httpx.get(f"{gw}/admin/reload", timeout=5).json()
            return view["reload"] if not view["running"] else None

        reload = wait_until(ended, 60, "the vllm_sleep reload to end")
        assert reload["state"] == "failed"
        [progress] = reload["replicas"]
        assert progress["state"] == "left_drained"  # nothing to roll back to: not re-admitted unconfirmed
        assert "HTTP 404" in progress["error"] and "--enable-sleep-mode" in progress["error"]
        assert list(replicas_view(gw).values())[0]["draining"]
