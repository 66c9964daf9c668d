"""Helpers of the gateway tests: requests, replica ids, scripted replicas (mocks of vLLM GPU servers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from tests.servers import serve_app

CHAT = "/v1/chat/completions"


def chat(text: str = "Rename the folder", **extra: object) -> dict:
    return {"model": "ui-tars-1.5-7b", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            **extra}


def rid(url: str) -> str:
    """Replica id (`host:port`) of a base URL."""
    return url.split("//", 1)[1]


@contextmanager
def policies(scripts_dir: Path, count: int, **extra: object) -> Iterator[list[str]]:
    """`count` scripted replicas (mocks of vLLM GPU servers) with `extra` settings; yields their URLs."""
    with ExitStack() as stack:
        yield [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(
            scripts_dir=scripts_dir, **extra)))) for _ in range(count)]


def settings_for(urls: list[str], **extra: object) -> GatewaySettings:
    return GatewaySettings(replicas=",".join(urls), **{"health_interval_s": 0.1, **extra})


def states(gw: str) -> dict[str, dict]:
    return {r["id"]: r for r in httpx.get(f"{gw}/admin/replicas", timeout=5).json()["replicas"]}


def plain_chat(text: str = "Rename the folder") -> dict:
    """A chat request with text-only content (model `policy`), as the runner's and reload tests send."""
    return {"model": "policy", "messages": [{"role": "user", "content": text}]}


def write_long_script(directory: Path) -> Path:
    """A scripts dir with one task of 50 replies (more than any test's calls); returns `directory`."""
    (directory / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0"] * 50}))
    return directory
