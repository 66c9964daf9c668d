"""DNS names of service URLs expanded per address, with the system resolver."""

from __future__ import annotations

import pytest

from common.dns import expand_urls, resolve_ipv4


def test_the_system_resolver_expands_names_and_keeps_ips() -> None:
    assert resolve_ipv4("localhost", 5000) == ["127.0.0.1"]
    assert resolve_ipv4("no-such-host.invalid", 5000) == []
    assert expand_urls(["http://localhost:5000/", "http://10.0.0.1:5000", "http://no-such-host.invalid:1"]) == \
        (["http://127.0.0.1:5000", "http://10.0.0.1:5000"], ["no-such-host.invalid"])
    assert expand_urls(["http://localhost/v1"]) == (["http://127.0.0.1/v1"], [])  # path kept, no port added
    with pytest.raises(ValueError, match="has no host"):
        expand_urls(["not a url"])
