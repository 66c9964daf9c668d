"""A replica's load as its engine reports it: vLLM's Prometheus `GET /metrics`, read by the health loop.

vLLM (v1 engine, 0.32; names in vLLM's `vllm/v1/metrics/loggers.py`) exports per engine, labelled
`engine="<n>"` and `model_name`:
- `vllm:num_requests_running` (gauge): requests in the engine's running batch;
- `vllm:num_requests_waiting` (gauge): requests queued for it;
- `vllm:kv_cache_usage_perc` (gauge, 0..1): share of the KV cache blocks in use;
- `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total` (counters, tokens): prompt tokens looked
  up in the prefix cache and those found there (`--enable-prefix-caching`).
Samples of several engines (data parallel) are summed; the KV cache usage is their mean. A server without
these gauges (the scripted policy) has no engine load: the gateway then counts only its own in-flight requests.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

log = logging.getLogger(__name__)

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_HITS = "vllm:prefix_cache_hits_total"
_WANTED = (RUNNING, WAITING, KV_CACHE_USAGE, PREFIX_QUERIES, PREFIX_HITS)


@dataclass(frozen=True)
class EngineLoad:
    """One scrape of a vLLM replica: requests running and waiting in its engine(s), KV cache usage (0..1, None
    when not exported) and the prefix-cache counters (tokens since the server started, None when not exported)."""

    running: int
    waiting: int
    kv_cache_usage: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None

    @property
    def requests(self) -> int:
        """Requests in the engine: running plus waiting."""
        return self.running + self.waiting


def parse_engine_load(text: str) -> EngineLoad | None:
    """The `EngineLoad` in a Prometheus text exposition, or None when it has no `vllm:num_requests_running`
    sample (not a vLLM server). Raises: ValueError when the text is not the Prometheus format."""
    sums: dict[str, list[float]] = {name: [] for name in _WANTED}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in sums:
                sums[sample.name].append(float(sample.value))
    if not sums[RUNNING]:
        return None
    kv = sums[KV_CACHE_USAGE]
    return EngineLoad(
        running=round(sum(sums[RUNNING])), waiting=round(sum(sums[WAITING])),
        kv_cache_usage=sum(kv) / len(kv) if kv else None,
        prefix_cache_queries=sum(sums[PREFIX_QUERIES]) if sums[PREFIX_QUERIES] else None,
        prefix_cache_hits=sum(sums[PREFIX_HITS]) if sums[PREFIX_HITS] else None)


async def scrape_engine_load(client: httpx.AsyncClient, url: str, timeout_s: float) -> EngineLoad | None:
    """`GET {url}/metrics` parsed by `parse_engine_load`; None when the replica has no vLLM metrics or the scrape
    fails (a transport error, a non-200, an unparsable body: logged at debug level, never a health failure)."""
    try:
        response = await client.get(f"{url}/metrics", timeout=httpx.Timeout(timeout_s))
        if response.status_code != 200:
            return None
        return parse_engine_load(response.text)
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("metrics of %s not read: %r", url, exc)
        return None
