"""Calls the model gateway's OpenAI-compatible chat endpoint for one step of a rollout."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from common.httpclient import HttpClient, HttpError, send, shared
from common.versions import min_version_for
from common.vllm_protocol import read_tokens

#: Share of the runner's model timeout given to the gateway as its deadline (`X-Request-Timeout-S`).
GATEWAY_DEADLINE_SHARE = 0.95


class ModelError(RuntimeError):
    """The gateway or model failed (transport error, timeout, non-2xx, or a malformed reply)."""


@dataclass(frozen=True)
class ModelReply:
    """One completion: text, token ids (prompt and response) and response logprobs when the server gives
    them, usage, served version and replica, latency (ms)."""

    text: str
    token_ids: list[int] | None
    logprobs: list[float] | None
    prompt_tokens: int
    completion_tokens: int
    model_version: str | None
    replica: str | None
    model_ms: float
    prompt_token_ids: list[int] | None = None


def version_headers(policy_version: str | None, max_staleness: int | None) -> dict[str, str]:
    """The gateway's version headers for a run: exact `X-Policy-Version`, or with `max_staleness`
    `X-Min-Policy-Version` (`policy_version` minus `max_staleness`, see `common.versions`)."""
    if not policy_version:
        return {}
    if max_staleness is None:
        return {"X-Policy-Version": policy_version}
    return {"X-Min-Policy-Version": min_version_for(policy_version, max_staleness)}


def shared_model_client(gateway_url: str, timeout_s: float, connect_timeout_s: float,
                        api_key: str | None = None) -> ModelClient:
    """A `ModelClient` over this process's HTTP client (`common.httpclient.shared`: made once, kept across
    rollouts with its connections, never a parent process's). Cheap to call."""
    return ModelClient(gateway_url, timeout_s, connect_timeout_s, http=shared("model"), api_key=api_key)


class ModelClient:
    """Sync client of `POST {gateway}/v1/chat/completions` with explicit timeouts.

    Sends `X-Episode-Id: <rollout id>` so the gateway keeps the episode on one replica (prefix cache), the
    run's version headers (`version_headers`) and `X-Request-Timeout-S` a little under this client's own
    timeout, so the gateway gives up (and stops its replicas) before the runner does. With `logprobs`
    sampling it asks vLLM for token ids too (`return_token_ids`, `return_tokens_as_token_ids`).

    `http`: the HTTP client to send through; None makes one of its own (closed by `close()`).
    `api_key`: sent as `Authorization: Bearer <api_key>` (the gateway's `GATEWAY_API_KEYS`); None: no header.
    `shared_model_client` gives the process's client, whose connections rollouts reuse.
    """

    def __init__(self, gateway_url: str, timeout_s: float, connect_timeout_s: float,
                 http: HttpClient | None = None, api_key: str | None = None) -> None:
        self.url = gateway_url.rstrip("/") + "/v1/chat/completions"
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._owns_http = http is None
        self.http = http if http is not None else HttpClient()

    def close(self) -> None:
        """Close the HTTP client when this client made it (a shared one stays open)."""
        if self._owns_http:
            self.http.close()

    def complete(
        self,
        messages: list[dict[str, Any]],
        model: str,
        sampling: dict[str, Any],
        episode_id: str,
        policy_version: str | None = None,
        max_staleness: int | None = None,
    ) -> ModelReply:
        """One chat completion. Raises: ModelError naming the failure (a 409 names the available versions)."""
        body: dict[str, Any] = {"model": model, "messages": messages, **sampling}
        if sampling.get("logprobs"):
            body["return_token_ids"] = True
            body["return_tokens_as_token_ids"] = True
        headers = {**self._auth, "X-Episode-Id": episode_id, **version_headers(policy_version, max_staleness),
                   "X-Request-Timeout-S": f"{max(1.0, self.timeout_s * GATEWAY_DEADLINE_SHARE):.3f}"}
        start = time.perf_counter()
        try:
            response = send(self.http, "POST", self.url, json=body, headers=headers,
                            connect_timeout_s=self.connect_timeout_s, read_timeout_s=self.timeout_s)
        except HttpError as exc:
            raise ModelError(f"gateway request failed: {exc!r}") from exc
        model_ms = (time.perf_counter() - start) * 1000.0
        if response.status_code != 200:
            raise ModelError(f"gateway returned HTTP {response.status_code}: {response.text[:300]}")
        try:
            payload = response.json()
            choice = payload["choices"][0]
            text = choice["message"]["content"] or ""
            token_ids, logprobs, prompt_ids = read_tokens(payload, choice)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(f"malformed completion: {exc!r}") from exc
        usage = payload.get("usage") or {}
        return ModelReply(
            text=text,
            token_ids=token_ids,
            logprobs=logprobs,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model_version=response.headers.get("X-Model-Version"),
            replica=response.headers.get("X-Replica"),
            model_ms=model_ms,
            prompt_token_ids=prompt_ids,
        )
