"""OpenAI-compatible routes of the gateway: `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`.

- The body is forwarded as raw bytes (never re-serialized: screenshots make bodies megabytes) through the
  shared `UpstreamClient` (`upstream.py`: kept-alive connections, httptools' C parser; see
  bench/gateway_overhead.py), answers relayed undecoded. A body that is still arriving is relayed while it
  arrives (`body.py`) when the session key comes from a header. Server-sent-event answers (`"stream": true`,
  upstream `Content-Type: text/event-stream`) are relayed chunk by chunk, unchanged; others are returned as
  bytes with the upstream status and content type.
- Policy versions (`versions.py`): only replicas serving an accepted version are eligible. When none is and
  a replica is reloading to an accepted version (or its version is not known yet) the request waits, at most
  `GATEWAY_VERSION_WAIT_S` and never past its deadline; otherwise 409
  `{"error", "requested", "available_versions"}`.
- Deadline: `GATEWAY_REQUEST_TIMEOUT_S`, or less with header `X-Request-Timeout-S` (seconds); every attempt's
  read timeout is cut to what remains; 504 when it is spent.
- Retries go to a different replica (up to `max_retries`) for connect/transport errors and 5xx answers
  received before any byte went to the client, never after the client left (the upstream request is
  cancelled as soon as the client disconnects: the replica stops generating an answer nobody reads).
- Every answer carries `X-Replica` and `X-Model-Version`. 503 `{"error": "no healthy replica ..."}` when no
  replica can serve; 401 `{"error": "Unauthorized"}` without a valid API key when `GATEWAY_API_KEYS` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

import httpx
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from common.versions import VersionRequirement, requirement_from_headers
from services.model_gateway.auth import bearer, token_ok
from services.model_gateway.body import ClientGone, RequestBody
from services.model_gateway.replicas import Replica
from services.model_gateway.routing import session_key
from services.model_gateway.state import GatewayState, get_state
from services.model_gateway.upstream import UpstreamError, UpstreamResponse

log = logging.getLogger(__name__)

# Hop-by-hop, length and encoding headers are recomputed by our server; ours are set explicitly.
_DROP_RESPONSE_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding",
                          "date", "server", "x-model-version", "x-replica"}
# `expect`: the gateway sends the body without waiting for a `100 Continue` (its own server answered the client's).
_DROP_REQUEST_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive",
                         "accept-encoding", "upgrade", "te", "expect"}
CLIENT_CLOSED = 499  # nginx's "client closed request": logged, never seen by the gone client

router = APIRouter()


class RequestRejected(Exception):
    """A request the gateway answers itself (bad header, no replica, version conflict, deadline)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def forward_headers(request: Request) -> dict[str, str]:
    """Request headers to send upstream: end-to-end ones only, and an uncompressed answer (raw relay)."""
    out = {k: v for k, v in request.headers.items() if k not in _DROP_REQUEST_HEADERS}
    out["accept-encoding"] = "identity"
    return out


#: uvloop (libuv) rounds a timer's delay to whole ms and counts from its cached loop time, so a timeout bounded by
#: the request's deadline can fire up to ~1 ms before it: such an expiry is still the deadline's, not the replica's.
TIMER_SLACK_S = 0.002


def _json_error(state: GatewayState, status: int, payload: dict[str, object]) -> JSONResponse:
    return JSONResponse(payload, status_code=status,
                        headers={"X-Model-Version": state.settings.model_version, "X-Replica": ""})


def request_deadline(state: GatewayState, request: Request) -> float:
    """Monotonic deadline of the request. Raises: RequestRejected(400) for a bad `X-Request-Timeout-S`."""
    budget = state.settings.request_timeout_s
    header = request.headers.get("x-request-timeout-s")
    if header is not None:
        try:
            wanted = float(header)
            if not wanted > 0:
                raise ValueError("must be > 0")
        except ValueError as exc:
            raise RequestRejected(_json_error(state, 400, {
                "error": f"X-Request-Timeout-S must be a positive number of seconds, got {header!r} ({exc})"})) from exc
        budget = min(budget, wanted)
    return time.monotonic() + budget


def _accept(state: GatewayState, requirement: VersionRequirement | None) -> Callable[[Replica], bool] | None:
    if requirement is None:
        return None
    return lambda r: requirement.satisfied_by(r.model_version)


def _may_become_eligible(state: GatewayState, requirement: VersionRequirement | None, tried: set[str]) -> bool:
    """A replica not yet tried is reloading to an accepted version, or its version is not known yet."""
    for replica in state.pool.list_replicas():
        if replica.id in tried or not replica.healthy:
            continue
        if replica.reloading and (requirement is None or requirement.satisfied_by(replica.target_version)):
            return True
        if requirement is not None and replica.model_version is None and not replica.draining:
            return True
    return False


async def pick(state: GatewayState, key: str | None, tried: set[str], requirement: VersionRequirement | None,
               deadline: float, last_error: str = "none routable") -> tuple[Replica, str]:
    """Route the request, waiting (bounded) for a replica of an accepted version.

    Raises: RequestRejected with 409 (version conflict), 503 (no replica) or 504 (deadline spent waiting).
    """
    accept = _accept(state, requirement)
    wait_until = min(deadline, time.monotonic() + state.settings.version_wait_s)
    waited = False
    while True:
        replica, decision = state.router.route(key, exclude=tried, accept=accept)
        if replica is not None:
            return replica, decision
        remaining = wait_until - time.monotonic()
        if remaining <= 0 or not _may_become_eligible(state, requirement, tried):
            break
        if not waited:
            waited = True
            state.metrics.version_waits.inc()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(state.pool.changed().wait(), remaining)
    if requirement is not None and state.router.least_loaded(exclude=tried) is not None:
        state.metrics.conflicts.inc()
        available = sorted({r.model_version for r in state.pool.routable() if r.model_version})
        raise RequestRejected(_json_error(state, 409, {
            "error": f"no replica serves a policy version with {requirement.describe()}; available: "
                     f"{', '.join(available) or 'none'}",
            "requested": {"policy_version": requirement.exact, "min_policy_version": requirement.minimum},
            "available_versions": available}))
    if time.monotonic() >= deadline:
        raise RequestRejected(_json_error(state, 504, {"error": "gateway deadline spent waiting for a replica"}))
    raise RequestRejected(_json_error(state, 503, {"error": f"no healthy replica could serve the request "
                                                            f"({last_error})"}))


UPSTREAM_ERRORS = (UpstreamError, TimeoutError)


async def send_unless_gone(body: RequestBody, sending: Awaitable[UpstreamResponse]) -> UpstreamResponse | None:
    """Await the upstream response head; None when the client left first (the upstream request is cancelled,
    which closes its connection: vLLM aborts a request whose connection closes). Raises: UPSTREAM_ERRORS.

    The head is awaited in the calling task itself (no task per request, no `asyncio.wait`): a watcher of
    the client's disconnect cancels this task if the client leaves, and only while it waits here."""
    current = asyncio.current_task()
    assert current is not None  # always called from a request's task
    waiting = True
    left = False

    def on_disconnect(watcher: asyncio.Future[None]) -> None:
        nonlocal left
        if waiting and not watcher.cancelled():  # a callback run after the head arrived must not cancel
            left = True
            current.cancel()

    gone = asyncio.ensure_future(body.wait_disconnect())
    gone.add_done_callback(on_disconnect)
    try:
        response = await sending
    except asyncio.CancelledError:
        if not left:
            raise
        current.uncancel()
        return None
    finally:
        waiting = False
        gone.cancel()
    if left:  # the cancel came as the head arrived and was not raised: still, nobody will read it
        current.uncancel()
        response.release()
        return None
    return response


def track(state: GatewayState, replica: Replica) -> Callable[[], None]:
    """Count one in-flight request on `replica`; returns an idempotent release function."""
    replica.in_flight += 1
    state.metrics.in_flight.labels(replica.id).set(replica.in_flight)
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            replica.in_flight -= 1
            state.metrics.in_flight.labels(replica.id).set(replica.in_flight)
            if replica.in_flight == 0:
                state.pool.notify()  # a half-open replica may take its next trial

    return release


def response_headers(state: GatewayState, upstream_headers: Mapping[str, str], replica: Replica) -> dict[str, str]:
    """Upstream end-to-end headers plus `X-Replica` and `X-Model-Version` (recording the served version)."""
    out = {k: v for k, v in upstream_headers.items() if k.lower() not in _DROP_RESPONSE_HEADERS}
    version = upstream_headers.get("x-model-version")
    if version:
        state.pool.set_version(replica, version)
    out["X-Replica"] = replica.id
    out["X-Model-Version"] = version or replica.model_version or state.settings.model_version
    return out


async def forward(request: Request, path: str, state: GatewayState) -> Response:
    """Check, route, send the raw body, retry before the first byte; the answer to give the client."""
    started = time.perf_counter()
    if state.settings.api_keys and not token_ok(bearer(request), state.settings.api_key_list):
        return JSONResponse({"error": "Unauthorized"}, status_code=401)
    try:
        requirement = requirement_from_headers(request.headers)
    except ValueError as exc:
        return _json_error(state, 400, {"error": str(exc)})
    try:
        deadline = request_deadline(state, request)
        body = RequestBody(request.receive)
        await body.first()
        headers = forward_headers(request)
        key = await session_key(request.headers, body.read)  # no session header: the whole body is read
        # A body still arriving is relayed as it comes (and its length announced, when the client did).
        relay_upload = not body.complete
        if relay_upload and "content-length" in request.headers:
            headers["content-length"] = request.headers["content-length"]
        tried: set[str] = set()
        upstream_s = 0.0
        last_error = "none routable"
        for attempt in range(state.settings.max_retries + 1):
            replica, decision = await pick(state, key, tried, requirement, deadline, last_error)
            state.metrics.decisions.labels(decision).inc()
            if attempt:
                state.metrics.retries.inc()
            tried.add(replica.id)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            release = track(state, replica)
            upstream_started = time.perf_counter()
            try:
                upstream = await send_unless_gone(body, state.upstream.post(
                    replica.url + path, body.chunks if relay_upload else await body.read(), headers,
                    connect_timeout=min(state.settings.connect_timeout_s, remaining),
                    read_timeout=min(state.settings.read_timeout_s, remaining)))
            except (*UPSTREAM_ERRORS, ClientGone) as exc:
                upstream_s += time.perf_counter() - upstream_started
                release()
                if body.gone:  # the upload failed because the client left mid-body: not the replica's fault
                    state.metrics.abandoned.inc()
                    return Response(status_code=CLIENT_CLOSED)
                if time.monotonic() >= deadline - TIMER_SLACK_S:  # our deadline cut it short: not the replica's fault
                    return _json_error(state, 504, {"error": f"gateway deadline exceeded on {replica.id} ({exc!r})"})
                state.pool.record_failure(replica)
                last_error = f"replica {replica.id}: {exc!r}"
                log.warning("attempt %d on %s failed: %r", attempt, replica.id, exc)
                continue
            if upstream is None:  # the client left: stop, retry nothing
                release()
                state.metrics.abandoned.inc()
                return Response(status_code=CLIENT_CLOSED)
            state.metrics.latency.labels(replica.id).observe(time.perf_counter() - upstream_started)
            if upstream.status >= 500:
                with contextlib.suppress(*UPSTREAM_ERRORS):
                    await upstream.read()
                upstream.release()
                upstream_s += time.perf_counter() - upstream_started
                release()
                state.pool.record_failure(replica)
                last_error = f"replica {replica.id} answered HTTP {upstream.status}"
                log.warning("attempt %d on %s: HTTP %d", attempt, replica.id, upstream.status)
                if body.gone or (body.complete and await request.is_disconnected()):
                    state.metrics.abandoned.inc()
                    return Response(status_code=CLIENT_CLOSED)
                continue
            out_headers = response_headers(state, upstream.headers, replica)
            if upstream.content_type == "text/event-stream":  # `"stream": true`: relay chunk by chunk
                upstream_s += time.perf_counter() - upstream_started
                state.metrics.overhead.observe(max(0.0, time.perf_counter() - started - upstream_s))
                state.pool.record_success(replica)
                return StreamingResponse(_relay(upstream, release), status_code=upstream.status,
                                         headers=out_headers)
            try:
                content = await upstream.read()  # nothing sent to the client yet: a failure here is retryable
            except UPSTREAM_ERRORS as exc:
                upstream_s += time.perf_counter() - upstream_started
                state.pool.record_failure(replica)
                last_error = f"replica {replica.id}: {exc!r} while reading the answer"
                continue
            finally:
                upstream.release()
                release()
            upstream_s += time.perf_counter() - upstream_started
            state.pool.record_success(replica)
            state.metrics.overhead.observe(max(0.0, time.perf_counter() - started - upstream_s))
            return Response(content, status_code=upstream.status, headers=out_headers)
    except RequestRejected as rejected:
        return rejected.response
    except ClientGone:
        state.metrics.abandoned.inc()
        return Response(status_code=CLIENT_CLOSED)
    if time.monotonic() >= deadline:
        return _json_error(state, 504, {"error": f"gateway deadline exceeded ({last_error})"})
    return _json_error(state, 503, {"error": f"no healthy replica could serve the request ({last_error})"})


async def _relay(upstream: UpstreamResponse, release: Callable[[], None]) -> AsyncIterator[bytes]:
    """Pass an upstream streaming answer through chunk by chunk, unchanged; always close it and release the
    replica."""
    try:
        async for chunk in upstream.iter_chunks():
            yield chunk
    except UPSTREAM_ERRORS as exc:  # bytes already went to the client: no retry possible, end the stream
        log.warning("upstream stream broke: %r", exc)
    finally:
        upstream.release()
        release()


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """OpenAI chat completions, forwarded as raw bytes (streaming or not)."""
    return await forward(request, "/v1/chat/completions", state)


@router.post("/v1/completions", response_model=None)
async def completions(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """OpenAI text completions, forwarded as raw bytes (streaming or not)."""
    return await forward(request, "/v1/completions", state)


@router.get("/v1/models", response_model=None)
async def models(request: Request, state: GatewayState = Depends(get_state)) -> Response:
    """The model list of a healthy replica (fewest in-flight first); 503 when none answers."""
    if state.settings.api_keys and not token_ok(bearer(request), state.settings.api_key_list):
        return JSONResponse({"error": "Unauthorized"}, status_code=401)
    tried: set[str] = set()
    last_error = "none routable"
    while (replica := state.router.least_loaded(tried)) is not None:
        tried.add(replica.id)
        try:
            upstream = await state.client.get(f"{replica.url}/v1/models")
        except httpx.HTTPError as exc:
            state.pool.record_failure(replica)
            last_error = f"replica {replica.id}: {exc!r}"
            continue
        if upstream.status_code >= 500:
            last_error = f"replica {replica.id} answered HTTP {upstream.status_code}"
            continue
        return Response(upstream.content, status_code=upstream.status_code,
                        headers=response_headers(state, upstream.headers, replica))
    return _json_error(state, 503, {"error": f"no healthy replica could serve the request ({last_error})"})
