"""Run every benchmark of bench/ and print their tables (`make bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import (  # noqa: E402
    blob_verify,
    demo,
    env_pod,
    gateway_overhead,
    pipeline,
    runner_concurrency,
    runner_http,
    settle_and_typing,
    sink,
)

if __name__ == "__main__":
    print("== gateway overhead (loopback, scripted replica with no model latency)")
    gateway_overhead.main()
    print("\n== typing through the clipboard and waiting for the screen (real Xvfb desktop)")
    settle_and_typing.main()
    print("\n== env pod (action, screenshot, reset; one local env)")
    env_pod.main()
    print("\n== storage sink (raw write loop vs sink into the same local store; fills 0 / 10k / 100k objects)")
    sink.main([])
    print("\n== the sink's verified blob copy vs a store-side copy (local directory)")
    blob_verify.main([])
    print("\n== the runner's HTTP per step: libcurl (its client) vs urllib3 and httpx, same requests")
    runner_http.main([])
    print("\n== pipeline ceiling (null envs, zero-latency policy; 1, 2 and 4 runners per env)")
    pipeline.main([])
    print("\n== rollouts at once in one inline runner worker (RUNNER_CONCURRENCY 1, 2, 4, 8): steps/s and its RSS")
    runner_concurrency.main([])
    print("\n== make demo end to end: issue 13's commit vs this checkout on the same tasks")
    demo.main([])
