"""Bearer-token auth for HTTP services, as a FastAPI dependency (the producer's write routes, the
gateway's admin routes).

A request is let through when the service has no token configured (open; `warn_if_open` logs it at
start), or when it sends `Authorization: Bearer <token>` with exactly the configured token, compared
in constant time (`hmac.compare_digest`, so the reply time does not leak how much of a guess matched).
Anything else gets a 401 with `WWW-Authenticate: Bearer` and a `detail` naming the problem and the
setting that holds the token. The scheme appears in the OpenAPI document (`HTTPBearer`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable

from fastapi import Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

log = logging.getLogger(__name__)


def token_matches(sent: str, expected: str) -> bool:
    """True iff `sent` equals `expected`, compared in constant time over their UTF-8 bytes
    (`hmac.compare_digest`; non-ASCII text is fine, a str compare would raise TypeError)."""
    return hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape"))


def check_token(sent: str | None, token: str | None, setting: str) -> None:
    """Let the request through when `token` is empty or `sent` equals it (constant time).

    Raises: HTTPException(401) naming `setting` when `sent` is missing or wrong."""
    if not token:
        return
    if sent is None:
        raise HTTPException(401, f"missing bearer token: send 'Authorization: Bearer <token>' ({setting})",
                            headers={"WWW-Authenticate": "Bearer"})
    if not token_matches(sent, token):
        raise HTTPException(401, f"invalid bearer token (it does not match {setting})",
                            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def bearer_auth(token: str | None, setting: str) -> Callable[..., None]:
    """A FastAPI dependency checking `Authorization: Bearer <token>` (`check_token`); use as
    `dependencies=[Depends(bearer_auth(settings.api_token, "PRODUCER_API_TOKEN"))]`.

    `token`: the expected token; empty or None lets every request through. `setting`: the name of the
    setting that holds it, quoted in the 401's `detail`.
    Raises (in the dependency): HTTPException(401) without a bearer token, or with a wrong one.
    """
    scheme = HTTPBearer(auto_error=False, description=f"`Authorization: Bearer <{setting}>`")

    # `Depends` as a default, not in `Annotated`: `scheme` is local, and the annotations are strings.
    def require_token(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:
        check_token(credentials.credentials if credentials else None, token, setting)

    return require_token


def warn_if_open(token: str | None, setting: str, routes: str) -> bool:
    """Log a warning when `token` is empty (`routes` are then open to anyone who can reach the
    service); returns True when it warned."""
    if token:
        return False
    log.warning("%s is not set: %s accept requests without a token", setting, routes)
    return True
