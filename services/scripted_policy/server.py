"""HTTP app of the scripted policy, shaped like the vLLM OpenAI-compatible server API.

MOCK of a GPU model server (see the package docstring): replies come from scripts, not a model.
Endpoints (vLLM OpenAI-compatible server API):
- `POST /v1/chat/completions`: non-streaming JSON, or SSE (`stream: true`) chunks `data: {...}` ending with
  `data: [DONE]`. With `logprobs: true`, `choices[0].logprobs.content` and `choices[0].token_ids` are filled
  with deterministic fakes (token ids = UTF-8 bytes of the reply, logprobs in (-1, 0]).
- `POST /v1/completions` (minimal), `GET /v1/models`, `GET /health` (200, empty body, like vLLM).
- `POST /admin/reload` `{"model_version": "v1"}`: the weight-reload stand-in.
- `/healthz`, `/metrics` (Prometheus, per-app registry).
Every completion answer carries `X-Model-Version` and `X-Body-Sha256` (hex SHA-256 of the raw request body
bytes), so tests can check that a proxy forwarded the body byte-exact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import CollectorRegistry, Counter, Gauge

from common.service import add_health_and_metrics
from services.scripted_policy.scripts import choose_reply, load_scripts
from services.scripted_policy.settings import ScriptedPolicySettings

IMAGE_TOKENS = 1000  # rough prompt-token cost of one screenshot, for `usage`
CHARS_PER_TOKEN = 4  # rough prompt-token cost of text, for `usage`
STREAM_PIECE_CHARS = 16  # characters of the reply per SSE chunk


def fake_tokens(text: str) -> tuple[list[int], list[float]]:
    """Deterministic token ids (the UTF-8 bytes of `text`) and one logprob in (-1, 0] per id."""
    ids = list(text.encode())
    return ids, [-((i * 37 + b) % 100) / 100.0 for i, b in enumerate(ids)]


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """Prompt-token estimate: text length / 4 plus `IMAGE_TOKENS` per image part."""
    count = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            count += len(content) // CHARS_PER_TOKEN
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":
                    count += IMAGE_TOKENS
                else:
                    count += len(str(part.get("text", ""))) // CHARS_PER_TOKEN
    return count


def logprobs_content(ids: list[int], logprobs: list[float]) -> list[dict[str, Any]]:
    """`choices[0].logprobs.content` entries `{token, logprob, bytes, top_logprobs: []}`, one per token id."""
    return [{"token": chr(b) if b < 128 else f"<0x{b:02X}>", "logprob": lp, "bytes": [b], "top_logprobs": []}
            for b, lp in zip(ids, logprobs, strict=True)]


def _error(message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """An OpenAI-style error body `{"error": {"message", "type", "code"}}`."""
    kind = "InternalServerError" if status >= 500 else "BadRequestError"
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status,
                        headers=headers)


def create_app(settings: ScriptedPolicySettings | None = None) -> FastAPI:
    """Build the mock vLLM app from `settings` (defaults: env vars `POLICY_*`).

    Raises: ValueError when a script file under `settings.scripts_dir` is invalid.
    """
    settings = settings or ScriptedPolicySettings()
    scripts = load_scripts(settings.scripts_dir)
    registry = CollectorRegistry()
    requests_total = Counter("policy_requests_total", "Completion requests", ["endpoint", "status"],
                             registry=registry)
    in_flight = Gauge("policy_in_flight", "Completion requests being served", registry=registry)
    state: dict[str, Any] = {"version": settings.model_version, "chat_requests": 0,
                             "rng": random.Random(settings.seed)}
    app = FastAPI(title="cua-rollout scripted policy (mock of a GPU model server)")
    add_health_and_metrics(app, check=lambda: {"scripts": len(scripts), "model_version": state["version"]},
                           registry=registry)

    def headers(raw: bytes) -> dict[str, str]:
        return {"X-Model-Version": state["version"], "X-Body-Sha256": hashlib.sha256(raw).hexdigest()}

    async def simulate(raw: bytes, endpoint: str) -> JSONResponse | None:
        """Simulated model time (`latency_ms`) and failure injection; an error response when this one fails."""
        if endpoint == "chat":
            state["chat_requests"] += 1
        if settings.latency_ms > 0:
            in_flight.inc()  # counted while the simulated model "computes"
            try:
                await asyncio.sleep(settings.latency_ms / 1000.0)
            finally:
                in_flight.dec()
        first_n = endpoint == "chat" and state["chat_requests"] <= settings.fail_first_n
        if first_n or (settings.failure_rate > 0 and state["rng"].random() < settings.failure_rate):
            requests_total.labels(endpoint, "500").inc()
            return _error("injected failure (scripted policy)", 500, headers(raw))
        requests_total.labels(endpoint, "200").inc()
        return None

    @app.get("/health")
    def health() -> Response:
        """vLLM's liveness probe: 200 with an empty body."""
        return Response(status_code=200)

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        """vLLM's model list: `{"object": "list", "data": [{"id", "object", "owned_by", "root", "created"}]}`."""
        return {"object": "list", "data": [{"id": settings.model_name, "object": "model", "owned_by": "cua-rollout",
                                            "root": settings.model_name, "created": int(time.time())}]}

    @app.post("/admin/reload")
    async def reload(request: Request) -> Response:
        """Weight-reload stand-in: `{"model_version": "v1"}` -> serve that version from now on (422 if missing)."""
        try:
            version = (await request.json())["model_version"]
        except (ValueError, KeyError, TypeError):
            return _error("body must be JSON {\"model_version\": str}", 422)
        state["version"] = str(version)
        return JSONResponse({"model_version": state["version"]})

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        """Scripted chat completion; 400 when the body is not JSON with a `messages` list, 500 when injected."""
        raw = await request.body()
        try:
            body = json.loads(raw)
            messages = body["messages"]
            if not isinstance(messages, list):
                raise TypeError("messages must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            requests_total.labels("chat", "400").inc()
            return _error(f"body must be JSON with a 'messages' list ({exc})", 400)
        failure = await simulate(raw, "chat")
        if failure is not None:
            return failure
        reply = choose_reply(scripts, messages)
        ids, logprobs = fake_tokens(reply)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        if body.get("stream"):
            return StreamingResponse(_stream(completion_id, settings.model_name, reply),
                                     media_type="text/event-stream", headers=headers(raw))
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": reply},
                                  "finish_reason": "stop"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": logprobs_content(ids, logprobs)}
            choice["token_ids"] = ids
        prompt = prompt_tokens(messages)
        return JSONResponse({
            "id": completion_id, "object": "chat.completion", "created": int(time.time()),
            "model": settings.model_name, "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(ids), "total_tokens": prompt + len(ids)},
        }, headers=headers(raw))

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        """Minimal text completion: the script matched against `prompt` (as one user message), step 0."""
        raw = await request.body()
        try:
            prompt = json.loads(raw).get("prompt", "")
        except (ValueError, AttributeError) as exc:
            requests_total.labels("completions", "400").inc()
            return _error(f"body must be a JSON object ({exc})", 400)
        text_prompt = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
        failure = await simulate(raw, "completions")
        if failure is not None:
            return failure
        text = choose_reply(scripts, [{"role": "user", "content": text_prompt}])
        ids, _ = fake_tokens(text)
        prompt_count = len(text_prompt) // CHARS_PER_TOKEN
        return JSONResponse({
            "id": f"cmpl-{uuid.uuid4().hex[:16]}", "object": "text_completion", "created": int(time.time()),
            "model": settings.model_name, "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_count, "completion_tokens": len(ids),
                      "total_tokens": prompt_count + len(ids)},
        }, headers=headers(raw))

    return app


async def _stream(completion_id: str, model: str, reply: str) -> AsyncIterator[bytes]:
    """SSE chunks (`chat.completion.chunk`) of `reply` in 16-character pieces, then `data: [DONE]`."""
    created = int(time.time())

    def chunk(delta: dict[str, str], finish_reason: str | None) -> bytes:
        body = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
        return f"data: {json.dumps(body)}\n\n".encode()

    yield chunk({"role": "assistant", "content": ""}, None)
    for start in range(0, len(reply), STREAM_PIECE_CHARS):
        yield chunk({"content": reply[start:start + STREAM_PIECE_CHARS]}, None)
    yield chunk({}, "stop")
    yield b"data: [DONE]\n\n"
