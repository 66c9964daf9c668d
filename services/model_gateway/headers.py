"""Header hygiene of the gateway's relay, both ways (RFC 9110 section 7.6.1, RFC 9112 section 9.6).

- Hop-by-hop headers are the connection's, not the message's: `Connection`, `Keep-Alive`, `TE`, `Trailer`,
  `Transfer-Encoding`, `Upgrade`, every `Proxy-*` (`Proxy-Authorization`, `Proxy-Authenticate`, the
  non-standard `Proxy-Connection`), and every header the message's own `Connection:` names. Dropped both ways;
  the gateway's server and client frame each hop themselves.
- Request: the client's `Authorization` (its key for the gateway, `GATEWAY_API_KEYS`) never reaches a replica;
  the gateway's client sends its own replica credential (`GATEWAY_REPLICA_API_KEY`, set on the shared client).
  `Host` and `Content-Length` are the upstream hop's (set by httpx), `Expect` was handled by the gateway's own
  server, and the response is asked uncompressed (`Accept-Encoding: identity`: bytes are relayed undecoded).
- Response: `Date` and `Server` are set by the gateway's server, `X-Replica` and `X-Model-Version` by the
  gateway. Everything else is kept, in order, repeated names included (two `Set-Cookie` stay two).

Headers are (name, value) pairs of `str` (latin-1, as ASGI and httpx decode them); names compared lower-cased.
"""

from __future__ import annotations

from collections.abc import Iterable

Pairs = list[tuple[str, str]]

HOP_BY_HOP = frozenset({"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"})
_REQUEST_OWN = frozenset({"host", "content-length", "expect", "authorization", "accept-encoding"})
_RESPONSE_OWN = frozenset({"date", "server", "x-replica", "x-model-version"})


def connection_named(headers: Iterable[tuple[str, str]]) -> set[str]:
    """Lower-cased header names listed by the message's `Connection` headers (comma-separated tokens)."""
    return {token.strip().lower() for name, value in headers if name.lower() == "connection"
            for token in value.split(",") if token.strip()}


def end_to_end(headers: Iterable[tuple[str, str]], drop: Iterable[str] = ()) -> Pairs:
    """`headers` without hop-by-hop ones, those named in `Connection:`, and the lower-cased names in `drop`;
    order and repeated names kept."""
    pairs = list(headers)
    gone = HOP_BY_HOP | connection_named(pairs) | set(drop)
    return [(name, value) for name, value in pairs
            if (lower := name.lower()) not in gone and not lower.startswith("proxy-")]


def upstream_request_headers(client_headers: Iterable[tuple[str, str]], content_length: str | None = None) -> Pairs:
    """Headers of the request sent to a replica for a client request with `client_headers`: end-to-end ones
    minus the client's credentials and the hop's own, plus `Accept-Encoding: identity` and, for a body relayed
    while it arrives, the `content_length` the client announced (None: httpx frames it)."""
    out = end_to_end(client_headers, _REQUEST_OWN)
    out.append(("accept-encoding", "identity"))
    if content_length is not None:
        out.append(("content-length", content_length))
    return out


def relayed_response_headers(upstream_headers: Iterable[tuple[str, str]], replica: str, version: str) -> Pairs:
    """Headers of the response relayed to the client: the replica's end-to-end ones (repeated names kept,
    `Content-Length` kept: the body is relayed byte for byte) plus `X-Replica` and `X-Model-Version`."""
    out = end_to_end(upstream_headers, _RESPONSE_OWN)
    out.append(("x-replica", replica))
    out.append(("x-model-version", version))
    return out


def encode_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """`headers` as ASGI raw headers: lower-cased names, latin-1 bytes."""
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
