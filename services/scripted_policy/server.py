"""HTTP app of the scripted policy, shaped like the vLLM OpenAI-compatible server API.

MOCK of a GPU model server (see the package docstring): replies come from scripts, not a model.
Endpoints (vLLM OpenAI-compatible server API):
- `POST /v1/chat/completions`: non-streaming JSON, or SSE (`stream: true`) chunks `data: {...}` ending with
  `data: [DONE]`. Token fields exactly as vLLM gives them (`common.vllm_protocol`): `logprobs` /
  `top_logprobs` fill `choices[0].logprobs.content`, `return_tokens_as_token_ids` turns tokens into
  `token_id:<id>`, `return_token_ids` adds `prompt_token_ids` and `choices[0].token_ids` (streaming: prompt
  ids in the first chunk, token id deltas per chunk). Fake values: `services.scripted_policy.tokens`.
- `POST /v1/completions` (minimal), `GET /v1/models` (base model plus loaded LoRA adapters), `GET /health`
  (200, empty body, like vLLM; plus `X-Model-Version`).
- Weight reloads (vLLM's LoRA and sleep-mode endpoints): `services.scripted_policy.weights`.
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
from pydantic import ValidationError

from common.service import add_health_and_metrics
from common.vllm_protocol import (
    ChatCompletionLogProbs,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatCompletionResponseStreamChoice,
    ChatCompletionStreamResponse,
    ChatMessage,
    DeltaMessage,
    TokenRequestFields,
    UsageInfo,
)
from services.scripted_policy.scripts import choose_reply, load_scripts
from services.scripted_policy.settings import ScriptedPolicySettings
from services.scripted_policy.tokens import (
    completion_tokens,
    logprobs_content,
    prompt_token_count,
    prompt_token_ids,
)
from services.scripted_policy.weights import ModelState, weights_router

CHARS_PER_TOKEN = 4  # rough prompt-token cost of text, for `/v1/completions` usage
STREAM_PIECE_CHARS = 16  # characters of the reply per SSE chunk


def check_messages(messages: Any) -> None:
    """Check the OpenAI chat `messages` shape this server reads: a list of objects with a string
    `role`, `content` a string, a list of part objects (a part's `text` a string) or null.

    Raises: TypeError naming the first bad message (answered 400, as vLLM answers a bad request)."""
    if not isinstance(messages, list):
        raise TypeError("messages must be a list")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TypeError(f"messages[{i}] must be an object with a string 'role'")
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise TypeError(f"messages[{i}].content must be a string, a list of parts or null")
        for j, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("text", ""), str):
                raise TypeError(f"messages[{i}].content[{j}] must be an object whose 'text' is a string")


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
    model = ModelState(version=settings.model_version)
    counters: dict[str, Any] = {"chat_requests": 0, "rng": random.Random(settings.seed)}
    app = FastAPI(title="cua-rollout scripted policy (mock of a GPU model server)")
    add_health_and_metrics(app, check=lambda: {"scripts": len(scripts), "model_version": model.version},
                           registry=registry)
    app.include_router(weights_router(settings, model))

    def headers(raw: bytes, version: str) -> dict[str, str]:
        return {"X-Model-Version": version, "X-Body-Sha256": hashlib.sha256(raw).hexdigest()}

    async def simulate(raw: bytes, endpoint: str) -> JSONResponse | None:
        """Simulated model time (`latency_ms`) and failure injection; an error response when this one fails."""
        if model.sleeping:
            requests_total.labels(endpoint, "503").inc()
            return _error("the engine is sleeping (scripted policy)", 503, headers(raw, model.version))
        if endpoint == "chat":
            counters["chat_requests"] += 1
        if settings.latency_ms > 0:
            in_flight.inc()  # counted while the simulated model "computes"
            try:
                await asyncio.sleep(settings.latency_ms / 1000.0)
            finally:
                in_flight.dec()
        first_n = endpoint == "chat" and counters["chat_requests"] <= settings.fail_first_n
        if first_n or (settings.failure_rate > 0 and counters["rng"].random() < settings.failure_rate):
            requests_total.labels(endpoint, "500").inc()
            return _error("injected failure (scripted policy)", 500, headers(raw, model.version))
        requests_total.labels(endpoint, "200").inc()
        return None

    @app.get("/health", response_model=None)
    def health() -> Response:
        """vLLM's liveness probe: 200 with an empty body (plus the served version as a header)."""
        return Response(status_code=200, headers={"X-Model-Version": model.version})

    @app.get("/v1/models", response_model=None)
    def models() -> JSONResponse:
        """vLLM's model list: the base model, then one card per LoRA adapter (`root` = adapter path)."""
        created = int(time.time())
        data = [{"id": settings.model_name, "object": "model", "owned_by": "cua-rollout",
                 "root": settings.model_name, "parent": None, "created": created}]
        data += [{"id": name, "object": "model", "owned_by": "cua-rollout", "root": path,
                  "parent": settings.model_name, "created": created} for name, path in model.adapters.items()]
        return JSONResponse({"object": "list", "data": data}, headers={"X-Model-Version": model.version})

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> Response:
        """Scripted chat completion; 400 when the body is not JSON with a `messages` list or has bad token
        fields, 500 when injected, 503 while asleep."""
        raw = await request.body()
        try:
            body = json.loads(raw)
            messages = body["messages"]
            check_messages(messages)
            wanted = TokenRequestFields.model_validate(body)
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            requests_total.labels("chat", "400").inc()
            return _error(f"body must be JSON with a 'messages' list and valid token fields ({exc})", 400)
        failure = await simulate(raw, "chat")
        if failure is not None:
            return failure
        version = model.version  # the version that "computed" this answer
        reply = choose_reply(scripts, messages)
        ids, logprobs = completion_tokens(reply, version)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        prompt_ids = prompt_token_ids(messages) if wanted.return_token_ids else None
        prompt_count = len(prompt_ids) if prompt_ids is not None else prompt_token_count(messages)
        top = wanted.top_logprobs or 0
        as_ids = bool(wanted.return_tokens_as_token_ids)
        if wanted.stream:
            return StreamingResponse(_stream(completion_id, settings.model_name, reply, ids, logprobs, wanted,
                                             prompt_ids), media_type="text/event-stream", headers=headers(raw, version))
        answer = ChatCompletionResponse(
            id=completion_id, created=int(time.time()), model=settings.model_name,
            choices=[ChatCompletionResponseChoice(
                index=0, message=ChatMessage(role="assistant", content=reply),
                logprobs=ChatCompletionLogProbs(content=logprobs_content(ids, logprobs, top, as_ids))
                if wanted.logprobs else None,
                token_ids=ids if wanted.return_token_ids else None)],
            usage=UsageInfo(prompt_tokens=prompt_count, completion_tokens=len(ids),
                            total_tokens=prompt_count + len(ids)),
            prompt_token_ids=prompt_ids)
        # pydantic's own JSON encoder: the answer's token ids and logprobs made `json.dumps` of its dump
        # 20% of this server's CPU per request.
        return Response(answer.model_dump_json(), media_type="application/json", headers=headers(raw, version))

    @app.post("/v1/completions", response_model=None)
    async def completions(request: Request) -> Response:
        """Minimal text completion: the script matched against `prompt` (as one user message), step 0."""
        raw = await request.body()
        try:
            prompt = json.loads(raw).get("prompt", "")
            if not isinstance(prompt, str | list):
                raise ValueError(f"prompt must be a string or a list, got {type(prompt).__name__}")
        except (ValueError, AttributeError) as exc:
            requests_total.labels("completions", "400").inc()
            return _error(f"body must be a JSON object ({exc})", 400)
        text_prompt = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
        failure = await simulate(raw, "completions")
        if failure is not None:
            return failure
        text = choose_reply(scripts, [{"role": "user", "content": text_prompt}])
        ids, _ = completion_tokens(text, model.version)
        prompt_count = len(text_prompt) // CHARS_PER_TOKEN
        return JSONResponse({
            "id": f"cmpl-{uuid.uuid4().hex[:16]}", "object": "text_completion", "created": int(time.time()),
            "model": settings.model_name, "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_count, "completion_tokens": len(ids),
                      "total_tokens": prompt_count + len(ids)},
        }, headers=headers(raw, model.version))

    return app


async def _stream(completion_id: str, model: str, reply: str, ids: list[int], logprobs: list[float],
                  wanted: TokenRequestFields, prompt_ids: list[int] | None) -> AsyncIterator[bytes]:
    """SSE chunks (`chat.completion.chunk`) of `reply` in 16-character pieces, then `data: [DONE]`.

    Token ids and logprobs of each piece ride in its chunk (the reply is ASCII-or-bytes: ids are bytes)."""
    created = int(time.time())
    top, as_ids = wanted.top_logprobs or 0, bool(wanted.return_tokens_as_token_ids)

    def chunk(delta: DeltaMessage, finish_reason: str | None, start: int = 0, end: int = 0,
              first: bool = False) -> bytes:
        choice = ChatCompletionResponseStreamChoice(
            index=0, delta=delta, finish_reason=finish_reason,
            logprobs=ChatCompletionLogProbs(content=logprobs_content(ids[start:end], logprobs[start:end], top,
                                                                     as_ids)) if wanted.logprobs and end else None,
            token_ids=ids[start:end] if wanted.return_token_ids else None)
        body = ChatCompletionStreamResponse(id=completion_id, created=created, model=model, choices=[choice],
                                            prompt_token_ids=prompt_ids if first else None)
        return f"data: {body.model_dump_json(exclude_none=True)}\n\n".encode()

    yield chunk(DeltaMessage(role="assistant", content=""), None, first=True)
    data = reply.encode()
    start = 0
    while start < len(data):
        end = min(len(data), start + STREAM_PIECE_CHARS)
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # never split a UTF-8 character
            end += 1
        yield chunk(DeltaMessage(content=data[start:end].decode()), None, start, end)
        start = end
    yield chunk(DeltaMessage(), "stop")
    yield b"data: [DONE]\n\n"
