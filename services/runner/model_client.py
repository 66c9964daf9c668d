"""Calls the model gateway's OpenAI-compatible chat endpoint for one step of a rollout."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from common.httpclient import HttpClient, HttpError, send, shared
from common.versions import min_version_for
from common.vllm_protocol import read_completion_tokens, read_tokens

#: `/v1/tokenize` URLs that answered 404 in this process (replicas without vLLM's `/tokenize`).
_NO_TOKENIZE: set[str] = set()

#: Share of the runner's model timeout given to the gateway as its deadline (`X-Request-Timeout-S`).
GATEWAY_DEADLINE_SHARE = 0.95


class ModelError(RuntimeError):
    """The gateway or model failed (transport error, timeout, non-2xx, or a malformed reply)."""


class TokenizeUnsupported(ModelError):
    """The gateway's replicas have no `/tokenize` route (the scripted policy): prompts go as chat messages."""


@dataclass(frozen=True)
class ModelReply:
    """One completion: text, token ids (prompt and response) and response logprobs when the server gives
    them, usage, served version and replica, latency (ms), and why the sampling stopped (`stop`: an end token
    or stop string, the end token then the last of `token_ids`; `length`: `max_tokens`)."""

    text: str
    token_ids: list[int] | None
    logprobs: list[float] | None
    prompt_tokens: int
    completion_tokens: int
    model_version: str | None
    replica: str | None
    model_ms: float
    prompt_token_ids: list[int] | None = None
    finish_reason: str | None = None


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
        self.completions_url = gateway_url.rstrip("/") + "/v1/completions"
        self.tokenize_url = gateway_url.rstrip("/") + "/v1/tokenize"
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
        return self._post_completion(self.url, body, self._headers(episode_id, policy_version, max_staleness),
                                     chat=True)

    def complete_tokens(
        self,
        prompt_ids: list[int],
        model: str,
        sampling: dict[str, Any],
        episode_id: str,
        policy_version: str | None = None,
        max_staleness: int | None = None,
    ) -> ModelReply:
        """One text completion of a prompt given as token ids (`POST /v1/completions`, vLLM's `prompt: list[int]`;
        `services/runner/token_carry.py` builds it), with the same headers and sampling as `complete` (a
        `logprobs: true` sampling asks for the sampled tokens' logprobs, `logprobs: 0` in that API).
        Raises: ModelError as `complete`."""
        body: dict[str, Any] = {"model": model, "prompt": prompt_ids, **sampling}
        if sampling.get("logprobs"):
            body["logprobs"] = 0
            body["return_token_ids"] = True
        else:
            body.pop("logprobs", None)
        reply = self._post_completion(self.completions_url, body,
                                      self._headers(episode_id, policy_version, max_staleness), chat=False)
        return reply if reply.prompt_token_ids is not None else replace(reply, prompt_token_ids=list(prompt_ids))

    def tokenize(self, messages: list[dict[str, Any]], model: str, episode_id: str,
                 continue_final_message: bool = False) -> list[int]:
        """The prompt ids a replica's chat template makes of `messages` (`POST {gateway}/v1/tokenize`, vLLM's
        `/tokenize`): with the generation prompt, or, with `continue_final_message`, the last (assistant)
        message left open. Raises: ModelError (`TokenizeUnsupported` for a 404: the server has no such route)."""
        body = {"model": model, "messages": messages, "add_generation_prompt": not continue_final_message,
                "continue_final_message": continue_final_message, "add_special_tokens": False}
        response = self._post(self.tokenize_url, body, self._headers(episode_id, None, None))
        if response.status_code == 404:
            _NO_TOKENIZE.add(self.tokenize_url)
            raise TokenizeUnsupported(f"gateway answered 404 to /v1/tokenize: {response.text[:200]}")
        if response.status_code != 200:
            raise ModelError(f"tokenize: gateway returned HTTP {response.status_code}: {response.text[:300]}")
        try:
            return [int(t) for t in response.json()["tokens"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"malformed tokenize response: {exc!r}") from exc

    @property
    def tokenize_unsupported(self) -> bool:
        """Whether this process's gateway answered 404 to `/v1/tokenize` (token carrying is then off)."""
        return self.tokenize_url in _NO_TOKENIZE

    def _headers(self, episode_id: str, policy_version: str | None, max_staleness: int | None) -> dict[str, str]:
        return {**self._auth, "X-Episode-Id": episode_id, **version_headers(policy_version, max_staleness),
                "X-Request-Timeout-S": f"{max(1.0, self.timeout_s * GATEWAY_DEADLINE_SHARE):.3f}"}

    def _post(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        try:
            return send(self.http, "POST", url, json=body, headers=headers,
                        connect_timeout_s=self.connect_timeout_s, read_timeout_s=self.timeout_s)
        except HttpError as exc:
            raise ModelError(f"gateway request failed: {exc!r}") from exc

    def _post_completion(self, url: str, body: dict[str, Any], headers: dict[str, str], chat: bool) -> ModelReply:
        start = time.perf_counter()
        response = self._post(url, body, headers)
        model_ms = (time.perf_counter() - start) * 1000.0
        if response.status_code != 200:
            raise ModelError(f"gateway returned HTTP {response.status_code}: {response.text[:300]}")
        try:
            payload = response.json()
            choice = payload["choices"][0]
            if chat:
                text = choice["message"]["content"] or ""
                token_ids, logprobs, prompt_ids = read_tokens(payload, choice)
            else:
                text = choice["text"] or ""
                token_ids, logprobs, prompt_ids = read_completion_tokens(choice)
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
            finish_reason=choice.get("finish_reason"),
        )
