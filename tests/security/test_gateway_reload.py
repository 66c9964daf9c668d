"""Attack 6 of issue 34: operator input taking the model tier down through `POST /admin/reload`.

Real gateway and scripted-policy replicas (the vLLM stand-in) over loopback HTTP. What schemathesis sent (a
version that cannot travel as a header, a source of random Unicode) is refused with a 422 before any replica
drains; a reload that would drain the last routable replica while another exists waits, then fails without
draining it; and readiness (`/healthz`) says not ready when no replica can serve.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import httpx

from common.polling import wait_until
from services.model_gateway.server import create_app as create_gateway
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.model_gateway.helpers import rid, settings_for, states, write_long_script
from tests.servers import serve_app

FUZZED = [
    ({"version": "@\u0093", "source": "/ckpt/v1"}, "cannot travel as an HTTP header"),
    ({"version": "v1\r\nX-Injected: 1", "source": "/ckpt/v1"}, "cannot travel as an HTTP header"),
    ({"version": "v\u00e9", "source": "/ckpt/v1"}, "cannot travel as an HTTP header"),
    ({"version": "v1", "source": "\u1234\U0001f600\u0645"}, "is not loadable"),
    ({"version": "v1", "source": "/ckpt/\x00v1"}, "U+0000"),
    ({"version": "v1", "source": " /ckpt/v1"}, "without outer blanks"),
    ({"version": "v1", "source": "/ckpt/v1", "method": "command"}, "GATEWAY_RELOAD_COMMAND"),
]


def _replica(stack: ExitStack, scripts: Path) -> str:
    """A scripted replica served until `stack` closes; its base URL."""
    return stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=scripts))))


def test_fuzzed_reloads_are_refused_before_any_replica_drains(tmp_path: Path) -> None:
    scripts = write_long_script(tmp_path)
    with ExitStack() as replicas:
        urls = [_replica(replicas, scripts), _replica(replicas, scripts)]
        gw = replicas.enter_context(serve_app(create_gateway(settings_for(urls))))
        wait_until(lambda: httpx.get(f"{gw}/healthz", timeout=5).json().get("routable") == 2, 10, "replicas")
        for body, reason in FUZZED:
            response = httpx.post(f"{gw}/admin/reload", json=body, timeout=10)
            assert response.status_code == 422, (body, response.text)
            assert reason in response.text, (body, response.text)
            assert not any(s["draining"] or s["reloading"] for s in states(gw).values())
        assert httpx.get(f"{gw}/admin/reload", timeout=5).json() == {"running": False, "reload": None}
        health = httpx.get(f"{gw}/healthz", timeout=5)
        assert health.status_code == 200 and health.json()["routable"] == 2


def test_a_reload_never_drains_the_last_routable_replica_and_readiness_follows(tmp_path: Path) -> None:
    scripts = write_long_script(tmp_path)
    with ExitStack() as first, ExitStack() as second:
        urls = [_replica(first, scripts), _replica(second, scripts)]
        gw = first.enter_context(serve_app(create_gateway(settings_for(urls, unhealthy_after=1))))
        wait_until(lambda: httpx.get(f"{gw}/healthz", timeout=5).json().get("routable") == 2, 10, "replicas")
        second.close()  # the second replica goes down: its breaker opens, the first is the only one routable
        wait_until(lambda: not states(gw)[rid(urls[1])]["healthy"], 10, "the second replica's breaker to open")
        started = httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1",
                                                         "drain_timeout_s": 1.0}, timeout=10)
        assert started.status_code == 202, started.text
        seen_draining = []

        def done() -> dict:
            seen_draining.append(states(gw)[rid(urls[0])]["draining"])
            view = httpx.get(f"{gw}/admin/reload", timeout=5).json()
            return view["reload"] if not view["running"] else {}

        result = wait_until(done, 20, "the reload to end", interval_s=0.02)
        assert result["state"] == "failed" and not any(seen_draining), result
        [progress] = [p for p in result["replicas"] if p["replica"] == rid(urls[0])]
        assert "draining this one would leave none routable; not drained" in progress["error"]
        health = httpx.get(f"{gw}/healthz", timeout=5)
        assert health.status_code == 200 and health.json()["routable"] == 1
        drained = httpx.post(f"{gw}/admin/replicas/{rid(urls[0])}/drain", timeout=5)  # the operator drains it
        assert drained.status_code == 200
        health = httpx.get(f"{gw}/healthz", timeout=5)
        assert health.status_code == 503, health.text
        assert health.json()["status"] == "unhealthy" and "0 of 2 replicas routable" in health.json()["error"]
