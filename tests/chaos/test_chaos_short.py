"""The short chaos run of the normal test suite: a few dozen rollouts on the local stack (real Redis with
AOF, real Xvfb envs, scripted policy replicas, moto S3 behind a TCP front) under one fault of each
runner/sink/replica/Redis/store kind; nothing may be lost, duplicated or leaked."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.harness import Chaos, ChaosConfig


def test_short_chaos_run_loses_nothing(tmp_path: Path) -> None:
    config = ChaosConfig(rollouts=8, envs=3, runners=3, replicas=2,
                         faults=["horse", "worker", "sink", "replica", "redis", "store"], fault_gap_s=3.0,
                         store_outage_s=5.0, deadline_s=240.0, work_dir=tmp_path / "stack")
    result = Chaos(config).run()
    print(result.table())
    assert result.ok, result.table()
