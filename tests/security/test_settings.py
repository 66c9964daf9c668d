"""Attack 5 of issue 34: weak settings that used to pass, against the real services.

Each service is started as a real process (`python -m services.<name>`, as compose and Kubernetes start it) outside
local mode with one weak secret: it exits at once naming the variable, never the value. A desktop env launcher
whose bubblewrap cannot start refuses to serve unless explicitly allowed to run unsandboxed. The dashboard's
cookie, over real HTTP, is HttpOnly and SameSite=Strict and holds no token; the raw token, a forged or an expired
session is refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from common.ui_session import session_cookie
from services.task_producer.api import create_app
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

ROOT = Path(__file__).resolve().parents[2]
STRONG = "Zq3v-8pW1rT6yKx2mN9bH4cJ7dLs0aFe"
SHORT = "k7Qz9-bW2xL4mPa"  # 15 characters, none well-known


def _start(module: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "REDIS_URL": "redis://127.0.0.1:1/0"}
    return subprocess.run([sys.executable, "-m", module], env={**base, **env}, cwd=ROOT, capture_output=True,
                          text=True, timeout=90)


@pytest.mark.parametrize(("module", "env", "variable"), [
    ("services.task_producer", {"PRODUCER_HOST": "0.0.0.0", "PRODUCER_API_TOKEN": SHORT}, "PRODUCER_API_TOKEN"),
    ("services.task_producer", {"PRODUCER_HOST": "0.0.0.0", "PRODUCER_API_TOKEN": "a" * 32}, "PRODUCER_API_TOKEN"),
    ("services.model_gateway", {"GATEWAY_HOST": "0.0.0.0", "GATEWAY_API_KEYS": f"{STRONG},x",
                                "GATEWAY_ADMIN_TOKEN": STRONG}, "GATEWAY_API_KEYS"),
    ("services.model_gateway", {"GATEWAY_HOST": "0.0.0.0", "GATEWAY_API_KEYS": STRONG, "GATEWAY_ADMIN_TOKEN": STRONG,
                                "GATEWAY_REPLICA_API_KEY": SHORT}, "GATEWAY_REPLICA_API_KEY"),
    ("services.model_gateway", {"GATEWAY_HOST": "0.0.0.0", "GATEWAY_API_KEYS": STRONG, "GATEWAY_ADMIN_TOKEN": STRONG,
                                "REDIS_URL": f"redis://:{SHORT}@redis:6379/0"}, "REDIS_URL password"),
    ("services.storage_sink", {"STORE_URL": "s3://trajectories", "S3_ENDPOINT": "minio:9000",
                               "S3_ACCESS_KEY": "cua-sink", "S3_SECRET_KEY": SHORT}, "S3_SECRET_KEY"),
    ("services.storage_sink", {"STORE_URL": "file:///tmp/x", "REDIS_URL": "redis://sink:changeme@redis:6379/0"},
     "REDIS_URL password"),
    ("services.runner", {"RUNNER_GATEWAY_URL": "http://gateway:8000", "RUNNER_GATEWAY_API_KEY": SHORT},
     "RUNNER_GATEWAY_API_KEY"),
])
def test_a_service_with_a_weak_secret_outside_local_mode_exits_naming_it(
        module: str, env: dict[str, str], variable: str) -> None:
    done = _start(module, env)
    assert done.returncode != 0, done.stderr[-2000:]
    assert variable in done.stderr and "outside local mode" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert SHORT not in done.stderr and "changeme" not in done.stderr and "a" * 32 not in done.stderr  # no value


def test_a_desktop_env_whose_sandbox_cannot_start_refuses_unless_allowed(tmp_path: Path) -> None:
    """`bwrap` missing from PATH (a host without bubblewrap): starting the envs fails with the reason, and no
    desktop is started; `CUA_ALLOW_UNSANDBOXED=1` is the explicit way to run them unsandboxed."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for entry in Path(directory).glob("*") if Path(directory).is_dir() else []:
            if entry.name != "bwrap" and not (tools / entry.name).exists() and os.access(entry, os.X_OK):
                (tools / entry.name).symlink_to(entry)
    assert shutil.which("bwrap", path=str(tools)) is None
    script = ("from pathlib import Path; from services.desktop_env.launcher import LocalEnvLauncher;"
              f"LocalEnvLauncher(count=1, root_dir=Path({str(tmp_path / 'envs')!r})).start()")
    env = {"PATH": str(tools), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "cannot be sandboxed here (missing commands: `bwrap` (bubblewrap))" in done.stderr, done.stderr[-2000:]
    assert "CUA_ALLOW_UNSANDBOXED=1" in done.stderr
    assert not (tmp_path / "envs" / "env-0" / "server.log").exists()  # no desktop was started


def test_the_dashboard_cookie_is_httponly_samesite_and_holds_no_token(redis_url: str, tmp_path: Path) -> None:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}", api_token=STRONG)
    with serve_app(create_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as browser:
        login = browser.post("/ui/login", data={"token": STRONG})
        assert login.status_code == 303, login.text
        header = login.headers["set-cookie"]
        assert "HttpOnly" in header and "SameSite=strict" in header and "Max-Age=" in header
        assert STRONG not in header and STRONG not in browser.cookies["cua_token"]
        assert browser.get("/ui").status_code == 200 and browser.get("/v1/queues").status_code == 200
        browser.cookies.clear()
        for stolen in (STRONG, session_cookie("not-the-token"), session_cookie(STRONG, now=time.time() - 13 * 3600),
                       "v1.9999999999." + "0" * 64):
            browser.cookies.set("cua_token", stolen)
            assert browser.get("/v1/queues").status_code == 401, stolen
            assert browser.get("/ui").status_code == 303, stolen
            browser.cookies.clear()
