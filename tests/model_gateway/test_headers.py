"""Header hygiene of the relay (`services/model_gateway/headers.py`): the functions, then the gateway between a real
client and a small replica app over real HTTP on loopback (the replica records every request's raw headers and
answers with hop-by-hop headers and two `Set-Cookie`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from services.model_gateway.headers import end_to_end, relayed_response_headers, upstream_request_headers
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from tests.servers import serve_app

CHAT = "/v1/chat/completions"
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


def test_hop_by_hop_and_connection_named_headers_are_dropped_and_repeats_kept() -> None:
    headers = [("Connection", "keep-alive, X-Hop"), ("connection", "x-other"), ("Keep-Alive", "timeout=5"),
               ("Proxy-Authorization", "Basic YTpi"), ("Proxy-Connection", "keep-alive"), ("TE", "trailers"),
               ("Trailer", "X-Sum"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("X-Hop", "1"),
               ("X-Other", "2"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("X-Kept", "3")]
    assert end_to_end(headers) == [("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("X-Kept", "3")]
    assert end_to_end(headers, drop={"x-kept"}) == [("Set-Cookie", "a=1"), ("set-cookie", "b=2")]


def test_request_and_response_headers_of_the_two_hops() -> None:
    client = [("host", "gw:8000"), ("authorization", "Bearer client-key"), ("content-length", "10"),
              ("expect", "100-continue"), ("accept-encoding", "gzip"), ("content-type", "application/json"),
              ("x-episode-id", "e")]
    assert upstream_request_headers(client) == [("content-type", "application/json"), ("x-episode-id", "e"),
                                                ("accept-encoding", "identity")]
    assert upstream_request_headers(client, "10")[-1] == ("content-length", "10")
    upstream = [("date", "x"), ("server", "uvicorn"), ("content-length", "2"), ("x-replica", "forged"),
                ("x-model-version", "v1"), ("content-encoding", "gzip")]
    assert relayed_response_headers(upstream, "r:1", "v1") == [("content-length", "2"), ("content-encoding", "gzip"),
                                                               ("x-replica", "r:1"), ("x-model-version", "v1")]


class RecordingReplica:
    """A replica app (a mock of a vLLM server: no model here) that records the raw headers of every completion
    request and answers with hop-by-hop headers, headers its `Connection:` names, and two `Set-Cookie`."""

    def __init__(self) -> None:
        self.seen: list[list[tuple[str, str]]] = []
        self.app = Starlette(routes=[Route(CHAT, self.chat, methods=["POST"]),
                                     Route("/health", lambda _: Response(), methods=["GET"])])

    async def chat(self, request: Request) -> Response:
        await request.body()
        self.seen.append([(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw])
        response = Response(b'{"choices": []}', media_type="application/json")
        response.raw_headers += [(b"connection", b"keep-alive, x-replica-hop"), (b"x-replica-hop", b"secret"),
                                 (b"keep-alive", b"timeout=5"), (b"proxy-authenticate", b"Basic"),
                                 (b"trailer", b"x-sum"), (b"upgrade", b"h2c"),
                                 (b"set-cookie", b"a=1; Path=/"), (b"set-cookie", b"b=2; Path=/")]
        return response

    def names(self, index: int) -> dict[str, list[str]]:
        """Header name -> values of the `index`th request the replica saw."""
        out: dict[str, list[str]] = {}
        for name, value in self.seen[index]:
            out.setdefault(name.lower(), []).append(value)
        return out


def client_headers() -> dict[str, str]:
    return {"Authorization": "Bearer client-key", "Connection": "keep-alive, X-Client-Hop", "X-Client-Hop": "1",
            "Keep-Alive": "timeout=9", "Proxy-Authorization": "Basic YTpi", "TE": "trailers", "X-Kept": "yes"}


def test_hop_by_hop_headers_dropped_both_ways_client_key_never_forwarded_cookies_kept_not_stored() -> None:
    replica = RecordingReplica()
    with serve_app(replica.app) as url:
        settings = GatewaySettings(replicas=url, api_keys="client-key", replica_api_key="replica-key",
                                   health_interval_s=60)
        with serve_app(create_gateway(settings)) as gw, httpx.Client(base_url=gw, timeout=10) as client:
            first = client.post(CHAT, content=BODY, headers=client_headers())
            assert first.status_code == 200 and first.json() == {"choices": []}
            assert first.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/"]  # both kept, in order
            for hop in ("x-replica-hop", "keep-alive", "proxy-authenticate", "trailer", "upgrade"):
                assert hop not in first.headers, hop
            assert first.headers.get("connection", "keep-alive") == "keep-alive"  # the gateway's own, if any
            seen = replica.names(0)
            assert seen["authorization"] == ["Bearer replica-key"]  # the gateway's credential, not the client's
            for hop in ("x-client-hop", "keep-alive", "proxy-authorization", "te"):
                assert hop not in seen, hop
            assert seen["x-kept"] == ["yes"] and seen["accept-encoding"] == ["identity"]

            def chunked() -> Iterator[bytes]:
                yield BODY[:10]
                yield BODY[10:]

            second = httpx.post(f"{gw}{CHAT}", content=chunked(), headers={"Authorization": "Bearer client-key"},
                                timeout=10)  # a client of its own: no cookie jar carried over
            assert second.status_code == 200
            seen = replica.names(1)
            assert "cookie" not in seen  # the replica's Set-Cookie was relayed, never stored by the gateway
            assert "transfer-encoding" not in seen and seen["content-length"] == [str(len(BODY))]
    without_key = RecordingReplica()
    with serve_app(without_key.app) as url, serve_app(create_gateway(GatewaySettings(replicas=url))) as gw:
        assert httpx.post(f"{gw}{CHAT}", content=BODY, headers=client_headers(), timeout=10).status_code == 200
        assert "authorization" not in without_key.names(0)
