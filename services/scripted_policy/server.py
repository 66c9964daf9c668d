"""HTTP app of the scripted policy, shaped like the vLLM OpenAI-compatible server API.

MOCK of a GPU model server (see the package docstring): replies come from scripts, not a model.
Routers (each takes the replica's `PolicyState` through `Depends(get_state)`, `state.py`):
- `completions.py`: `POST /v1/chat/completions` (non-streaming JSON, or SSE chunks ending with
  `data: [DONE]`, `streaming.py`), with token fields exactly as vLLM gives them (`common.vllm_protocol`):
  `logprobs` / `top_logprobs` fill `choices[0].logprobs.content`, `return_tokens_as_token_ids` turns tokens
  into `token_id:<id>`, `return_token_ids` adds `prompt_token_ids` and `choices[0].token_ids`. Fake values:
  `tokens.py`. Also `POST /v1/completions` (minimal), `GET /v1/models` (base model plus loaded LoRA
  adapters), `GET /health` (200, empty body, like vLLM; plus `X-Model-Version`).
- `weights.py`: weight reloads (vLLM's LoRA and sleep-mode endpoints).
- `/healthz`, `/metrics` (Prometheus, per-app registry).
Every completion response carries `X-Model-Version` and `X-Body-Sha256` (hex SHA-256 of the raw request body
bytes), so tests can check that a proxy forwarded the body byte-exact.
"""

from __future__ import annotations

from fastapi import FastAPI

from common.service import add_health_and_metrics
from services.scripted_policy import completions, weights
from services.scripted_policy.settings import ScriptedPolicySettings
from services.scripted_policy.state import PolicyState


def create_app(settings: ScriptedPolicySettings | None = None) -> FastAPI:
    """Build the mock vLLM app from `settings` (defaults: env vars `POLICY_*`).

    Raises: ValueError when a script file under `settings.scripts_dir` is invalid.
    """
    state = PolicyState.from_settings(settings or ScriptedPolicySettings())
    app = FastAPI(title="cua-rollout scripted policy (mock of a GPU model server)")
    app.state.policy = state  # handed to the routers by `state.get_state`
    add_health_and_metrics(app, check=lambda: {"scripts": len(state.scripts), "model_version": state.model.version},
                           registry=state.registry)
    app.include_router(completions.router)
    app.include_router(weights.router)
    return app
