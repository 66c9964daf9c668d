"""The env pod's log of executed actions (`GET /execute_log`), on a real env (Xvfb desktop)."""

from __future__ import annotations

import time

import httpx

from common.env_client import DesktopEnvClient


def _log(env: DesktopEnvClient, after: int = 0) -> dict:
    response = httpx.get(f"{env.base_url}/execute_log", params={"after": after}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_every_execute_is_logged_in_order_and_setup_commands_are_not(env: DesktopEnvClient) -> None:
    before = _log(env)["last"]
    assert _log(env)["entries"] == []  # a reset empties it
    started = time.time()
    for body in ({"command": ["python", "-c", "print('one')"]}, {"command": "exit 3", "shell": True}):
        assert httpx.post(f"{env.base_url}/execute", json=body, timeout=60).status_code == 200
    assert httpx.post(f"{env.base_url}/setup/execute", json={"command": "true", "shell": True},
                      timeout=60).status_code == 200
    log = _log(env, before)
    assert log["last"] == before + 2
    first, second = log["entries"]
    assert first["seq"] == before + 1 and first["command"] == ["python", "-c", "print('one')"]
    assert first["output"].strip() == "one" and first["returncode"] == 0 and first["status"] == "success"
    assert second["command"] == "exit 3" and second["shell"] and second["returncode"] == 3
    assert started <= first["started_at"] <= first["ended_at"] <= second["started_at"] <= second["ended_at"]
    assert _log(env, before + 1)["entries"] == [second]
    env.reset()
    after_reset = _log(env)
    assert after_reset["entries"] == [] and after_reset["last"] == before + 2  # numbering goes on


def test_a_bad_after_is_named(env: DesktopEnvClient) -> None:
    response = httpx.get(f"{env.base_url}/execute_log", params={"after": -1}, timeout=30)
    assert response.status_code in (400, 422) and "after" in response.text
