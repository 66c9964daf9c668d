"""The one bearer-token module (common/auth.py): constant-time compare, `Authorization: Bearer` parsing, several
accepted keys, and the FastAPI dependency over real HTTP."""

from __future__ import annotations

import hmac
from collections.abc import Iterator

import httpx
import pytest
from fastapi import Depends, FastAPI
from pydantic import SecretStr

from common import auth
from common.auth import (
    OPEN,
    accepted_tokens,
    bearer_auth,
    bearer_roles,
    matching_role,
    parse_bearer,
    token_matches,
    token_ok,
    warn_if_open,
)
from tests.servers import serve_app


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER  abc ", "abc"), ("  Bearer abc", "abc"),
    ("Bearer a b", "a b"), (None, None), ("", None), ("Bearer", None), ("Bearer   ", None),
    ("Basic abc", None), ("Token abc", None), ("Bearerabc", None),
])
def test_parse_bearer(header: str | None, token: str | None) -> None:
    assert parse_bearer(header) == token


def test_compare_is_constant_time_over_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert token_ok("k1", ["k1", "k2", SecretStr("k3")])  # the first key matches: the others are still compared
    assert compared == [(b"k1", b"k1"), (b"k1", b"k2"), (b"k1", b"k3")]
    compared.clear()
    assert not token_ok("nope", "k1,k2".split(","))
    assert len(compared) == 2


def test_tokens_compare_as_bytes() -> None:
    assert token_matches("t\u00f6k\u00e9n", "t\u00f6k\u00e9n")
    assert not token_matches("t\u00f6ken", "token")
    assert not token_matches("toke", "token") and not token_matches("", "token")


def test_several_keys_secrets_and_open_routes() -> None:
    assert token_ok(None, []) and token_ok("anything", None) and token_ok(None, SecretStr(""))  # open
    assert not token_ok(None, "k1") and not token_ok(None, ["k1"])
    assert token_ok("k2", [SecretStr("k1"), "k2", None, ""]) and not token_ok("k3", [SecretStr("k1"), "k2"])
    assert accepted_tokens([SecretStr("a"), "", None, "b"]) == ["a", "b"]
    assert accepted_tokens(SecretStr("")) == [] and accepted_tokens("x") == ["x"]


def test_warn_if_open(caplog: pytest.LogCaptureFixture) -> None:
    assert warn_if_open(SecretStr(""), "SOME_TOKEN", "the routes")
    assert "SOME_TOKEN is not set" in caplog.text
    assert not warn_if_open([SecretStr("k")], "SOME_TOKEN", "the routes")


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    app = FastAPI()

    @app.get("/secret", dependencies=[Depends(bearer_auth([SecretStr("key-one"), "key-two"], "MY_KEYS"))])
    def secret() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/open", dependencies=[Depends(bearer_auth(SecretStr(""), "NO_KEY"))])
    def open_route() -> dict[str, bool]:
        return {"ok": True}

    roles = {"api": ["a1", "a2"], "runner": [SecretStr("r1")]}

    @app.get("/role")
    async def role(who: str = Depends(bearer_roles(lambda _: roles, "MY_ROLES", cookie="c"))) -> dict[str, str]:
        return {"role": who}

    with serve_app(app) as url:
        yield url


def test_dependency_over_http(guarded: str) -> None:
    with httpx.Client(base_url=guarded, timeout=10) as client:
        missing = client.get("/secret")
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert "missing bearer token" in missing.json()["detail"] and "MY_KEYS" in missing.json()["detail"]
        wrong = client.get("/secret", headers={"Authorization": "Bearer key-three"})
        assert wrong.status_code == 401 and "does not match MY_KEYS" in wrong.json()["detail"]
        assert "invalid_token" in wrong.headers["www-authenticate"]
        assert client.get("/secret", headers={"Authorization": "Basic key-one"}).status_code == 401
        assert client.get("/secret", headers={"Authorization": "Bearer key-one"}).json() == {"ok": True}
        assert client.get("/secret", headers={"Authorization": "bearer key-two"}).json() == {"ok": True}
        assert client.get("/open").json() == {"ok": True}
        schemes = client.get("/openapi.json").json()["components"]["securitySchemes"]
        assert schemes["HTTPBearer"]["scheme"] == "bearer"


def test_matching_role_names_the_role_of_the_token() -> None:
    roles = {"api": ["a1", "shared"], "runner": ["r1", "shared"]}
    assert [matching_role(t, roles) for t in ("a1", "r1", "shared", "x", None)] == ["api", "runner", "api", None, None]
    assert matching_role(None, {"api": [], "runner": [SecretStr("")]}) == OPEN  # no token anywhere: open


def test_role_dependency_over_http(guarded: str) -> None:
    with httpx.Client(base_url=guarded, timeout=10) as client:
        assert client.get("/role", headers={"Authorization": "Bearer r1"}).json() == {"role": "runner"}
        assert client.get("/role", cookies={"c": "a2"}).json() == {"role": "api"}  # the cookie when no header
        denied = client.get("/role", headers={"Authorization": "Bearer r2"})
        assert denied.status_code == 401 and "does not match MY_ROLES" in denied.json()["detail"]
