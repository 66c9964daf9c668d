"""Rolling reloads (`services/model_gateway/reload.py`, `reload_methods.py`) over scripted-policy replicas (mocks
of vLLM GPU servers), real HTTP on loopback."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import httpx
import pytest

from common.polling import wait_until
from services.model_gateway.server import create_app as create_gateway
from tests.model_gateway.helpers import CHAT, plain_chat, policies, rid, settings_for, write_long_script
from tests.servers import serve_app


@pytest.fixture()
def scripts_dir(tmp_path: Path) -> Path:
    return write_long_script(tmp_path)


def states(gw: str, headers: dict[str, str] | None = None) -> dict[str, dict]:
    return {r["id"]: r for r in httpx.get(f"{gw}/admin/replicas", headers=headers, timeout=5).json()["replicas"]}


def reload_done(gw: str, headers: dict[str, str] | None = None) -> dict:
    view = httpx.get(f"{gw}/admin/reload", headers=headers, timeout=5).json()
    return view["reload"] if not view["running"] and view["reload"] else {}


@pytest.mark.parametrize("method", ["vllm_lora", "vllm_sleep", "command"])
def test_rolling_reload_in_waves_under_load(scripts_dir: Path, method: str) -> None:
    command = (f"{sys.executable} -c \"import httpx, os; httpx.post(os.environ['REPLICA_URL'] + '/admin/reload', "
               "json={'model_version': os.environ['RELOAD_VERSION']}, timeout=30).raise_for_status()\"")
    with policies(scripts_dir, 3, reload_ms=300, latency_ms=20) as urls:
        settings = settings_for(urls, reload_method=method, reload_command=command)
        with serve_app(create_gateway(settings)) as gw:
            wait_until(lambda: all(s["model_version"] == "v0" for s in states(gw).values()), 10, "versions known")
            statuses: list[int] = []
            versions: list[str] = []
            drained_at_once: list[int] = []
            stop = threading.Event()

            def traffic(worker: int) -> None:
                with httpx.Client(base_url=gw, timeout=30) as c:
                    step = 0
                    while not stop.is_set():
                        r = c.post(CHAT, json=plain_chat(), headers={"X-Episode-Id": f"w{worker}-{step // 5}"})
                        statuses.append(r.status_code)
                        versions.append(r.headers["X-Model-Version"])
                        step += 1

            threads = [threading.Thread(target=traffic, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            try:
                started = httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1",
                                                                 "max_unavailable": 1}, timeout=10)
                assert started.status_code == 202, started.text
                again = httpx.post(f"{gw}/admin/reload", json={"version": "v2", "source": "/ckpt/v2"}, timeout=10)
                assert again.status_code == 409

                def finished() -> dict:
                    drained_at_once.append(sum(s["draining"] for s in states(gw).values()))
                    return reload_done(gw)

                result = wait_until(finished, 60, "the reload to finish", interval_s=0.02)
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=30)
            assert result["state"] == "succeeded", result
            assert [p["state"] for p in result["replicas"]] == ["done"] * 3
            assert [p["wave"] for p in result["replicas"]] == [0, 1, 2]
            assert max(drained_at_once) == 1  # max_unavailable
            assert all(s["model_version"] == "v1" and not s["draining"] for s in states(gw).values())
            assert statuses and set(statuses) == {200}, set(statuses)  # nothing failed or aborted
            assert {"v0", "v1"} == set(versions)


def test_request_for_the_new_version_waits_for_a_reloading_replica(scripts_dir: Path) -> None:
    # the reload lasts long enough that the request below surely starts while it is on, even on a loaded machine
    with policies(scripts_dir, 1, reload_ms=3000) as urls:
        with serve_app(create_gateway(settings_for(urls, version_wait_s=10))) as gw:
            wait_until(lambda: states(gw)[rid(urls[0])]["model_version"] == "v0", 10, "version known")
            assert httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"},
                              timeout=10).status_code == 202
            wait_until(lambda: states(gw)[rid(urls[0])]["reloading"], 10, "the reload to start", interval_s=0.01)
            waited = httpx.post(f"{gw}{CHAT}", json=plain_chat(), headers={"X-Policy-Version": "v1"}, timeout=15)
            assert waited.status_code == 200 and waited.headers["X-Model-Version"] == "v1"
            assert "gateway_version_waits_total 1.0" in httpx.get(f"{gw}/metrics").text
    with policies(scripts_dir, 1, reload_ms=3000) as urls:
        with serve_app(create_gateway(settings_for(urls, version_wait_s=0.2))) as gw:
            wait_until(lambda: states(gw)[rid(urls[0])]["model_version"] == "v0", 10, "version known")
            httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"}, timeout=10)
            wait_until(lambda: states(gw)[rid(urls[0])]["reloading"], 10, "the reload to start", interval_s=0.01)
            late = httpx.post(f"{gw}{CHAT}", json=plain_chat(), headers={"X-Policy-Version": "v1"}, timeout=15)
            assert late.status_code == 503  # the only replica is drained: nothing routable within the wait


def test_failed_reload_rolls_back_or_leaves_drained(scripts_dir: Path) -> None:
    with policies(scripts_dir, 3, reload_fail_versions="bad") as urls:
        with serve_app(create_gateway(settings_for(urls))) as gw:
            httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/ckpt/v1"}, timeout=10)
            assert wait_until(lambda: reload_done(gw), 30, "first reload")["state"] == "succeeded"
            httpx.post(f"{gw}/admin/reload", json={"version": "bad", "source": "/ckpt/bad"}, timeout=10)
            result = wait_until(lambda: reload_done(gw), 30, "failing reload")
            assert result["state"] == "failed" and rid(urls[0]) in result["error"]
            assert [p["state"] for p in result["replicas"]] == ["rolled_back", "skipped", "skipped"]
            assert "injected reload failure" in result["replicas"][0]["error"]
            assert all(s["model_version"] == "v1" and not s["draining"] for s in states(gw).values())
            ok = httpx.post(f"{gw}{CHAT}", json=plain_chat(), headers={"X-Policy-Version": "v1"}, timeout=10)
            assert ok.status_code == 200
    with policies(scripts_dir, 2, reload_fail_versions="bad") as urls:
        with serve_app(create_gateway(settings_for(urls))) as gw:
            httpx.post(f"{gw}/admin/reload", json={"version": "bad", "source": "/ckpt/bad"}, timeout=10)
            result = wait_until(lambda: reload_done(gw), 30, "failing reload")
            assert [p["state"] for p in result["replicas"]] == ["left_drained", "skipped"]
            first = states(gw)[rid(urls[0])]
            assert first["draining"] and first["model_version"] == "v0"  # never re-admitted on a wrong version
            answers = {httpx.post(f"{gw}{CHAT}", json=plain_chat(), headers={"X-Episode-Id": f"e{i}"},
                                  timeout=10).headers["X-Replica"] for i in range(5)}
            assert answers == {rid(urls[1])}
    with serve_app(create_gateway(settings_for([]))) as gw:
        assert httpx.post(f"{gw}/admin/reload", json={"version": "v1", "source": "/x"}, timeout=10).status_code == 422
        assert httpx.post(f"{gw}/admin/reload", json={"version": "v1"}, timeout=10).status_code == 422
