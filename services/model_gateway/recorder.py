"""What a gateway session records of one chat completion (services/model_gateway/sessions.py).

- The request asks the replica for what RL needs, the way the runner's RL path does
  (services/runner/model_client.py; vLLM's fields in `common.vllm_protocol`): `logprobs`, `return_token_ids`
  (prompt and response token ids) and, when the client did not ask for logprobs itself,
  `return_tokens_as_token_ids` (ids in the logprob tokens too, for servers without `return_token_ids`).
  What the client did not ask for is taken out of a JSON response again (`strip_added`), so the agent sees the
  response it asked for; a streamed response is relayed as it comes, those fields included.
- The request's chat messages are kept with every inline image (`data:` URL) replaced by an `image_ref` part
  naming a content-addressed blob (`common.events.blob_name`); the blob's bytes ride once per session on the
  event stream beside the step (`blob:<name>` fields) and the sink stores them under that name.
- The response's text, token ids, logprobs, usage, served version and replica, and the call's timings make one
  `cua.step.v1` record (`call_event`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from common.data_urls import image_data, image_part_url
from common.events import RolloutRef, StepEvent, StepTimings, Usage, blob_name
from common.vllm_protocol import read_tokens

_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/webp": "webp",
               "image/gif": "gif"}


@dataclass(frozen=True)
class Added:
    """Token fields the gateway added to a request (the client did not ask for them)."""

    logprobs: bool
    token_ids: bool


def prepare_request(body: dict[str, Any]) -> tuple[dict[str, Any], Added]:
    """`body` with the token fields RL needs turned on, and which of them the client had not asked for.

    Raises: ValueError when `body` has no `messages` list (the OpenAI chat format)."""
    if not isinstance(body.get("messages"), list):
        raise ValueError("a chat completion request needs a 'messages' list")
    added = Added(logprobs=not body.get("logprobs"), token_ids=not body.get("return_token_ids"))
    out = {**body, "logprobs": True, "return_token_ids": True}
    if added.logprobs:
        out["return_tokens_as_token_ids"] = True
    return out, added


def request_bytes(raw: bytes, body: dict[str, Any], prepared: dict[str, Any]) -> bytes:
    """The bytes to forward for `prepared` (`prepare_request` of `body`, parsed from `raw`): `raw` with the fields
    the gateway adds written before its closing brace, when the client sent none of them (a body of megabytes of
    screenshots is not serialised again); else `prepared` serialised (no key twice)."""
    added = {key: value for key, value in prepared.items() if key not in body or body[key] != value}
    if not added:
        return raw
    stripped = raw.rstrip()
    if any(key in body for key in added) or not stripped.endswith(b"}"):
        return json.dumps(prepared).encode()
    return stripped[:-1] + (b"," if body else b"") + json.dumps(added)[1:-1].encode() + b"}"


def strip_added(payload: dict[str, Any], added: Added) -> dict[str, Any]:
    """A JSON chat completion without the token fields the gateway added (`prepare_request`)."""
    out = dict(payload)
    if added.token_ids:
        out.pop("prompt_token_ids", None)
    choices = []
    for choice in out.get("choices") or []:
        choice = dict(choice)
        if added.token_ids:
            choice.pop("token_ids", None)
        if added.logprobs:
            choice["logprobs"] = None
        choices.append(choice)
    if "choices" in out:
        out["choices"] = choices
    return out


def images_by_reference(messages: list[Any]) -> tuple[list[Any], dict[str, bytes]]:
    """`messages` with each `image_url` part holding a base64 `data:` URL replaced by
    `{"type": "image_ref", "image_ref": {"name": <blob name>, "media_type", "bytes": <decoded size>}}`, and the
    blobs by name. Image URLs that are not inline (http) are references already and stay; an undecodable
    data URL is replaced by `{"type": "image_ref", "image_ref": {"error": ...}}` (its bytes are not kept)."""
    blobs: dict[str, bytes] = {}
    out: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            out.append(message)
            continue
        parts = []
        for part in content:
            url = image_part_url(part)
            try:
                image = image_data(url) if url is not None else None
            except ValueError as exc:
                parts.append({"type": "image_ref", "image_ref": {"error": str(exc)}})
                continue
            if image is None:
                parts.append(part)
                continue
            media_type, data = image
            name = blob_name(data, _EXTENSIONS.get(media_type, media_type.split("/", 1)[1][:8].lower()))
            blobs[name] = data
            parts.append({"type": "image_ref", "image_ref": {"name": name, "media_type": media_type,
                                                             "bytes": len(data)}})
        out.append({**message, "content": parts})
    return out, blobs


@dataclass(frozen=True)
class CallTiming:
    """When a call started (epoch s) and how long it took at the gateway (ms) and at the replica (ms)."""

    started_at: float
    total_ms: float
    upstream_ms: float


def call_event(ref: RolloutRef, session_id: str, step: int, request: dict[str, Any], payload: dict[str, Any],
               headers: dict[str, str], timing: CallTiming) -> tuple[StepEvent, dict[str, bytes]]:
    """The `cua.step.v1` record of one call with its response and the blobs of its request's images.

    `request`: the body as the client sent it; `payload`: the replica's JSON response (token fields included);
    `headers`: the gateway response's headers (`X-Replica`, `X-Model-Version`).
    Raises: ValueError when the response has no `choices[0].message` (not a chat completion)."""
    try:
        choice = payload["choices"][0]
        text = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"the replica's response is not a chat completion ({exc!r})") from exc
    token_ids, logprobs, prompt_ids = read_tokens(payload, choice)
    messages, blobs = images_by_reference(request["messages"])
    usage = payload.get("usage") or {}
    version = headers.get("x-model-version") or None
    event = StepEvent(
        **ref.model_dump(), step=step, timestamp=timing.started_at, session_id=session_id,
        policy_version=version, model_version=version, replica=headers.get("x-replica") or None,
        response=text, token_ids=token_ids, logprobs=logprobs, prompt_token_ids=prompt_ids,
        usage=Usage(prompt_tokens=int(usage.get("prompt_tokens") or len(prompt_ids or [])),
                    completion_tokens=int(usage.get("completion_tokens") or len(token_ids or []))),
        timings=StepTimings(model_ms=timing.upstream_ms, step_ms=timing.total_ms),
        request_messages=messages,
        request_params={k: v for k, v in request.items() if k != "messages"})
    return event, blobs


class StreamTranscript:
    """Collects a streamed response (server-sent events, `common.vllm_protocol.ChatCompletionStreamResponse`
    chunks) as it is relayed, into the payload shape of a non-streaming response for `call_event`."""

    def __init__(self) -> None:
        self._buffer = b""
        self.text: list[str] = []
        self.token_ids: list[int] = []
        self.logprobs: list[dict[str, Any]] = []
        self.prompt_token_ids: list[int] | None = None
        self.usage: dict[str, Any] | None = None
        self.has_token_ids = False

    def feed(self, chunk: bytes) -> None:
        """Take the next relayed bytes (events may be split across chunks)."""
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                continue
            try:
                event = json.loads(line[5:])
            except ValueError:
                continue
            self._take(event)

    def _take(self, event: dict[str, Any]) -> None:
        if event.get("prompt_token_ids") is not None:
            self.prompt_token_ids = list(event["prompt_token_ids"])
        if event.get("usage"):
            self.usage = event["usage"]
        for choice in event.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            self.text.append((choice.get("delta") or {}).get("content") or "")
            if choice.get("token_ids") is not None:
                self.has_token_ids = True
                self.token_ids += choice["token_ids"]
            self.logprobs += (choice.get("logprobs") or {}).get("content") or []

    def payload(self) -> dict[str, Any]:
        """The collected response as a non-streaming chat completion payload."""
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(self.text)},
                             "logprobs": {"content": self.logprobs},
                             "token_ids": self.token_ids if self.has_token_ids else None}],
                "prompt_token_ids": self.prompt_token_ids, "usage": self.usage or {}}

