"""Who may call the gateway's routes: one `common.auth.bearer_roles` dependency per router.

Roles: `api` (one of `GATEWAY_API_KEYS`: any OpenAI client), `runner` (one of `GATEWAY_RUNNER_KEYS`: a runner;
accepted wherever an API key is), `session` (a session's own token, `Session.token`: valid on that session's
base URL `/sessions/{id}/v1/*` only), and `common.auth.OPEN` (no key configured at all: local mode).

- `require_client` (the OpenAI routes `/v1/*`): `api` or `runner`; 401 `{"error": "Unauthorized"}` (vLLM's body).
- `require_manager` (`/v1/sessions`, `/v1/sessions/{id}`): `api` or `runner`; the routes then let only a
  runner (or an open gateway) open, read or close a session that names a rollout (`may_name_rollout`).
- `require_session` (`/sessions/{id}/v1/*`): that session's token or a runner key; an API key only for a session
  that names no rollout (else anyone with an API key could add calls to a runner's rollout).
"""

from __future__ import annotations

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from common.auth import OPEN, Roles, bearer_roles
from services.model_gateway.forwarding import RequestRejected
from services.model_gateway.session_store import SessionManager
from services.model_gateway.settings import GatewaySettings

API, RUNNER, SESSION = "api", "runner", "session"


def _settings(request: Request) -> GatewaySettings:
    settings: GatewaySettings = request.app.state.gateway.settings
    return settings


def _openai_401(_: HTTPException) -> RequestRejected:
    return RequestRejected(JSONResponse({"error": "Unauthorized"}, status_code=401,
                                        headers={"WWW-Authenticate": "Bearer"}))


def _keys(request: Request) -> Roles:
    settings = _settings(request)
    return {API: settings.api_key_list, RUNNER: settings.runner_key_list}


def _session_keys(request: Request) -> Roles:
    """The runners' keys, the session's token (an unknown or closed session has none) and, for a session that
    names no rollout, the API keys."""
    settings = _settings(request)
    if not settings.api_key_list and not settings.runner_key_list:
        return {}  # an open gateway (local mode): its sessions too
    sessions: SessionManager = request.app.state.sessions
    session = sessions.open.get(str(request.path_params.get("session_id", "")))
    roles: dict[str, list[str]] = {RUNNER: settings.runner_key_list,
                                   SESSION: [session.token] if session is not None else []}
    if session is None or not session.spec.names_rollout:
        roles[API] = settings.api_key_list
    return roles


def may_name_rollout(role: str) -> bool:
    """True when a caller of `role` may open, read or close a session naming a rollout (a runner, or an open
    gateway)."""
    return role in (RUNNER, OPEN)


#: `/v1/*` (proxy.py).
require_client = bearer_roles(_keys, "GATEWAY_API_KEYS or GATEWAY_RUNNER_KEYS", reject=_openai_401)
#: `/v1/sessions*` (sessions.py's `manage` router).
require_manager = bearer_roles(_keys, "GATEWAY_API_KEYS or GATEWAY_RUNNER_KEYS")
#: `/sessions/{id}/v1/*` (sessions.py's `session` router).
require_session = bearer_roles(_session_keys, "the session's token (SessionInfo.token) or GATEWAY_RUNNER_KEYS")
