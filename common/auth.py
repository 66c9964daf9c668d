"""Bearer-token auth of every HTTP service: the producer's `/v1` and `/ui` routes (`PRODUCER_API_TOKEN`), the
gateway's admin routes (`GATEWAY_ADMIN_TOKEN`) and its OpenAI routes (`GATEWAY_API_KEYS`, several keys).

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
from collections.abc import Callable, Iterable

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
    if token_ok(sent, accepted):
        return
    if sent is None:
        raise HTTPException(401, f"missing bearer token: send 'Authorization: Bearer <token>' ({setting})",
                            headers={"WWW-Authenticate": "Bearer"})
    raise HTTPException(401, f"invalid bearer token (it does not match {setting})",
                        headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def bearer_auth(accepted: Token | Iterable[Token], setting: str) -> Callable[..., None]:
    """A FastAPI dependency checking `Authorization: Bearer <token>` against `accepted` (`check_token`); use as
    `dependencies=[Depends(bearer_auth(settings.api_token, "PRODUCER_API_TOKEN"))]`. The scheme appears in the
    OpenAPI document (`HTTPBearer`).

    Raises (in the dependency): HTTPException(401) without a bearer token, or with a wrong one.
    """
    scheme = HTTPBearer(auto_error=False, description=f"`Authorization: Bearer <{setting}>`")

    # `Depends` as a default, not in `Annotated`: `scheme` is local, and the annotations are strings.
    def require_token(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:
        check_token(credentials.credentials if credentials else None, accepted, setting)

    return require_token


def warn_if_open(accepted: Token | Iterable[Token], setting: str, routes: str) -> bool:
    """Log a warning when no token is accepted (`routes` are then open to anyone who can reach the service);
    returns True when it warned."""
    if accepted_tokens(accepted):
        return False
    log.warning("%s is not set: %s accept requests without a token", setting, routes)
    return True
