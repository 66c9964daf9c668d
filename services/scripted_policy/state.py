"""Shared state of the scripted policy's routers (mock of a GPU model server), handed out with `Depends`.

`create_app` builds one `PolicyState` per app and keeps it on `app.state.policy`; every route asks for it
with `Depends(get_state)` instead of closing over locals of `create_app`.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry, Counter, Gauge

from common.vllm_protocol import ErrorInfo, ErrorResponse
from services.scripted_policy.scripts import Script, load_scripts
from services.scripted_policy.settings import ScriptedPolicySettings


@dataclass
class ModelState:
    """What the mock serves now: version, loaded LoRA adapters (name -> path), whether it sleeps."""

    version: str
    adapters: dict[str, str] = field(default_factory=dict)
    sleeping: bool = False
    reloads: int = 0


@dataclass
class PolicyState:
    """One replica's settings, scripts, served model, metrics and failure-injection state.

    `chat_requests` counts chat completions that passed validation (for `fail_first_n`); `rng` draws the
    `failure_rate` failures (seeded by `settings.seed`, so a run's failures repeat)."""

    settings: ScriptedPolicySettings
    scripts: list[Script]
    model: ModelState
    registry: CollectorRegistry
    requests_total: Counter
    in_flight: Gauge
    rng: random.Random
    failing_versions: frozenset[str]
    chat_requests: int = 0

    @classmethod
    def from_settings(cls, settings: ScriptedPolicySettings) -> PolicyState:
        """Load the scripts and make the replica's own metrics registry.

        Raises: ValueError when a script file under `settings.scripts_dir` is invalid."""
        registry = CollectorRegistry()
        failing = frozenset(v.strip() for v in settings.reload_fail_versions.split(",") if v.strip())
        return cls(
            settings=settings, scripts=load_scripts(settings.scripts_dir),
            model=ModelState(version=settings.model_version), registry=registry,
            requests_total=Counter("policy_requests_total", "Completion requests", ["endpoint", "status"],
                                   registry=registry),
            in_flight=Gauge("policy_in_flight", "Completion requests being served", registry=registry),
            rng=random.Random(settings.seed), failing_versions=failing)


def get_state(request: Request) -> PolicyState:
    """`Depends` provider: the app's `PolicyState`."""
    state: PolicyState = request.app.state.policy
    return state


def response_headers(raw: bytes, version: str) -> dict[str, str]:
    """Headers of every completion response: the served `X-Model-Version` and `X-Body-Sha256` (hex SHA-256
    of the raw request body, so tests can check that a proxy forwarded it byte-exact)."""
    return {"X-Model-Version": version, "X-Body-Sha256": hashlib.sha256(raw).hexdigest()}


def openai_error(message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """An OpenAI-style error response (`common.vllm_protocol.ErrorResponse`) with HTTP `status`; `type` is
    InternalServerError (5xx), NotFoundError (404) or BadRequestError (other 4xx), as vLLM names them."""
    kind = "InternalServerError" if status >= 500 else ("NotFoundError" if status == 404 else "BadRequestError")
    body = ErrorResponse(error=ErrorInfo(message=message, type=kind, code=status))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)
