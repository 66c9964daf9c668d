"""Gateway sessions: black-box agents record RL data through an unmodified OpenAI client.

- `POST /v1/sessions` (body `session_store.SessionSpec`, optional) opens a session: 201 `SessionInfo` with its
  id and `base_url` (`<gateway>/sessions/{id}/v1`), which an OpenAI SDK client takes as its `base_url`.
- `POST /sessions/{id}/v1/chat/completions`: forwarded by the proxy's own path (`forward_completion`: routing,
  retries, deadlines, policy-version headers, auth), sticky to one replica (`X-Episode-Id` = the session id),
  with the token fields RL needs added (`recorder.prepare_request`); the response is recorded
  (`recorder.call_event`: request messages with images by reference, prompt and response token ids, logprobs,
  version, replica, timings) and published as a `cua.step.v1` record before it goes back (503 when it cannot
  be). Streaming responses are relayed chunk by chunk and recorded when complete. `GET .../v1/models` as
  `/v1/models`.
- `GET /v1/sessions/{id}`: the session and its records so far. `DELETE /v1/sessions/{id}` closes it (calls in
  flight finish first) and returns its records; an idle session closes by itself after its TTL
  (`GATEWAY_SESSION_TTL_S`). Any call to an unknown or closed session: 404 `{"error"}` naming it.
- Sessions publish on the event stream of `REDIS_URL`.

Auth (services/model_gateway/access.py, one dependency per router): `manage` (`/v1/sessions*`) takes an API or a
runner key, and only a runner key opens, reads or closes a session that names a rollout (403 naming
`GATEWAY_RUNNER_KEYS` otherwise); `router` (`/sessions/{id}/v1/*`) takes the session's own `token` (returned when
it opens: what a runner hands its external program as `OPENAI_API_KEY`), a runner key, or, for a session naming
no rollout, an API key. 401 without one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Body, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel

from common.events import StepEvent
from services.model_gateway import proxy
from services.model_gateway.access import may_name_rollout, require_manager, require_session
from services.model_gateway.forwarding import forward_completion
from services.model_gateway.recorder import (
    CallTiming,
    StreamTranscript,
    call_event,
    prepare_request,
    request_bytes,
    strip_added,
)
from services.model_gateway.session_store import (
    RecordingFailed,
    Session,
    SessionManager,
    SessionNotFound,
    SessionSpec,
)
from services.model_gateway.state import GatewayState, get_state

log = logging.getLogger(__name__)
#: `/v1/sessions*`: open, read, close.
manage = APIRouter(prefix="/v1/sessions", dependencies=[Depends(require_manager)],
                   responses={401: {"description": "no valid API or runner key"}})
#: `/sessions/{id}/v1/*`: a session's OpenAI routes.
router = APIRouter(prefix="/sessions/{session_id}/v1", dependencies=[Depends(require_session)],
                   responses={401: {"description": "neither the session's token nor a runner key"}})
CHAT_PATH = "/v1/chat/completions"


class SessionInfo(BaseModel):
    """A session: id, its bearer `token` (valid on its base URL only), the `base_url` for an OpenAI client
    (absolute) and its `path`, the model name it was opened with, its rollout, idle TTL (s), creation time
    (epoch s), number of recorded calls, closed or not."""

    session_id: str
    token: str
    base_url: str
    path: str
    model: str | None
    run_id: str
    task_id: str
    rollout_index: int
    rollout_id: str
    attempt: int
    ttl_s: float
    created_at: float
    calls: int
    closed: bool


class SessionRecord(SessionInfo):
    """A session and its `cua.step.v1` records, in step order."""

    records: list[StepEvent]


def get_sessions(request: Request) -> SessionManager:
    """FastAPI dependency: the app's `SessionManager`."""
    sessions: SessionManager = request.app.state.sessions
    return sessions


def _info(request: Request, session: Session, closed: bool = False) -> SessionInfo:
    path = f"/sessions/{session.id}/v1"
    return SessionInfo(session_id=session.id, token=session.token, path=path,
                       base_url=str(request.base_url).rstrip("/") + path, model=session.spec.model,
                       **session.ref.model_dump(), ttl_s=session.ttl_s, created_at=session.created_at,
                       calls=len(session.calls), closed=closed)


def _record(request: Request, session: Session, closed: bool = False) -> SessionRecord:
    return SessionRecord(**_info(request, session, closed).model_dump(), records=session.calls)


def _forbidden(role: str, spec: SessionSpec) -> JSONResponse | None:
    """403 naming `GATEWAY_RUNNER_KEYS` when a caller of `role` touches a session naming a rollout."""
    if spec.names_rollout and not may_name_rollout(role):
        return _error(403, "only a runner's key (GATEWAY_RUNNER_KEYS) may open, read or close a session that names "
                           "a rollout (run_id, task_id, rollout_index, rollout_id, attempt)")
    return None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


@manage.post("", response_model=SessionInfo, status_code=201,
             responses={403: {"description": "names a rollout without a runner key"},
                        503: {"description": "Redis unreachable"}})
async def open_session(request: Request, spec: SessionSpec | None = Body(default=None),
                       role: str = Depends(require_manager),
                       sessions: SessionManager = Depends(get_sessions)) -> SessionInfo | JSONResponse:
    """Open a session; 201 with its `base_url` and `token`."""
    spec = spec or SessionSpec()
    if (denied := _forbidden(role, spec)) is not None:
        return denied
    try:
        session = await sessions.create(spec)
    except RecordingFailed as exc:
        return _error(503, str(exc))
    return _info(request, session)


@manage.get("/{session_id}", response_model=SessionRecord,
            responses={403: {"description": "names a rollout"}, 404: {"description": "unknown"}})
async def show_session(session_id: str, request: Request, role: str = Depends(require_manager),
                       sessions: SessionManager = Depends(get_sessions)) -> SessionRecord | JSONResponse:
    """An open session and its records so far; 404 naming it when unknown or closed."""
    try:
        session = sessions.get(session_id)
    except SessionNotFound as exc:
        return _error(404, str(exc))
    return _forbidden(role, session.spec) or _record(request, session)


@manage.delete("/{session_id}", response_model=SessionRecord,
               responses={403: {"description": "names a rollout"}, 404: {"description": "unknown or closed"},
                          503: {"description": "end not published"}})
async def close_session(session_id: str, request: Request, role: str = Depends(require_manager),
                        sessions: SessionManager = Depends(get_sessions)) -> SessionRecord | JSONResponse:
    """Close a session (calls in flight finish first); its records. 404 naming it when unknown or closed."""
    try:
        if (denied := _forbidden(role, sessions.get(session_id).spec)) is not None:
            return denied
        session = await sessions.close(session_id, "closed by DELETE /v1/sessions")
    except SessionNotFound as exc:
        return _error(404, str(exc))
    except RecordingFailed as exc:
        return _error(503, str(exc))
    return _record(request, session, closed=True)


@router.get("/models", response_model=None)
async def session_models(session_id: str, state: GatewayState = Depends(get_state),
                         sessions: SessionManager = Depends(get_sessions)) -> Response:
    """`GET /v1/models` within a session; 404 naming it when unknown or closed."""
    try:
        sessions.get(session_id)
    except SessionNotFound as exc:
        return _error(404, str(exc))
    return await proxy.models(state)


async def forward(request: Request, body: bytes, session_id: str, state: GatewayState) -> Response:
    """The gateway's own forwarding of a completion (`forwarding.forward_completion`: routing, retries, deadlines,
    version headers) with `body` instead of the client's and the session as the sticky key."""
    return await forward_completion(request, CHAT_PATH, state, body=body, session=session_id)


def _is_event_stream(response: Response) -> bool:
    return response.headers.get("content-type", "").split(";", 1)[0].strip() == "text/event-stream"


async def _chunks(response: Response) -> AsyncIterator[bytes]:
    """An response's bytes as the forwarding gives them: chunk by chunk when it relays them as they arrive."""
    if isinstance(response, StreamingResponse):
        async for chunk in response.body_iterator:
            yield chunk if isinstance(chunk, bytes) else str(chunk).encode()
    else:
        yield bytes(response.body)


async def _content(response: Response) -> bytes:
    """A non-streamed response's bytes, whether the forwarding buffered it or relays it as it arrives."""
    return b"".join([chunk async for chunk in _chunks(response)])


def _response_headers(response: Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}


@router.post("/chat/completions", response_model=None,
             responses={404: {"description": "unknown or closed session"}, 503: {"description": "not recorded"}})
async def session_chat(session_id: str, request: Request, state: GatewayState = Depends(get_state),
                       sessions: SessionManager = Depends(get_sessions)) -> Response:
    """One recorded chat completion of a session (see the module docstring)."""
    try:
        session = sessions.get(session_id)
    except SessionNotFound as exc:
        return _error(404, str(exc))
    try:
        raw = await request.body()
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        prepared, added = prepare_request(body)
    except ValueError as exc:
        return _error(400, f"bad chat completion request: {exc}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(sessions.call(session))
        started_at, started = time.time(), time.perf_counter()
        response = await forward(request, request_bytes(raw, body, prepared), session.id, state)
        forward_ms = (time.perf_counter() - started) * 1000.0
        if response.status_code != 200:
            return response  # no response: nothing to record
        if _is_event_stream(response):
            release = stack.pop_all().close  # the call stays in flight until the stream ends
            return StreamingResponse(
                _recorded_stream(response, sessions, session, body, started_at, started, release),
                status_code=200, headers=_response_headers(response), media_type="text/event-stream")
        try:
            payload = json.loads(await _content(response))
            event, blobs = call_event(session.ref, session.id, 0, body, payload, dict(response.headers),
                                      CallTiming(started_at, (time.perf_counter() - started) * 1000.0, forward_ms))
            recorded = await sessions.record(session, event, blobs)
        except ValueError as exc:
            return _error(502, f"the replica's response could not be recorded: {exc}")
        except RecordingFailed as exc:
            return _error(503, str(exc))
        return Response(json.dumps(strip_added(payload, added)), status_code=200, media_type="application/json",
                        headers={**_response_headers(response), "X-Session-Step": str(recorded.step)})


async def _recorded_stream(response: Response, sessions: SessionManager, session: Session,
                           body: dict[str, object], started_at: float, started: float,
                           release: Callable[[], None]) -> AsyncIterator[bytes]:
    """Relay a streamed response unchanged, collecting it, one chunk behind: the last chunk (vLLM's
    `data: [DONE]`) goes out only once the call is recorded, so a client that saw the end of its response finds
    it recorded, in order. A stream the client left, or that broke, is not recorded; a record that cannot be
    published is logged (the response is out but for its end)."""
    transcript = StreamTranscript()
    held: bytes | None = None
    try:
        async for data in _chunks(response):
            transcript.feed(data)
            if held is not None:
                yield held
            held = data
        transcript.feed(b"\n")
        total_ms = (time.perf_counter() - started) * 1000.0
        try:
            event, blobs = call_event(session.ref, session.id, 0, body, transcript.payload(),
                                      dict(response.headers), CallTiming(started_at, total_ms, total_ms))
            await sessions.record(session, event, blobs)
        except (ValueError, RecordingFailed) as exc:
            log.error("streamed call of session %s not recorded: %s", session.id, exc)
        if held is not None:
            yield held
    finally:
        release()
