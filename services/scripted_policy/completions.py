"""Completion routes of the scripted policy (mock of a GPU model server), shaped like vLLM's
OpenAI-compatible server: `POST /v1/chat/completions` (JSON or SSE), `POST /v1/completions` (minimal),
`GET /v1/models`, `GET /health`.

Replies come from scripts (`scripts.py`), token ids and logprobs from `tokens.py`. Each completion first
passes `simulate`: 503 while the engine sleeps, `latency_ms` of simulated model time, then the injected
failures (`fail_first_n`, `failure_rate`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from common.vllm_protocol import (
    ChatCompletionLogProbs,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
    CompletionResponse,
    CompletionResponseChoice,
    ErrorResponse,
    ModelCard,
    ModelList,
    TokenRequestFields,
    UsageInfo,
)
from services.scripted_policy.scripts import choose_reply
from services.scripted_policy.state import PolicyState, get_state, openai_error, response_headers
from services.scripted_policy.streaming import sse_chunks
from services.scripted_policy.tokens import (
    CHARS_PER_TOKEN,
    completion_tokens,
    logprobs_content,
    prompt_token_count,
    prompt_token_ids,
)

router = APIRouter()
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "malformed request"},
    500: {"model": ErrorResponse, "description": "injected failure"},
    503: {"model": ErrorResponse, "description": "the engine sleeps"},
}


def check_messages(messages: Any) -> None:
    """Check the OpenAI chat `messages` shape this server reads: a list of objects with a string
    `role`, `content` a string, a list of part objects (a part's `text` a string) or null.

    Raises: TypeError naming the first bad message (a 400 response, as vLLM gives for a bad request)."""
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


async def simulate(state: PolicyState, raw: bytes, endpoint: str) -> JSONResponse | None:
    """Simulated model time (`latency_ms`) and failure injection of one completion of `endpoint` (`chat`
    or `completions`); the error response when this one fails (503 asleep, 500 injected), else None."""
    requests_total = state.requests_total
    if state.model.sleeping:
        requests_total.labels(endpoint, "503").inc()
        return openai_error("the engine is sleeping (scripted policy)", 503, response_headers(raw, state.model.version))
    if endpoint == "chat":
        state.chat_requests += 1
    if state.settings.latency_ms > 0:
        state.in_flight.inc()  # counted while the simulated model "computes"
        try:
            await asyncio.sleep(state.settings.latency_ms / 1000.0)
        finally:
            state.in_flight.dec()
    first_n = endpoint == "chat" and state.chat_requests <= state.settings.fail_first_n
    if first_n or (state.settings.failure_rate > 0 and state.rng.random() < state.settings.failure_rate):
        requests_total.labels(endpoint, "500").inc()
        return openai_error("injected failure (scripted policy)", 500, response_headers(raw, state.model.version))
    requests_total.labels(endpoint, "200").inc()
    return None


@router.get("/health", response_model=None, responses={200: {"description": "alive (empty body)"}})
def health(state: PolicyState = Depends(get_state)) -> Response:
    """vLLM's liveness probe: 200 with an empty body (plus the served version as a header)."""
    return Response(status_code=200, headers={"X-Model-Version": state.model.version})


@router.get("/v1/models", response_model=ModelList)
def models(state: PolicyState = Depends(get_state)) -> Response:
    """vLLM's model list: the base model, then one card per LoRA adapter (`root` = adapter path)."""
    created, base = int(time.time()), state.settings.model_name
    cards = [ModelCard(id=base, created=created, owned_by="cua-rollout", root=base)]
    cards += [ModelCard(id=name, created=created, owned_by="cua-rollout", root=path, parent=base)
              for name, path in state.model.adapters.items()]
    return Response(ModelList(data=cards).model_dump_json(), media_type="application/json",
                    headers={"X-Model-Version": state.model.version})


@router.post("/v1/chat/completions", response_model=ChatCompletionResponse, responses={
    **ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "JSON, or SSE chunks with `stream`"}})
async def chat(request: Request, state: PolicyState = Depends(get_state)) -> Response:
    """Scripted chat completion; 400 when the body is not JSON with a `messages` list or has bad token
    fields, 500 when injected, 503 while asleep."""
    raw = await request.body()
    try:
        body = json.loads(raw)
        messages = body["messages"]
        check_messages(messages)
        wanted = TokenRequestFields.model_validate(body)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        state.requests_total.labels("chat", "400").inc()
        return openai_error(f"body must be JSON with a 'messages' list and valid token fields ({exc})", 400)
    failure = await simulate(state, raw, "chat")
    if failure is not None:
        return failure
    version = state.model.version  # the version that "computed" this response
    model_name = state.settings.model_name
    model = body.get("model")
    # in a thread: a script that waits on the screen decodes screenshots (services/scripted_policy/screens.py)
    reply = await run_in_threadpool(choose_reply, state.scripts, messages, model if isinstance(model, str) else None)
    ids, logprobs = completion_tokens(reply, version)
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
    prompt_ids = prompt_token_ids(messages) if wanted.return_token_ids else None
    prompt_count = len(prompt_ids) if prompt_ids is not None else prompt_token_count(messages)
    if wanted.stream:
        return StreamingResponse(sse_chunks(completion_id, model_name, reply, ids, logprobs, wanted, prompt_ids),
                                 media_type="text/event-stream", headers=response_headers(raw, version))
    top, as_ids = wanted.top_logprobs or 0, bool(wanted.return_tokens_as_token_ids)
    response = ChatCompletionResponse(
        id=completion_id, created=int(time.time()), model=model_name,
        choices=[ChatCompletionResponseChoice(
            index=0, message=ChatMessage(role="assistant", content=reply),
            logprobs=ChatCompletionLogProbs(content=logprobs_content(ids, logprobs, top, as_ids))
            if wanted.logprobs else None,
            token_ids=ids if wanted.return_token_ids else None)],
        usage=UsageInfo(prompt_tokens=prompt_count, completion_tokens=len(ids),
                        total_tokens=prompt_count + len(ids)),
        prompt_token_ids=prompt_ids)
    # pydantic's own JSON encoder: the response's token ids and logprobs made `json.dumps` of its dump
    # 20% of this server's CPU per request.
    return Response(response.model_dump_json(), media_type="application/json", headers=response_headers(raw, version))


@router.post("/v1/completions", response_model=CompletionResponse, responses=ERRORS)
async def completions(request: Request, state: PolicyState = Depends(get_state)) -> Response:
    """Minimal text completion: the script matched against `prompt` (as one user message), step 0;
    400 when the body is not a JSON object or `prompt` is neither a string nor a list."""
    raw = await request.body()
    try:
        body = json.loads(raw)
        prompt, model = body.get("prompt", ""), body.get("model")
        if not isinstance(prompt, str | list):
            raise ValueError(f"prompt must be a string or a list, got {type(prompt).__name__}")
    except (ValueError, AttributeError) as exc:
        state.requests_total.labels("completions", "400").inc()
        return openai_error(f"body must be a JSON object ({exc})", 400)
    text_prompt = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
    failure = await simulate(state, raw, "completions")
    if failure is not None:
        return failure
    text = choose_reply(state.scripts, [{"role": "user", "content": text_prompt}],
                        model if isinstance(model, str) else None)
    ids, _ = completion_tokens(text, state.model.version)
    prompt_count = len(text_prompt) // CHARS_PER_TOKEN
    response = CompletionResponse(
        id=f"cmpl-{uuid.uuid4().hex[:16]}", created=int(time.time()), model=state.settings.model_name,
        choices=[CompletionResponseChoice(index=0, text=text)],
        usage=UsageInfo(prompt_tokens=prompt_count, completion_tokens=len(ids), total_tokens=prompt_count + len(ids)))
    return Response(response.model_dump_json(), media_type="application/json",
                    headers=response_headers(raw, state.model.version))
