"""The parts of vLLM's OpenAI-compatible wire format that carry token ids and logprobs, as pydantic models.

Written for this project after the models of the same names in vLLM's `vllm/entrypoints/openai/protocol.py`
(Apache-2.0, https://github.com/vllm-project/vllm): field names, nesting and defaults follow that file so
that the scripted policy returns, and the runner reads, exactly what a vLLM server sends. Only the fields
this project uses are modelled; `extra="allow"` keeps every other field a server sends.

Request fields (`ChatCompletionRequest`): `logprobs: bool`, `top_logprobs: int` (alternatives per position),
`return_tokens_as_token_ids: bool` (each logprob's `token` becomes `"token_id:<id>"`), `return_token_ids:
bool` (the response carries `prompt_token_ids` and each choice's `token_ids`; streaming: `prompt_token_ids`
only in the first chunk, `token_ids` as per-chunk deltas).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

TOKEN_ID_PREFIX = "token_id:"


class OpenAIBaseModel(BaseModel):
    """Extra fields allowed, as in vLLM."""

    model_config = ConfigDict(extra="allow")


class TokenRequestFields(OpenAIBaseModel):
    """The token-related fields of vLLM's `ChatCompletionRequest` (validated by the scripted policy)."""

    logprobs: bool | None = False
    top_logprobs: int | None = Field(default=0, ge=0, le=20)
    return_tokens_as_token_ids: bool | None = None
    return_token_ids: bool | None = None
    stream: bool | None = False


class ChatCompletionLogProb(OpenAIBaseModel):
    """One alternative token: text (or `token_id:<id>`), logprob, UTF-8 bytes."""

    token: str
    logprob: float = -9999.0
    bytes: list[int] | None = None


class ChatCompletionLogProbsContent(ChatCompletionLogProb):
    """The sampled token at one position and the top alternatives there."""

    top_logprobs: list[ChatCompletionLogProb] = Field(default_factory=list)


class ChatCompletionLogProbs(OpenAIBaseModel):
    """`choices[i].logprobs`."""

    content: list[ChatCompletionLogProbsContent] | None = None


class ChatMessage(OpenAIBaseModel):
    """`choices[i].message` (the fields used here)."""

    role: str
    content: str | None = None


class ChatCompletionResponseChoice(OpenAIBaseModel):
    """`choices[i]` of a non-streaming response; `token_ids` only with `return_token_ids`."""

    index: int
    message: ChatMessage
    logprobs: ChatCompletionLogProbs | None = None
    finish_reason: str | None = "stop"
    stop_reason: int | str | None = None
    token_ids: list[int] | None = None


class UsageInfo(OpenAIBaseModel):
    """`usage`."""

    prompt_tokens: int = 0
    total_tokens: int = 0
    completion_tokens: int | None = 0


class ChatCompletionResponse(OpenAIBaseModel):
    """A non-streaming chat completion; `prompt_token_ids` only with `return_token_ids`."""

    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[ChatCompletionResponseChoice]
    usage: UsageInfo
    system_fingerprint: str | None = None
    prompt_logprobs: list[dict[int, Any] | None] | None = None
    prompt_token_ids: list[int] | None = None
    kv_transfer_params: dict[str, Any] | None = None


class DeltaMessage(OpenAIBaseModel):
    """`choices[i].delta` of a stream chunk."""

    role: str | None = None
    content: str | None = None


class ChatCompletionResponseStreamChoice(OpenAIBaseModel):
    """`choices[i]` of a stream chunk; `token_ids` are this chunk's new tokens."""

    index: int
    delta: DeltaMessage
    logprobs: ChatCompletionLogProbs | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    token_ids: list[int] | None = None


class ChatCompletionStreamResponse(OpenAIBaseModel):
    """One SSE chunk (`data: {...}`); `prompt_token_ids` in the first chunk only."""

    id: str
    object: str = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChatCompletionResponseStreamChoice]
    usage: UsageInfo | None = None
    prompt_token_ids: list[int] | None = None


class CompletionResponseChoice(OpenAIBaseModel):
    """`choices[i]` of a `/v1/completions` response."""

    index: int
    text: str
    finish_reason: str | None = "stop"


class CompletionResponse(OpenAIBaseModel):
    """A non-streaming text completion (`/v1/completions`)."""

    id: str
    object: str = "text_completion"
    created: int
    model: str
    choices: list[CompletionResponseChoice]
    usage: UsageInfo


class ModelCard(OpenAIBaseModel):
    """One entry of `GET /v1/models`: a base model (`parent` None) or a LoRA adapter (`root` = its path)."""

    id: str
    object: str = "model"
    created: int
    owned_by: str
    root: str | None = None
    parent: str | None = None


class ModelList(OpenAIBaseModel):
    """`GET /v1/models`."""

    object: str = "list"
    data: list[ModelCard] = Field(default_factory=list)


class ErrorInfo(OpenAIBaseModel):
    """The `error` object of an OpenAI-style error response."""

    message: str
    type: str
    code: int


class ErrorResponse(OpenAIBaseModel):
    """An OpenAI-style error response, `{"error": {"message", "type", "code"}}`."""

    error: ErrorInfo


def token_id_of(token: str) -> int | None:
    """The id in a `token_id:<id>` token string (`return_tokens_as_token_ids`), else None."""
    if token.startswith(TOKEN_ID_PREFIX):
        try:
            return int(token[len(TOKEN_ID_PREFIX):])
        except ValueError:
            return None
    return None


def read_tokens(payload: dict[str, Any], choice: dict[str, Any]) -> tuple[list[int] | None, list[float] | None,
                                                                           list[int] | None]:
    """(response token ids, response logprobs, prompt token ids) of a vLLM chat completion (non-streaming).

    vLLM's formats: `choices[0].token_ids` and top-level `prompt_token_ids` (with `return_token_ids`);
    `choices[0].logprobs.content[*].logprob`; without `token_ids`, ids are read from `token_id:<id>` token
    strings (`return_tokens_as_token_ids`). Missing parts are None.
    """
    items = (choice.get("logprobs") or {}).get("content") or None
    logprobs = [float(i["logprob"]) for i in items] if items else None
    token_ids = choice.get("token_ids")
    if token_ids is None and items:
        ids = [token_id_of(str(i.get("token", ""))) for i in items]
        token_ids = [i for i in ids if i is not None] if all(i is not None for i in ids) else None
    return token_ids, logprobs, payload.get("prompt_token_ids")


def read_completion_tokens(choice: dict[str, Any]) -> tuple[list[int] | None, list[float] | None, list[int] | None]:
    """(response token ids, response logprobs, prompt token ids) of one choice of a vLLM text completion
    (`/v1/completions`, non-streaming): `token_ids` and `prompt_token_ids` are per choice there (with
    `return_token_ids`); logprobs are `logprobs.token_logprobs` (OpenAI's legacy format, with `logprobs: 0`).
    Missing parts are None."""
    logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
    return (choice.get("token_ids"), [float(v) for v in logprobs] if logprobs is not None else None,
            choice.get("prompt_token_ids"))
