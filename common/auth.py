"""Bearer-token auth of every HTTP service: the producer's `/v1` and `/ui` routes (`PRODUCER_API_TOKEN`), the
gateway's admin routes (`GATEWAY_ADMIN_TOKEN`), its OpenAI routes (`GATEWAY_API_KEYS`, `GATEWAY_RUNNER_KEYS`) and
its sessions (those keys, and each session's own token).

Each router has one dependency, made by `bearer_roles`: it answers which role (a name: "api", "runner",
"session"...) the request's token belongs to, from the roles the route accepts (read per request), so routes
that treat roles differently (only a runner may name a rollout) ask the dependency instead of checking by hand.

A request is let through when the service accepts no token (an empty setting: open; `warn_if_open` logs it at
start; outside local mode `common.secrets` refuses to start instead), or when it sends
`Authorization: Bearer <token>` (RFC 6750: scheme case-insensitive) with one of the accepted tokens, compared
in constant time over their UTF-8 bytes (`hmac.compare_digest`, every key compared: the reply time reveals
neither how much of a guess matched nor which key did). Anything else gets a 401 with `WWW-Authenticate:
Bearer`. Accepted tokens are `SecretStr` (never in a repr or a log) or plain strings.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

log = logging.getLogger(__name__)

#: An accepted token: a secret setting, a plain string, or None (not set).
Token = SecretStr | str | None


def reveal(token: Token) -> str:
    """The text of `token` ("" for None)."""
    if token is None:
        return ""
    return token.get_secret_value() if isinstance(token, SecretStr) else token


def accepted_tokens(tokens: Token | Iterable[Token]) -> list[str]:
    """The non-empty tokens of one token or of several, as text (an empty list: the routes are open)."""
    items = [tokens] if tokens is None or isinstance(tokens, (str, SecretStr)) else list(tokens)
    return [text for text in (reveal(t) for t in items) if text]


def token_matches(sent: str, expected: str) -> bool:
    """True iff `sent` equals `expected`, compared in constant time over their UTF-8 bytes
    (`hmac.compare_digest`; non-ASCII text is fine, a str compare would raise TypeError)."""
    return hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape"))


def parse_bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value (scheme in any case, surrounding blanks
    stripped), or None for a missing header, another scheme, or an empty token."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def bearer(request: Request) -> str | None:
    """The bearer token of a request's `Authorization` header, or None (`parse_bearer`)."""
    return parse_bearer(request.headers.get("authorization"))


def token_ok(sent: str | None, accepted: Token | Iterable[Token]) -> bool:
    """True when no token is accepted (open), or `sent` equals one of the accepted tokens. Every accepted token
    is compared in constant time, with no early exit."""
    keys = accepted_tokens(accepted)
    if not keys:
        return True
    if sent is None:
        return False
    matched = False
    for key in keys:  # no early exit: time does not reveal which key matched
        matched |= token_matches(sent, key)
    return matched


def check_token(sent: str | None, accepted: Token | Iterable[Token], setting: str) -> None:
    """Let the request through when `token_ok(sent, accepted)`.

    Raises: HTTPException(401) naming `setting` (the variable that holds the accepted tokens) when `sent` is
    missing or wrong."""
    if not token_ok(sent, accepted):
        raise unauthorized(sent, setting)


def bearer_auth(accepted: Token | Iterable[Token], setting: str) -> Callable[..., Awaitable[str]]:
    """`bearer_roles` with one fixed set of tokens: `Depends(bearer_auth(settings.api_token, "PRODUCER_API_TOKEN"))`.

    Raises (in the dependency): HTTPException(401) without a bearer token, or with a wrong one.
    """
    return bearer_roles(lambda _: {"token": accepted}, setting)


#: The role `bearer_roles` answers when no role accepts any token (every route open: local mode).
OPEN = "open"
#: Roles and their accepted tokens, e.g. `{"api": settings.api_key_list, "runner": settings.runner_key_list}`.
Roles = Mapping[str, Token | Iterable[Token]]


def matching_role(sent: str | None, roles: Roles) -> str | None:
    """The first role (in `roles` order) with a token equal to `sent`, else None; `OPEN` when no role accepts
    any token. Every token of every role is compared, in constant time, with no early exit."""
    keyed = [(role, key) for role, tokens in roles.items() for key in accepted_tokens(tokens)]
    if not keyed:
        return OPEN
    if sent is None:
        return None
    found: str | None = None
    for role, key in keyed:  # no early exit: time does not reveal which key matched
        if token_matches(sent, key) and found is None:
            found = role
    return found


def unauthorized(sent: str | None, setting: str) -> HTTPException:
    """The 401 of a request without a valid token (`check_token`'s)."""
    if sent is None:
        return HTTPException(401, f"missing bearer token: send 'Authorization: Bearer <token>' ({setting})",
                             headers={"WWW-Authenticate": "Bearer"})
    return HTTPException(401, f"invalid bearer token (it does not match {setting})",
                         headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def bearer_roles(roles_of: Callable[[Request], Roles], setting: str, *, cookie: str | None = None,
                 cookie_proves: Callable[[str | None, Token | Iterable[Token]], bool] | None = None,
                 reject: Callable[[HTTPException], Exception] | None = None) -> Callable[..., Awaitable[str]]:
    """A FastAPI dependency (one per router) answering the role of the request's token: `matching_role` of
    `Authorization: Bearer <token>` (else, with `cookie`, that cookie's value) against `roles_of(request)`
    (read per request: settings, or a session's own token). `OPEN` when no role accepts a token. With
    `cookie_proves(value, tokens)`, the cookie is not a token but a proof of one (the dashboard's signed session,
    `common.ui_session.cookie_ok`): its role is the first whose tokens it proves.

    Raises (in the dependency): HTTPException(401) naming `setting` without a token of any role, or
    `reject(that exception)` (e.g. the gateway's OpenAI-style `{"error": "Unauthorized"}` body).
    """
    scheme = HTTPBearer(auto_error=False, description=f"`Authorization: Bearer <{setting}>`")

    # async: FastAPI runs a sync dependency in its threadpool (a hop per request on the gateway's hot path).
    async def require_role(request: Request,
                           credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> str:
        roles = roles_of(request)
        sent = credentials.credentials if credentials else request.cookies.get(cookie) if cookie else None
        if credentials is None and cookie is not None and cookie_proves is not None:
            role = matching_role(None, roles) or next(
                (name for name, tokens in roles.items() if cookie_proves(sent, tokens)), None)
        else:
            role = matching_role(sent, roles)
        if role is None:
            denied = unauthorized(sent, setting)
            raise reject(denied) if reject is not None else denied
        return role

    return require_role


def warn_if_open(accepted: Token | Iterable[Token], setting: str, routes: str) -> bool:
    """Log a warning when no token is accepted (`routes` are then open to anyone who can reach the service);
    returns True when it warned."""
    if accepted_tokens(accepted):
        return False
    log.warning("%s is not set: %s accept requests without a token", setting, routes)
    return True
