"""schemathesis on the producer's and the gateway's OpenAPI: every operation gets schema-valid and
schema-violating requests (schemathesis's positive and negative generation modes) over real HTTP on
loopback (real redis-server for the producer, real scripted-policy replicas behind the gateway), and
not one answer may be a 5xx. Bounded: `EXAMPLES` cases per operation and mode (a few seconds each).

Every 5xx is collected with the request that caused it (as a curl command), so one run lists them all.
Cases are derandomized (the same ones every run) so `make test` is reproducible; `make fuzz` sets
`CUA_FUZZ_RANDOM=1` to explore new cases on each run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from services.model_gateway.server import create_app as create_gateway
from services.model_gateway.settings import GatewaySettings
from services.scripted_policy.server import create_app as create_policy
from services.scripted_policy.settings import ScriptedPolicySettings
from services.task_producer.api import create_app as create_producer
from services.task_producer.settings import ProducerSettings
from tests.servers import serve_app

EXAMPLES = 25
#: New random cases on every run (`make fuzz`) instead of the same derandomized ones (`make test`).
RANDOM = os.environ.get("CUA_FUZZ_RANDOM") == "1"
TOKEN = "schemathesis-token"


def server_errors(base_url: str, headers: dict[str, str], last: tuple[str, ...] = ()) -> list[str]:
    """Run every operation of `base_url`'s OpenAPI with `EXAMPLES` positive and `EXAMPLES` negative
    cases; returns one line per 5xx answer (status, operation, curl command). Operations whose path
    starts with one of `last` run after the others (they change what the others see)."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    operations.sort(key=lambda op: op.path.startswith(last) if last else False)
    assert operations, "the OpenAPI document lists no operation"
    failures: list[str] = []
    calls: dict[str, int] = {}
    with requests.Session() as session:
        for operation in operations:
            strategy = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                                 operation.as_strategy(GenerationMode.NEGATIVE))

            @settings(max_examples=2 * EXAMPLES, deadline=None, database=None, derandomize=not RANDOM,
                      suppress_health_check=list(HealthCheck))
            @given(case=strategy)
            def run(case: Any) -> None:
                op = case.operation
                calls[op.label] = calls.get(op.label, 0) + 1
                response = case.call(base_url=base_url, session=session, headers=headers, timeout=30)
                if response.status_code >= 500:
                    failures.append(f"{response.status_code} {op.label}: "
                                    f"{case.as_curl_command()} -> {response.text[:300]}")

            run()
    assert set(calls) == {op.label for op in operations}, f"operations never called: {calls}"
    return failures


@pytest.fixture()
def producer_url(redis_url: str, tmp_path: Path) -> Iterator[str]:
    settings = ProducerSettings(redis_url=redis_url, store_url=f"file://{tmp_path}/store", api_token=TOKEN)
    with serve_app(create_producer(settings)) as url:
        yield url


@pytest.fixture()
def gateway_url(tmp_path: Path, redis_url: str) -> Iterator[str]:
    (tmp_path / "a.json").write_text(json.dumps({"instruction": "Rename the folder", "replies": ["R0", "R1"]}))
    with ExitStack() as stack:
        replicas = [stack.enter_context(serve_app(create_policy(ScriptedPolicySettings(scripts_dir=tmp_path))))
                    for _ in range(2)]
        gateway = create_gateway(GatewaySettings(replicas=",".join(replicas), health_interval_s=0.2,
                                                 redis_url=redis_url))  # sessions publish there
        yield stack.enter_context(serve_app(gateway))


def test_the_harness_reports_a_5xx() -> None:
    """The check can fail: a route that crashes on some inputs is caught, with the request named."""
    app = FastAPI()

    @app.get("/ratio")
    def ratio(n: int) -> dict[str, float]:
        return {"ratio": 1 / n}  # n = 0: ZeroDivisionError, a 500

    # A plain 500, with no traceback printed by the server thread: Python 3.11 parses source (`ast`) to
    # underline a traceback, and that racing Hypothesis' own `ast.parse` in this thread trips CPython's
    # "AST constructor recursion depth mismatch" SystemError (python/cpython#106905), seen once in CI.
    app.add_exception_handler(ZeroDivisionError, lambda _request, _exc: PlainTextResponse("crash", status_code=500))

    with serve_app(app) as url:
        failures = server_errors(url, {})
    assert failures and all(f.startswith("500 GET /ratio") for f in failures), failures


@pytest.mark.timeout(900)  # a few seconds per operation on an idle machine; generous for a loaded one
def test_producer_openapi_has_no_5xx(producer_url: str) -> None:
    failures = server_errors(producer_url, {"Authorization": f"Bearer {TOKEN}"})
    assert not failures, "\n".join(failures)


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
_CHAT_BODIES = st.one_of(
    st.binary(max_size=300),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"model": _JSON, "messages": _JSON}, optional={"stream": _JSON}).map(
        lambda v: json.dumps(v).encode()),
)


@pytest.mark.timeout(900)
def test_gateway_openapi_has_no_5xx(gateway_url: str) -> None:
    # The model routes take raw bodies (no body schema): random bytes and JSON are posted to them too.
    # A session's chat route (sessions.py) too: it parses the body to record the call.
    failures: list[str] = []
    with requests.Session() as session:
        opened = session.post(gateway_url + "/v1/sessions", timeout=30)
        assert opened.status_code == 201, opened.text
        session_chat = opened.json()["path"] + "/chat/completions"

        @settings(max_examples=3 * EXAMPLES, deadline=None, database=None, derandomize=not RANDOM,
                  suppress_health_check=list(HealthCheck))
        @given(path=st.sampled_from(["/v1/chat/completions", "/v1/completions", session_chat]), body=_CHAT_BODIES)
        def post_raw(path: str, body: bytes) -> None:
            response = session.post(gateway_url + path, data=body, timeout=30,
                                    headers={"content-type": "application/json"})
            if response.status_code >= 500:
                failures.append(f"{response.status_code} POST {path} {body[:200]!r} -> {response.text[:300]}")

        post_raw()
    # Admin routes last: an added or removed replica would change what the model routes answer.
    failures += server_errors(gateway_url, {"Authorization": f"Bearer {TOKEN}"}, last=("/admin",))
    assert not failures, "\n".join(failures)
