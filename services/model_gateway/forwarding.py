"""Forwarding one completion request to a replica: the gateway's hot path.

Entry point: `forward_completion(request, path, state)`, called by the OpenAI routes (`proxy.py`) and usable from
any other router: it routes the request's body (or `body=` bytes the caller built) to a replica's `path` and
returns that replica's response, relayed as it arrives.

- The body is forwarded as raw bytes (never re-serialized: screenshots make bodies megabytes) through the app's
  one pooled `httpx.AsyncClient` (`server.py`). A body still arriving is relayed while it arrives (`body.py`)
  when a header names the session; otherwise it is read whole first (the session may be its `"user"`).
- Routing (`routing.py`): sticky per session (`X-Episode-Id`, `X-Session-Id`, the body's `"user"`), bounded
  loads, circuit breaker (`replicas.py`). Policy versions (`common/versions.py`): only replicas serving an
  accepted version are eligible; when none is and one is reloading to an accepted version (or its version is not
  known yet) the request waits, at most `GATEWAY_VERSION_WAIT_S` and never past its deadline; otherwise 409
  `{"error", "requested", "available_versions"}`.
- Deadline: `GATEWAY_REQUEST_TIMEOUT_S`, or less with header `X-Request-Timeout-S` (seconds); every attempt's
  timeouts are cut to what remains; 504 when it is spent.
- Retries go to another replica (up to `max_retries`) only when the replica cannot have run the request: a
  transport error before any byte of it was sent (connect refused or timed out, no pooled connection in time),
  or a 5xx response it sent back (it failed the request, and said so), and only while nothing went to the
  client and the client is still there. A transport failure after bytes were sent (the replica reset or closed
  the connection, no response within the read timeout) is never resent: the replica may be running it; the
  client gets 502 (504 for a timeout). When the client leaves, the upstream request is closed at once (vLLM
  aborts a request whose connection closes) and nothing is retried.
- The response (any status below 500) keeps its end-to-end headers (`headers.py`) and its bytes undecoded.
  A small one (`SMALL_RESPONSE_BYTES`, a non-streamed completion) is read whole and sent in one piece (502 if
  the replica breaks it off); any other is relayed as it arrives (`RelayedResponse`): each chunk sent to the
  client before the next is read from the replica, so a slow client slows the replica's send instead of
  growing the gateway's memory, and a replica that breaks off a response already started makes the gateway
  close the client's connection (the client sees a cut-short response, never a clean end). Every response
  carries `X-Replica` and `X-Model-Version`; 503 `{"error": "no healthy replica ..."}` when no replica can serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio
import httpx
from fastapi import Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.types import Send

from common.versions import VersionRequirement, requirement_from_headers
from services.model_gateway.body import ClientGone, RequestBody
from services.model_gateway.headers import encode_headers, relayed_response_headers, upstream_request_headers
from services.model_gateway.replicas import Replica
from services.model_gateway.routing import session_key
from services.model_gateway.state import GatewayState

log = logging.getLogger(__name__)

CLIENT_CLOSED = 499  # nginx's "client closed request": logged, never seen by the gone client

#: uvloop (libuv) rounds a timer's delay to whole ms and counts from its cached loop time, so a timeout bounded by
#: the request's deadline can fire up to ~1 ms before it: such an expiry is still the deadline's, not the replica's.
TIMER_SLACK_S = 0.002

#: httpx errors raised before any byte of the request left the gateway: the replica never saw it.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class RequestRejected(Exception):
    """A request the gateway responds to itself (bad header, no replica, version conflict, deadline, auth); the app
    turns it into `response` (`server.py` registers the handler)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def json_error(state: GatewayState, status: int, payload: dict[str, object]) -> JSONResponse:
    """The gateway's own error response: `payload` as JSON, with `X-Model-Version` and an empty `X-Replica`."""
    return JSONResponse(payload, status_code=status,
                        headers={"X-Model-Version": state.settings.model_version, "X-Replica": ""})


def request_deadline(state: GatewayState, request: Request) -> float:
    """Monotonic deadline of the request (s). Raises: RequestRejected(400) for a bad `X-Request-Timeout-S`."""
    budget = state.settings.request_timeout_s
    header = request.headers.get("x-request-timeout-s")
    if header is not None:
        try:
            wanted = float(header)
            if not wanted > 0:
                raise ValueError("must be > 0")
        except ValueError as exc:
            raise RequestRejected(json_error(state, 400, {
                "error": f"X-Request-Timeout-S must be a positive number of seconds, got {header!r} ({exc})"})) from exc
        budget = min(budget, wanted)
    return time.monotonic() + budget


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
    """Route the request, waiting (bounded) for a replica of an accepted version; (replica, routing decision).

    Raises: RequestRejected with 409 (version conflict), 503 (no replica) or 504 (deadline spent waiting).
    """
    accept = None if requirement is None else (lambda r: requirement.satisfied_by(r.model_version))
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
        raise RequestRejected(json_error(state, 409, {
            "error": f"no replica serves a policy version with {requirement.describe()}; available: "
                     f"{', '.join(available) or 'none'}",
            "requested": {"policy_version": requirement.exact, "min_policy_version": requirement.minimum},
            "available_versions": available}))
    if time.monotonic() >= deadline:
        raise RequestRejected(json_error(state, 504, {"error": "gateway deadline spent waiting for a replica"}))
    raise RequestRejected(json_error(state, 503, {"error": f"no healthy replica could serve the request "
                                                           f"({last_error})"}))


async def send_unless_gone(body: RequestBody, sending: Awaitable[httpx.Response]) -> httpx.Response | None:
    """Await the upstream response head; None when the client left first (the upstream request is cancelled,
    which closes its connection: vLLM aborts a request whose connection closes). Raises: httpx.HTTPError,
    ClientGone.

    The head is awaited in the calling task itself (no task per request): a watcher of the client's disconnect
    cancels this task if the client leaves, and only while it waits here."""
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
        await response.aclose()
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


def served_version(state: GatewayState, replica: Replica, upstream: httpx.Response) -> str:
    """The policy version of a replica's response (its `X-Model-Version`, recorded on the replica), else the
    replica's known version, else `GATEWAY_MODEL_VERSION`."""
    version = upstream.headers.get("x-model-version")
    if version:
        state.pool.set_version(replica, version)
    return version or replica.model_version or state.settings.model_version


class RelayedResponse(StreamingResponse):
    """A replica's response relayed to the client as it arrives: status and `headers` at once, then the body's
    bytes undecoded (`httpx.Response.aiter_raw`), each chunk sent before the next one is read.

    `body_iterator` (also for a caller that consumes the response itself instead of sending it, e.g. to record
    it) yields the body's bytes, then closes the upstream response and calls `release()` however the iteration
    ends; if the replica breaks off the body it calls `broke()` (a failure of the replica) and raises
    httpx.HTTPError. Sent to a client, such a response is left incomplete (the server closes the client's
    connection: a cut-short response, never a clean end); Starlette cancels the relay when the client leaves."""

    def __init__(self, upstream: httpx.Response, headers: list[tuple[str, str]], release: Callable[[], None],
                 broke: Callable[[], None], replica: str) -> None:
        self.upstream = upstream
        self.release = release
        self.broke = broke
        self.replica = replica
        self.chunks = self._body()
        super().__init__(self.chunks, status_code=upstream.status_code)
        self.raw_headers = encode_headers(headers)

    async def _body(self) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in self.upstream.aiter_raw():
                yield chunk
        except httpx.HTTPError:
            self.broke()
            raise
        finally:
            self.release()
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()

    async def stream_response(self, send: Send) -> None:
        """Send the head, then each body chunk as it arrives; the end only if the replica's body ended."""
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        async with contextlib.aclosing(self.chunks) as chunks:
            try:
                async for chunk in chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx.HTTPError as exc:
                log.warning("replica %s broke off its response after it started (%r): closing the client's "
                            "connection", self.replica, exc)
                return  # incomplete on purpose
        await send({"type": "http.response.body", "body": b"", "more_body": False})


#: Responses up to this size (bytes, by their `Content-Length`) that are not event streams are read whole, then sent.
SMALL_RESPONSE_BYTES = 256 * 1024


def _small(upstream: httpx.Response) -> bool:
    """A response to read whole: not an event stream, `Content-Length` <= `SMALL_RESPONSE_BYTES`."""
    length = upstream.headers.get("content-length", "")
    content_type = upstream.headers.get("content-type", "")
    return length.isdigit() and int(length) <= SMALL_RESPONSE_BYTES and not content_type.startswith("text/event-stream")


def attempt_timeout(state: GatewayState, remaining: float) -> httpx.Timeout:
    """The settings' timeouts, each cut to the `remaining` seconds of the request's deadline."""
    s = state.settings
    return httpx.Timeout(connect=min(s.connect_timeout_s, remaining), read=min(s.read_timeout_s, remaining),
                         write=min(s.write_timeout_s, remaining), pool=min(s.pool_timeout_s, remaining))


def _client_gone(state: GatewayState) -> Response:
    state.metrics.abandoned.inc()
    return Response(status_code=CLIENT_CLOSED)


async def forward_completion(request: Request, path: str, state: GatewayState, *, body: bytes | None = None,
                             session: str | None = None) -> Response:
    """Route a completion request to a replica's `path` (`/v1/chat/completions`, `/v1/completions`) and return
    its response, relayed as it arrives (see the module docstring for routing, retries and deadlines).

    `request` gives the headers (forwarded end-to-end ones, `X-Request-Timeout-S`, `X-Policy-Version`,
    `X-Min-Policy-Version`, session headers) and the client's ASGI channel (its body unless `body` is given, and
    its disconnect). `body`: bytes to send instead of the request's own body. `session`: the session key to route
    by instead of the request's (headers, then the body's `"user"`).

    Returns the relayed response (status < 500), or the gateway's own JSON error: 400 (bad header), 409 (no
    accepted version), 502 (replica failed after the request was sent), 503 (no replica could serve), 504
    (deadline or replica timeout), 499 when the client left (nobody reads it).
    """
    started = time.perf_counter()
    try:
        requirement = requirement_from_headers(request.headers)
    except ValueError as exc:
        return json_error(state, 400, {"error": str(exc)})
    try:
        deadline = request_deadline(state, request)
        payload = RequestBody(request.receive) if body is None else RequestBody.of_bytes(body, request.receive)
        await payload.first()
        key = session or await session_key(request.headers, payload.read)  # no session header: body read whole
        relay_upload = not payload.complete  # relayed as it arrives, its length announced when the client did
        headers = upstream_request_headers(request.headers.items(),
                                           request.headers.get("content-length") if relay_upload else None)
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
            outgoing = state.client.build_request(
                "POST", replica.url + path, headers=headers,
                content=payload.chunks() if relay_upload else await payload.read(),
                timeout=attempt_timeout(state, remaining))
            try:
                upstream = await send_unless_gone(payload, state.client.send(outgoing, stream=True))
            except (httpx.HTTPError, ClientGone) as exc:
                upstream_s += time.perf_counter() - upstream_started
                release()
                if payload.gone:  # the upload failed because the client left mid-body: not the replica's fault
                    return _client_gone(state)
                if time.monotonic() >= deadline - TIMER_SLACK_S:  # our deadline cut it short: not the replica's
                    return json_error(state, 504, {"error": f"gateway deadline exceeded on {replica.id} ({exc!r})"})
                state.pool.record_failure(replica)
                last_error = f"replica {replica.id}: {exc!r}"
                if isinstance(exc, NOT_SENT):
                    log.warning("attempt %d on %s failed before sending: %r", attempt, replica.id, exc)
                    continue
                log.warning("replica %s failed after the request was sent (not resent): %r", replica.id, exc)
                status = 504 if isinstance(exc, httpx.TimeoutException) else 502
                return json_error(state, status, {"error": f"replica {replica.id} failed after the request was "
                                                           f"sent; not resent, it may have run it ({exc!r})"})
            if upstream is None:  # the client left: stop, retry nothing
                release()
                return _client_gone(state)
            state.metrics.latency.labels(replica.id).observe(time.perf_counter() - upstream_started)
            if upstream.status_code >= 500:
                with contextlib.suppress(httpx.HTTPError):
                    await upstream.aread()
                await upstream.aclose()
                upstream_s += time.perf_counter() - upstream_started
                release()
                state.pool.record_failure(replica)
                last_error = f"replica {replica.id} responded HTTP {upstream.status_code}"
                log.warning("attempt %d on %s: HTTP %d", attempt, replica.id, upstream.status_code)
                if payload.gone or (payload.complete and await request.is_disconnected()):
                    return _client_gone(state)
                continue
            upstream_s += time.perf_counter() - upstream_started
            state.pool.record_success(replica)
            out_headers = relayed_response_headers(upstream.headers.multi_items(), replica.id,
                                                   served_version(state, replica, upstream))
            state.metrics.overhead.observe(max(0.0, time.perf_counter() - started - upstream_s))
            if not _small(upstream):
                broke = functools.partial(state.pool.record_failure, replica)
                return RelayedResponse(upstream, out_headers, release, broke, replica.id)
            try:  # a small response (a non-streamed completion) in one piece: no relay task, one write to the client
                content = b"".join([chunk async for chunk in upstream.aiter_raw()])
            except httpx.HTTPError as exc:
                state.pool.record_failure(replica)
                log.warning("replica %s broke off its response (not resent): %r", replica.id, exc)
                return json_error(state, 502, {"error": f"replica {replica.id} broke off its response; not resent, "
                                                        f"it may have run the request ({exc!r})"})
            finally:
                release()
                await upstream.aclose()
            whole = Response(content, status_code=upstream.status_code)
            whole.raw_headers = encode_headers(out_headers)  # the replica's content-length: the same raw bytes
            return whole
    except RequestRejected as rejected:
        return rejected.response
    except ClientGone:
        return _client_gone(state)
    if time.monotonic() >= deadline:
        return json_error(state, 504, {"error": f"gateway deadline exceeded ({last_error})"})
    return json_error(state, 503, {"error": f"no healthy replica could serve the request ({last_error})"})
