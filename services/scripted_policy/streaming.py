"""SSE chunks of a streamed chat completion of the scripted policy (mock of a GPU model server), in vLLM's
format: `data: {chat.completion.chunk}` lines ending with `data: [DONE]` (vLLM OpenAI-compatible server)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from common.vllm_protocol import (
    ChatCompletionLogProbs,
    ChatCompletionResponseStreamChoice,
    ChatCompletionStreamResponse,
    DeltaMessage,
    TokenRequestFields,
)
from services.scripted_policy.tokens import logprobs_content

STREAM_PIECE_CHARS = 16  # characters of the reply per SSE chunk


async def sse_chunks(completion_id: str, model: str, reply: str, ids: list[int], logprobs: list[float],
                     wanted: TokenRequestFields, prompt_ids: list[int] | None) -> AsyncIterator[bytes]:
    """SSE chunks (`chat.completion.chunk`) of `reply` in 16-byte pieces (never splitting a UTF-8 character),
    then `data: [DONE]`: a first chunk with the role (and `prompt_ids`), one per piece, one with
    `finish_reason: stop`.

    Token ids and logprobs of each piece ride in its chunk (ids are the reply's bytes, `tokens.py`)."""
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
