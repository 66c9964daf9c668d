"""The dashboard's session cookie: proof of the producer's token without the token in it (issue 34, point 5).

A browser cannot send `Authorization: Bearer`, so `/ui/login` takes `PRODUCER_API_TOKEN` in a form and sets a
cookie (HttpOnly, SameSite=Strict, Secure over https). The cookie never holds the token: it is
`v1.<expires>.<hex HMAC-SHA256(key=token, msg="cua-ui-session:v1:<expires>")>` (RFC 2104), `expires` in Unix
seconds. Whoever reads the cookie (a browser extension, a shared profile, a log) gets a dashboard session that
ends at `expires`, not the API token, and can neither recover the token nor extend the session; rotating the
token ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable

from common.auth import Token, accepted_tokens

#: How long a dashboard session lasts, seconds (12 h).
SESSION_TTL_S = 12 * 3600
_VERSION = "v1"


def _mac(token: str, expires: int) -> str:
    message = f"cua-ui-session:{_VERSION}:{expires}".encode()
    return hmac.new(token.encode("utf-8", "surrogateescape"), message, hashlib.sha256).hexdigest()


def session_cookie(token: str, now: float | None = None, ttl_s: int = SESSION_TTL_S) -> str:
    """The cookie value proving `token` until `now + ttl_s` (Unix seconds; `now` defaults to the clock)."""
    expires = int(now if now is not None else time.time()) + ttl_s
    return f"{_VERSION}.{expires}.{_mac(token, expires)}"


def cookie_ok(cookie: str | None, accepted: Token | Iterable[Token], now: float | None = None) -> bool:
    """True when `cookie` is a `session_cookie` of one of the `accepted` tokens that has not expired. Every
    accepted token is compared in constant time, with no early exit. False for a missing, malformed, expired or
    forged cookie, and when no token is accepted (the routes are then open anyway)."""
    version, _, rest = (cookie or "").partition(".")
    stamp, _, mac = rest.partition(".")
    if version != _VERSION or not stamp.isdigit() or len(mac) != 64:
        return False
    expires = int(stamp)
    if expires < (now if now is not None else time.time()):
        return False
    matched = False
    for token in accepted_tokens(accepted):
        matched |= hmac.compare_digest(_mac(token, expires).encode(), mac.encode())
    return matched
