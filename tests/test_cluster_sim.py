"""bench/cluster_sim.py counts what the code does: small scenarios whose counts can be reasoned out."""

from __future__ import annotations

from bench.cluster_sim import MEASURED_REDIS_USEC, Assumptions, Scenario, Simulation, report

FIXED = Assumptions(steps_min=4, steps_max=4, setup_s=1.0, evaluate_s=1.0, pod_start_s=5.0)


def run(**kwargs: object) -> Simulation:
    scenario = Scenario("t", **{"env_pods": 20, "runners": 5, "replicas": 2, "assumptions": FIXED, **kwargs})  # type: ignore[arg-type]
    sim = Simulation(scenario, seed=3, horizon_s=300.0, warmup_s=0.0)
    sim.run()
    return sim


def test_every_step_publishes_once_and_the_sink_acks_it() -> None:
    sim = run()
    t = sim.t
    assert t.steps > 100 and t.episodes > 20
    started = t.episodes + len([e for e in range(20) if e not in sim.free_envs])  # finished + in flight
    # EXISTS: one per step, one per job start; XADD: one per step plus episode start and end events
    assert t.commands["exists"] == t.steps + started
    assert t.commands["xadd"] == t.steps + started + t.episodes
    assert t.commands["xack"] == t.commands["xdel"] == t.steps + t.episodes


def test_the_scan_lease_tries_every_lower_env_and_the_free_list_one() -> None:
    scan, free = run(), run(lease="free-list")
    # five slots keep envs 0..4 busy: each scan tries SET NX on the envs below the free one
    assert scan.t.commands["set"] > 2 * scan.t.commands["hgetall"]
    assert free.t.commands["set"] == free.t.commands["spop"] and free.t.commands["hgetall"] == 0


def test_per_rollout_mode_creates_one_pod_per_episode_started() -> None:
    sim = run(mode="per-rollout")
    assert sim.t.pod_creations >= sim.t.episodes > 0
    assert run().t.pod_creations == 0


def test_a_saturated_model_queues_steps_and_caps_throughput() -> None:
    few = Assumptions(replica_slots=1, steps_min=4, steps_max=4, model_s=1.0)
    sim = Simulation(Scenario("t", env_pods=50, runners=40, replicas=2, assumptions=few), 1, 200.0, 50.0)
    tally = sim.run()
    result = report(sim.s, tally, 150.0, MEASURED_REDIS_USEC)
    assert result.values["steps/s"] <= 2.0 + 1e-9  # 2 replicas x 1 slot / 1 s
    assert result.saturation["model replicas"] > 0.99
    assert result.values["steps waiting for a replica"] > 10
