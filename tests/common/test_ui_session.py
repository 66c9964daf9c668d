"""The dashboard's session cookie (common/ui_session.py): proves the token until it expires, never holds it."""

from __future__ import annotations

from common.ui_session import SESSION_TTL_S, cookie_ok, session_cookie

TOKEN = "Zq3v-8pW1rT6yKx2mN9bH4cJ7dLs0aFe"


def test_a_session_proves_the_token_until_it_expires_and_holds_no_token() -> None:
    cookie = session_cookie(TOKEN, now=1_000_000)
    assert TOKEN not in cookie and cookie.startswith(f"v1.{1_000_000 + SESSION_TTL_S}.")
    assert cookie_ok(cookie, TOKEN, now=1_000_000 + SESSION_TTL_S)
    assert not cookie_ok(cookie, TOKEN, now=1_000_001 + SESSION_TTL_S)  # expired
    assert cookie_ok(cookie, ["other-token-0123456789", TOKEN], now=1_000_000)  # any accepted token


def test_forged_malformed_and_raw_token_cookies_are_refused() -> None:
    cookie = session_cookie(TOKEN, now=1_000_000)
    version, expires, mac = cookie.split(".")
    later = f"{version}.{int(expires) + 10**6}.{mac}"  # extending the session breaks the MAC
    for bad in (None, "", TOKEN, later, session_cookie("not-the-token", now=1_000_000), f"v2.{expires}.{mac}",
                f"v1.x.{mac}", f"v1.{expires}.{mac[:-1]}"):
        assert not cookie_ok(bad, TOKEN, now=1_000_000), bad
    assert not cookie_ok(cookie, None, now=1_000_000)  # no token accepted: no session either (routes are open)
