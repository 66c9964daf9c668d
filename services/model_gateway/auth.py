"""Bearer-token checks: `GATEWAY_ADMIN_TOKEN` for `/admin/*`, `GATEWAY_API_KEYS` for the OpenAI routes.

Like vLLM's `--api-key`: `Authorization: Bearer <key>`; a missing or wrong key answers 401
`{"error": "Unauthorized"}`. Comparisons are constant-time (`common.auth.token_matches`). An empty setting leaves
the routes open.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import HTTPException, Request

from common.auth import token_matches


def bearer(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def token_ok(given: str | None, accepted: Sequence[str]) -> bool:
    """True when `accepted` is empty or `given` equals one of them (each compared in constant time)."""
    if not accepted:
        return True
    if given is None:
        return False
    matched = False
    for key in accepted:  # no early exit: time does not reveal which key matched
        matched |= token_matches(given, key)
    return matched


def require(request: Request, accepted: Sequence[str]) -> None:
    """Raise HTTPException(401) unless the request's bearer token is accepted."""
    if not token_ok(bearer(request), accepted):
        raise HTTPException(401, "Unauthorized", headers={"WWW-Authenticate": "Bearer"})
