"""A replica's engine load from its Prometheus `/metrics` (`services/model_gateway/engine_load.py`). vLLM's own
exposition is parsed in tests/vllm/test_gateway_vllm.py against real servers; here, the summing over data-parallel
engines, a server without vLLM's metrics (a real scripted replica behind a real gateway) and malformed text."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from common.polling import wait_until
from services.model_gateway.engine_load import parse_engine_load
from services.model_gateway.server import create_app as create_gateway
from tests.model_gateway.helpers import policies, settings_for, states, write_long_script
from tests.servers import serve_app

TWO_ENGINES = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 300.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 256.0
"""


def test_engines_are_summed_and_usage_averaged() -> None:
    load = parse_engine_load(TWO_ENGINES)
    assert load is not None
    assert (load.running, load.waiting, load.requests) == (3, 4, 7)
    assert load.kv_cache_usage == pytest.approx(0.375)
    assert (load.prefix_cache_queries, load.prefix_cache_hits) == (300.0, 256.0)


def test_not_vllm_or_not_prometheus() -> None:
    assert parse_engine_load("# TYPE other gauge\nother 1.0\n") is None
    with pytest.raises(ValueError):
        parse_engine_load("<html>an error page</html>")


def test_a_replica_without_vllm_metrics_has_no_engine_load(tmp_path: Path) -> None:
    with policies(write_long_script(tmp_path), 1) as urls, serve_app(create_gateway(settings_for(urls))) as gw:
        wait_until(lambda: httpx.get(f"{gw}/healthz", timeout=5).json()["routable"] == 1, 10, "replica routable")
        wait_until(lambda: next(iter(states(gw).values()))["model_version"] is not None, 10, "a health round")
        view = next(iter(states(gw).values()))
        assert view["engine_running"] is None and view["engine_waiting"] is None and view["kv_cache_usage"] is None
