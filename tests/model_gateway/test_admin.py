"""Admin routes (`services/model_gateway/admin.py`) over scripted-policy replicas (mocks of vLLM GPU servers), real
HTTP on loopback."""

from __future__ import annotations

import json

import httpx

from services.model_gateway.server import create_app as create_gateway
from tests.model_gateway.helpers import CHAT, chat, rid, settings_for, states
from tests.servers import serve_app


def test_admin_add_remove_drain_and_models(replicas: list[str]) -> None:
    first, second = replicas
    with serve_app(create_gateway(settings_for([first]))) as gw, httpx.Client(base_url=gw, timeout=10) as c:
        assert c.get("/v1/models").json()["data"][0]["id"] == "ui-tars-1.5-7b"
        assert c.get("/v1/models").headers["X-Replica"] == rid(first)
        assert c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"}).headers["X-Replica"] == rid(first)
        added = c.post("/admin/replicas", json={"url": second})
        assert added.status_code == 201 and added.json()["id"] == rid(second)
        # schemathesis found these: a host with control or non-ASCII characters, a port that is not a number
        for bad in ("ftp://x", "https://\ud818\udeb2\x1a@:\xab\xd7]", "https://\x8f[a\x1a", "http://h:99999",
                    "http://h:port", "http://", "http://a b:1"):
            refused = c.post("/admin/replicas", content=json.dumps({"url": bad}),  # \u-escapes lone surrogates
                             headers={"content-type": "application/json"})
            assert refused.status_code == 422, (bad, refused.text)
            assert "replica URL" in refused.text
        assert set(states(gw)) == {rid(first), rid(second)}
        drained = c.post(f"/admin/replicas/{rid(first)}/drain")
        assert drained.json()["draining"] is True
        moved = c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"})
        assert moved.headers["X-Replica"] == rid(second) and moved.headers["X-Model-Version"] == "v1"
        assert c.post(f"/admin/replicas/{rid(first)}/drain", params={"undrain": "true"}).json()["draining"] is False
        assert c.delete(f"/admin/replicas/{rid(second)}").status_code == 200
        assert c.delete("/admin/replicas/nope:1").status_code == 404
        assert c.post("/admin/replicas/nope:1/drain").status_code == 404
        assert set(states(gw)) == {rid(first)}
        back = c.post(CHAT, json=chat(), headers={"X-Episode-Id": "e"})
        assert back.status_code == 200 and back.headers["X-Replica"] == rid(first)
        assert c.get("/healthz").json()["routable"] == 1
