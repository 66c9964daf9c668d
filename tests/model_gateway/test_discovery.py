"""The gateway's replicas behind one DNS name: one replica per address, balanced and health-checked apart,
following DNS as replicas come and go. Real gateway and scripted-policy servers (mocks of vLLM GPU servers)
over HTTP on two loopback addresses that share a port, as compose replicas share a service port."""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack
from pathlib import Path

import httpx

from common.polling import free_port, wait_until
from common.service import setup_logging
from services.model_gateway.discovery import ReplicaDiscovery, expand
from services.model_gateway.replicas import ReplicaPool
from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Rename the folder"}]}


class Names:
    """A stand-in for compose's embedded DNS (no DNS server can be started and repointed here):
    name -> addresses, changed by the test as replicas come and go."""

    def __init__(self, **table: list[str]) -> None:
        self.table = table

    def __call__(self, host: str, port: int) -> list[str]:
        return sorted(self.table.get(host, []))


def test_names_expand_per_address_and_follow_dns() -> None:
    names = Names(policy=["10.0.0.2", "10.0.0.3"])
    assert expand(["http://policy:8001/", "http://10.0.0.9:8001", "http://gone:8001"], names) == \
        ["http://10.0.0.2:8001", "http://10.0.0.3:8001", "http://10.0.0.9:8001", "http://gone:8001"]
    pool = ReplicaPool(unhealthy_after=1)
    discovery = ReplicaDiscovery(pool, ["http://policy:8001", "http://late:8001"], names, version="v3")
    assert discovery.sync() == (["10.0.0.2:8001", "10.0.0.3:8001", "late:8001"], [])
    assert {r.model_version for r in pool.list_replicas()} == {"v3"}
    pool.add("http://10.0.0.7:9000")  # added through the admin API: never discovery's to remove
    names.table = {"policy": ["10.0.0.3", "10.0.0.4"], "late": ["10.0.0.5"]}
    assert discovery.sync() == (["10.0.0.4:8001", "10.0.0.5:8001"], ["10.0.0.2:8001", "late:8001"])
    assert sorted(pool.replicas) == ["10.0.0.3:8001", "10.0.0.4:8001", "10.0.0.5:8001", "10.0.0.7:9000"]
    assert discovery.sync() == ([], [])


def test_replicas_behind_one_name_are_balanced_and_health_checked_apart(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0"]}))
    port = free_port()
    names = Names(policy=["127.0.0.1", "127.0.0.2"])
    with ExitStack() as stack:
        for host in ("127.0.0.1", "127.0.0.2"):  # two replicas on one port, as compose's share a service port
            stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=tmp_path)), port, host))
        gateway = create_gateway(GatewaySettings(replicas=f"http://policy:{port}", health_interval_s=0.1,
                                                 unhealthy_after=1), names)
        gw = stack.enter_context(serve_app(gateway))
        client = stack.enter_context(httpx.Client(base_url=gw, timeout=10))

        def states() -> dict[str, dict]:
            return {r["id"]: r for r in client.get("/admin/replicas").json()["replicas"]}

        assert sorted(states()) == [f"127.0.0.1:{port}", f"127.0.0.2:{port}"]
        served = {client.post("/v1/chat/completions", json=CHAT, headers={"X-Episode-Id": f"e{i}"})
                  .headers["X-Replica"] for i in range(8)}
        assert served == set(states())  # new episodes spread over both addresses

        names.table["policy"] = ["127.0.0.1", "127.0.0.3"]  # .2 left, .3 (nothing listening) joined
        wait_until(lambda: sorted(states()) == [f"127.0.0.1:{port}", f"127.0.0.3:{port}"], 10,
                   "the gateway to follow DNS")
        wait_until(lambda: not states()[f"127.0.0.3:{port}"]["healthy"], 10, "the dead address's breaker to open")
        assert states()[f"127.0.0.1:{port}"]["healthy"]  # checked apart: the live one stays routable
        for i in range(4):
            reply = client.post("/v1/chat/completions", json=CHAT, headers={"X-Episode-Id": f"f{i}"})
            assert reply.status_code == 200 and reply.headers["X-Replica"] == f"127.0.0.1:{port}"


def test_health_probes_are_not_logged_at_info() -> None:
    httpx_log = logging.getLogger("httpx")  # one INFO line per request, every health probe included
    before = httpx_log.level
    try:
        setup_logging("INFO")
        assert httpx_log.level == logging.WARNING
        setup_logging("debug")
        assert httpx_log.level == logging.NOTSET  # DEBUG shows them
    finally:
        httpx_log.setLevel(before)
