"""The scripted policy, the mock of a GPU model server (vLLM stand-in), over real HTTP on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from common.polling import free_port, http_ok, wait_until
from common.vllm_protocol import ChatCompletionResponse, ChatCompletionStreamResponse, token_id_of
from services.scripted_policy.scripts import EXHAUSTED_REPLY, NO_SCRIPT_REPLY, choose_reply, load_scripts, user_text
from services.scripted_policy.server import create_app
from services.scripted_policy.settings import ScriptedPolicySettings
from services.scripted_policy.tokens import expected_logprobs
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    """Two scripts, one nested and with a longer instruction containing the other; extra keys are ignored."""
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0", "R1"],
                                                 "expected": {"status": "completed"}}))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text(json.dumps({"instruction": "Rename the folder quickly",
                                                         "replies": ["Q0 é"]}))
    (tmp_path / "notes.txt").write_text("not a script")
    return tmp_path


@pytest.fixture()
def policy(scripts_dir: Path) -> Iterator[str]:
    """Base URL of a scripted policy serving `scripts_dir`."""
    with serve_app(create_app(ScriptedPolicySettings(scripts_dir=scripts_dir))) as url:
        yield url


def user(text: str, image: bool = True) -> dict:
    """A UI-TARS-style user message: a text part and (optionally) a screenshot part."""
    parts: list[dict] = [{"type": "text", "text": text}]
    if image:
        parts.append({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}})
    return {"role": "user", "content": parts}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def chat(messages: list[dict], **extra: object) -> dict:
    return {"model": "ui-tars-1.5-7b", "messages": messages, **extra}


def reply_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


# --- scripts (no HTTP) ---------------------------------------------------------------------------------------


def test_load_scripts_recursive_and_ignores_extra_keys(scripts_dir: Path) -> None:
    scripts = load_scripts(scripts_dir)
    assert sorted(s.instruction for s in scripts) == ["Rename the folder", "Rename the folder quickly"]
    assert load_scripts(None) == []


@pytest.mark.parametrize("content", ['{"instruction": 3, "replies": []}', '{"replies": ["x"]}', "not json",
                                     '{"instruction": "x", "replies": [1]}', "[]"])
def test_bad_script_file_raises_naming_it(tmp_path: Path, content: str) -> None:
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "bad_one.json").write_text(content)
    with pytest.raises(ValueError, match="bad_one.json"):
        load_scripts(tmp_path)


def test_matching_longest_instruction_and_step_index(scripts_dir: Path) -> None:
    scripts = load_scripts(scripts_dir)
    assert choose_reply(scripts, [{"role": "user", "content": "Please: Rename the folder now"}]) == "R0"
    assert choose_reply(scripts, [user("Rename the folder quickly")]) == "Q0 é"
    # The instruction may be in several user messages' text parts, or in the system message.
    history = [{"role": "system", "content": "You are an agent."}, user("Rename the folder"),
               assistant("R0"), user("", image=True)]
    assert choose_reply(scripts, history) == "R1"
    assert choose_reply(scripts, [*history, assistant("R1"), user("")]) == EXHAUSTED_REPLY
    assert choose_reply(scripts, [user("Open the browser")]) == NO_SCRIPT_REPLY
    assert choose_reply([], [user("Rename the folder")]) == NO_SCRIPT_REPLY
    assert "Rename" in user_text([user("Rename"), {"role": "user", "content": "the folder"}])


def test_a_script_naming_a_model_answers_only_requests_for_that_model(tmp_path: Path) -> None:
    for name, model in (("any", None), ("garbage", "audit-garbage"), ("stall", "audit-stall")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"instruction": "", "replies": [name.upper()],
                                                           **({"model": model} if model else {})}))
    scripts = load_scripts(tmp_path)
    assert choose_reply(scripts, [user("any task")], "audit-garbage") == "GARBAGE"
    assert choose_reply(scripts, [user("any task")], "audit-stall") == "STALL"
    assert choose_reply(scripts, [user("any task")], "ui-tars-1.5-7b") == "ANY"
    assert choose_reply(scripts, [user("any task")]) == "ANY"
    (tmp_path / "bad.json").write_text(json.dumps({"instruction": "", "replies": [], "model": 7}))
    with pytest.raises(ValueError, match="model must be a string"):
        load_scripts(tmp_path)


# --- HTTP --------------------------------------------------------------------------------------------------------


def test_chat_completion_shape_headers_and_steps(policy: str) -> None:
    with httpx.Client(base_url=policy, timeout=10) as client:
        raw = json.dumps(chat([user("Task: Rename the folder please")])).encode()
        response = client.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
        body = response.json()
        assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
        assert body["model"] == "ui-tars-1.5-7b" and isinstance(body["created"], int)
        choice = body["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "R0"} and choice["finish_reason"] == "stop"
        assert choice["logprobs"] is None and choice["token_ids"] is None  # vLLM sends the keys as null
        assert body["prompt_token_ids"] is None
        assert response.headers["X-Model-Version"] == "v0"
        assert response.headers["X-Body-Sha256"] == hashlib.sha256(raw).hexdigest()
        usage = body["usage"]
        assert usage["prompt_tokens"] >= 1000  # one screenshot
        assert usage["completion_tokens"] == 2 and usage["total_tokens"] == usage["prompt_tokens"] + 2

        history = [user("Rename the folder"), assistant("R0"), user("")]
        assert reply_of(client.post("/v1/chat/completions", json=chat(history))) == "R1"
        history += [assistant("R1"), user("")]
        assert reply_of(client.post("/v1/chat/completions", json=chat(history))) == EXHAUSTED_REPLY
        text_only = [{"role": "user", "content": "Rename the folder quickly"}]
        assert reply_of(client.post("/v1/chat/completions", json=chat(text_only))) == "Q0 é"
        assert reply_of(client.post("/v1/chat/completions", json=chat([user("x")]))) == NO_SCRIPT_REPLY
        assert client.post("/v1/chat/completions", json={"no": "messages"}).status_code == 400
        assert client.post("/v1/chat/completions", content=b"{not json").status_code == 400


def test_logprobs_and_token_ids_are_deterministic(policy: str) -> None:
    request = chat([user("Rename the folder quickly")], logprobs=True, return_token_ids=True)
    with httpx.Client(base_url=policy, timeout=10) as client:
        first, second = (client.post("/v1/chat/completions", json=request).json() for _ in range(2))
        without_ids = client.post("/v1/chat/completions", json=chat([user("Rename the folder quickly")],
                                                                    logprobs=True)).json()
    choice = first["choices"][0]
    reply_bytes = "Q0 é".encode()
    assert choice["token_ids"] == list(reply_bytes)
    content = choice["logprobs"]["content"]
    assert len(content) == len(reply_bytes) == first["usage"]["completion_tokens"]
    assert all(c["logprob"] <= 0 and c["top_logprobs"] == [] and len(c["bytes"]) == 1 for c in content)
    assert [c["token"] for c in content[:3]] == ["Q", "0", " "]
    assert [c["logprob"] for c in content] == expected_logprobs("Q0 é", "v0")
    assert choice["logprobs"] == second["choices"][0]["logprobs"]
    assert choice["token_ids"] == second["choices"][0]["token_ids"]
    # vLLM: prompt token ids at the top level, as many as usage.prompt_tokens (1000 per screenshot).
    assert len(first["prompt_token_ids"]) == first["usage"]["prompt_tokens"] >= 1000
    assert without_ids["choices"][0]["token_ids"] is None and without_ids["prompt_token_ids"] is None
    assert without_ids["choices"][0]["logprobs"] == choice["logprobs"]


def test_vllm_token_formats_match_vllms_models(policy: str) -> None:
    """top_logprobs alternatives and return_tokens_as_token_ids, validated against the vLLM-shaped models."""
    request = chat([user("Rename the folder")], logprobs=True, top_logprobs=3, return_tokens_as_token_ids=True,
                   return_token_ids=True)
    with httpx.Client(base_url=policy, timeout=10) as client:
        body = client.post("/v1/chat/completions", json=request).json()
        bad = client.post("/v1/chat/completions", json=chat([user("x")], top_logprobs=99))
    parsed = ChatCompletionResponse.model_validate(body)
    content = parsed.choices[0].logprobs.content  # type: ignore[union-attr]
    assert [token_id_of(c.token) for c in content] == parsed.choices[0].token_ids == list(b"R0")
    assert all(len(c.top_logprobs) == 3 and c.top_logprobs[0].logprob == c.logprob for c in content)
    assert all(c.top_logprobs[0].logprob > c.top_logprobs[1].logprob > c.top_logprobs[2].logprob for c in content)
    assert bad.status_code == 400 and "top_logprobs" in bad.text


def test_logprobs_depend_on_the_served_version(policy: str) -> None:
    request = chat([user("Rename the folder")], logprobs=True)
    with httpx.Client(base_url=policy, timeout=10) as client:
        before = client.post("/v1/chat/completions", json=request).json()["choices"][0]["logprobs"]["content"]
        client.post("/admin/reload", json={"model_version": "v7"})
        after = client.post("/v1/chat/completions", json=request).json()["choices"][0]["logprobs"]["content"]
    assert [c["logprob"] for c in before] == expected_logprobs("R0", "v0")
    assert [c["logprob"] for c in after] == expected_logprobs("R0", "v7") != expected_logprobs("R0", "v0")


def test_streaming_sse_chunks_end_with_done(policy: str) -> None:
    history = [user("Rename the folder"), assistant("R0"), user("")]
    long_script = chat([user("x" * 10)], stream=True)  # no script: the long call_user() reply spans chunks
    with httpx.Client(base_url=policy, timeout=10) as client:
        for request, expected in ((chat(history, stream=True), "R1"), (long_script, NO_SCRIPT_REPLY)):
            with client.stream("POST", "/v1/chat/completions", json=request) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                assert response.headers["X-Model-Version"] == "v0"
                text = "".join(response.iter_text())
            events = [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]
            assert events[-1] == "[DONE]"
            chunks = [json.loads(e) for e in events[:-1]]
            assert all(c["object"] == "chat.completion.chunk" for c in chunks)
            assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == expected
            assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
        assert len(chunks) > 3


def test_streaming_carries_token_ids_and_logprobs_per_chunk(policy: str) -> None:
    request = chat([user("x" * 10)], stream=True, logprobs=True, return_token_ids=True)
    with httpx.Client(base_url=policy, timeout=10) as client, \
            client.stream("POST", "/v1/chat/completions", json=request) as response:
        text = "".join(response.iter_text())
    chunks = [ChatCompletionStreamResponse.model_validate_json(line[6:]) for line in text.splitlines()
              if line.startswith("data: {")]
    assert chunks[0].prompt_token_ids and all(c.prompt_token_ids is None for c in chunks[1:])
    ids = [i for c in chunks for i in (c.choices[0].token_ids or [])]
    assert ids == list(NO_SCRIPT_REPLY.encode())
    logprobs = [p.logprob for c in chunks if c.choices[0].logprobs for p in c.choices[0].logprobs.content or []]
    assert logprobs == expected_logprobs(NO_SCRIPT_REPLY, "v0")


def test_vllm_reload_endpoints(scripts_dir: Path) -> None:
    settings = ScriptedPolicySettings(scripts_dir=scripts_dir, reload_ms=50, reload_fail_versions="bad")
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        started = time.perf_counter()
        assert client.post("/v1/load_lora_adapter", json={"lora_name": "policy", "lora_path": "/ckpt/v1"}).is_success
        assert time.perf_counter() - started >= 0.05  # the configured reload time
        assert client.get("/health").headers["X-Model-Version"] == "v1"
        cards = client.get("/v1/models").json()["data"]
        assert {"id": "policy", "root": "/ckpt/v1", "parent": "ui-tars-1.5-7b"}.items() <= cards[1].items()
        again = client.post("/v1/load_lora_adapter", json={"lora_name": "policy", "lora_path": "/ckpt/v2"})
        assert again.status_code == 400 and "already been loaded" in again.text
        assert client.post("/v1/unload_lora_adapter", json={"lora_name": "policy"}).is_success
        assert client.post("/v1/unload_lora_adapter", json={"lora_name": "policy"}).status_code == 404
        assert client.post("/v1/load_lora_adapter", json={"lora_name": "p", "lora_path": "/x/bad"}).status_code == 500
        # Sleep mode: asleep -> completions 503; reload_weights; awake again.
        assert client.post("/sleep", params={"level": 2}).is_success
        assert client.get("/is_sleeping").json() == {"is_sleeping": True}
        assert client.post("/v1/chat/completions", json=chat([user("x")])).status_code == 503
        client.post("/wake_up", params={"tags": "weights"})
        rpc = client.post("/collective_rpc", json={"method": "reload_weights", "kwargs": {"weights_path": "/c/v2"}})
        assert rpc.is_success
        assert client.get("/is_sleeping").json() == {"is_sleeping": True}
        client.post("/wake_up", params={"tags": "kv_cache"})
        assert client.get("/is_sleeping").json() == {"is_sleeping": False}
        answer = client.post("/v1/chat/completions", json=chat([user("x")]))
        assert answer.status_code == 200 and answer.headers["X-Model-Version"] == "v2"
        assert client.post("/collective_rpc", json={"method": "other"}).status_code == 400


def test_models_health_metrics_and_completions(policy: str) -> None:
    with httpx.Client(base_url=policy, timeout=10) as client:
        models = client.get("/v1/models").json()
        assert models["object"] == "list"
        entry = models["data"][0]
        assert (entry["id"], entry["object"], entry["owned_by"], entry["root"]) == (
            "ui-tars-1.5-7b", "model", "cua-rollout", "ui-tars-1.5-7b")
        health = client.get("/health")
        assert health.status_code == 200 and health.content == b""
        assert client.get("/healthz").json()["status"] == "ok"
        completion = client.post("/v1/completions", json={"model": "m", "prompt": "Rename the folder"})
        assert completion.json()["object"] == "text_completion"
        assert completion.json()["choices"][0]["text"] == "R0"
        client.post("/v1/chat/completions", json=chat([user("x")]))
        metrics = client.get("/metrics").text
        assert 'policy_requests_total{endpoint="chat",status="200"} 1.0' in metrics
        assert 'policy_requests_total{endpoint="completions",status="200"} 1.0' in metrics
        assert "policy_in_flight 0.0" in metrics


def test_admin_reload_switches_model_version(policy: str) -> None:
    with httpx.Client(base_url=policy, timeout=10) as client:
        assert client.post("/v1/chat/completions", json=chat([user("x")])).headers["X-Model-Version"] == "v0"
        assert client.post("/admin/reload", json={"model_version": "v1"}).json() == {"model_version": "v1"}
        assert client.post("/v1/chat/completions", json=chat([user("x")])).headers["X-Model-Version"] == "v1"
        assert client.post("/admin/reload", json={}).status_code == 422


def test_failure_injection_and_latency(scripts_dir: Path) -> None:
    settings = ScriptedPolicySettings(scripts_dir=scripts_dir, fail_first_n=2, latency_ms=50)
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as client:
        statuses = [client.post("/v1/chat/completions", json=chat([user("x")])).status_code for _ in range(3)]
        assert statuses == [500, 500, 200]
        started = time.perf_counter()
        client.post("/v1/chat/completions", json=chat([user("x")]))
        assert time.perf_counter() - started >= 0.05  # simulated model time
    with serve_app(create_app(ScriptedPolicySettings(failure_rate=1.0))) as url:
        failed = httpx.post(f"{url}/v1/chat/completions", json=chat([user("x")]), timeout=10)
        assert failed.status_code == 500 and "injected" in failed.json()["error"]["message"]
    with serve_app(create_app(ScriptedPolicySettings(failure_rate=0.5, seed=7))) as url:
        codes = [httpx.post(f"{url}/v1/chat/completions", json=chat([user("x")]), timeout=10).status_code
                 for _ in range(40)]
        assert 0 < codes.count(500) < 40


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch, scripts_dir: Path) -> None:
    monkeypatch.setenv("POLICY_PORT", "9123")
    monkeypatch.setenv("POLICY_SCRIPTS_DIR", str(scripts_dir))
    monkeypatch.setenv("POLICY_FAILURE_RATE", "0.25")
    monkeypatch.setenv("POLICY_MODEL_VERSION", "v9")
    settings = ScriptedPolicySettings()
    assert (settings.port, settings.scripts_dir, settings.failure_rate, settings.model_version) == (
        9123, scripts_dir, 0.25, "v9")
    monkeypatch.setenv("POLICY_FAILURE_RATE", "1.5")
    with pytest.raises(ValueError):
        ScriptedPolicySettings()


def test_python_dash_m_serves(scripts_dir: Path) -> None:
    port = free_port()
    env = {**os.environ, "POLICY_PORT": str(port), "POLICY_SCRIPTS_DIR": str(scripts_dir),
           "POLICY_MODEL_VERSION": "v3"}
    proc = subprocess.Popen([sys.executable, "-m", "services.scripted_policy"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: proc.poll() is None and http_ok(f"http://127.0.0.1:{port}/health"), 20,
                   "python -m services.scripted_policy")
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                              json=chat([user("Rename the folder")]), timeout=10)
        assert reply_of(response) == "R0" and response.headers["X-Model-Version"] == "v3"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/chat/completions", {"messages": [None, 1]}, "messages[0] must be an object"),
    ("/v1/chat/completions", {"messages": [{"content": "x"}]}, "string 'role'"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]},
     "messages[0].content[0]"),
    ("/v1/chat/completions", [1, 2], "body must be JSON"),
    ("/v1/completions", {"prompt": 5}, "prompt must be a string or a list"),
])
def test_malformed_requests_are_400s_not_500s(policy: str, path: str, body: object, message: str) -> None:
    # Found by schemathesis through the gateway: these were 500s, which the gateway retried as replica faults.
    response = httpx.post(policy + path, json=body, timeout=10)
    assert response.status_code == 400 and message in response.json()["error"]["message"], response.text


def test_openapi_documents_every_answer(policy: str) -> None:
    # Routers with `response_model` (house rule: /docs typed): each JSON route names its answer's schema,
    # the error answers are OpenAI-style errors, and `/v1/models` lists a loaded adapter as a ModelCard.
    paths = httpx.get(f"{policy}/openapi.json", timeout=10).json()["paths"]

    def schema_ref(path: str, method: str, status: str = "200") -> str:
        return str(paths[path][method]["responses"][status]["content"]["application/json"]["schema"]["$ref"])

    assert schema_ref("/v1/chat/completions", "post").endswith("/ChatCompletionResponse")
    assert "text/event-stream" in paths["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    assert schema_ref("/v1/chat/completions", "post", "400").endswith("/ErrorResponse")
    assert schema_ref("/v1/completions", "post").endswith("/CompletionResponse")
    assert schema_ref("/v1/models", "get").endswith("/ModelList")
    assert schema_ref("/collective_rpc", "post").endswith("/RpcResults")
    assert schema_ref("/v1/unload_lora_adapter", "post", "404").endswith("/ErrorResponse")
    assert "text/plain" in paths["/v1/load_lora_adapter"]["post"]["responses"]["200"]["content"]
    with httpx.Client(base_url=policy, timeout=10) as client:
        assert client.post("/v1/load_lora_adapter", json={"lora_name": "a", "lora_path": "/ckpt/v5"}).status_code == 200
        cards = client.get("/v1/models").json()["data"]
        assert [(c["id"], c["root"], c["parent"]) for c in cards] == [
            ("ui-tars-1.5-7b", "ui-tars-1.5-7b", None), ("a", "/ckpt/v5", "ui-tars-1.5-7b")]
        missing = client.post("/v1/unload_lora_adapter", json={"lora_name": "nope"})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFoundError"
