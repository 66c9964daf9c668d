"""bench/cluster_sim.py counts what the code does: small scenarios whose counts can be reasoned out."""

from __future__ import annotations

from bench.cluster_sim import MEASURED, Assumptions, Scenario, Simulation, report

FIXED = Assumptions(steps_min=4, steps_max=4, setup_s=1.0, evaluate_s=1.0, pod_start_s=5.0)


def run(**kwargs: object) -> Simulation:
    scenario = Scenario("t", **{"env_pods": 20, "runners": 5, "replicas": 2, "assumptions": FIXED, **kwargs})  # type: ignore[arg-type]
    sim = Simulation(scenario, seed=3, horizon_s=300.0, warmup_s=0.0)
    sim.run()
    return sim


def test_every_step_publishes_once_and_the_sink_handles_every_entry() -> None:
    sim = run()
    t = sim.t
    assert t.steps > 100 and t.episodes > 20
    started = t.episodes + len([e for e in range(20) if e not in sim.free_envs])  # finished + in flight
    # is_cancelled: one per step, one per job start; entries: one per step plus episode start and end
    assert t.ops["is_cancelled"] == t.steps + started == t.ops["rq_job"] + t.steps
    assert t.ops["publish_png"] == t.steps and t.ops["publish_key"] == started + t.episodes
    assert t.ops["sink_png"] + t.ops["sink_key"] == t.entries == t.steps + started + t.episodes
    assert run(png_in_stream=False).t.ops["publish_png"] == 0


def test_the_scan_lease_tries_every_lower_env_and_the_free_set_leases_once() -> None:
    scan, free = run(lease="scan"), run()
    # five slots keep envs 0..4 busy: each scan tries SET NX on the envs below the free one
    assert scan.t.ops["scan_set_nx"] > 2 * scan.t.ops["scan_read"] and scan.t.ops["lease"] == 0
    assert free.t.ops["lease"] == free.t.ops["take_clean"] == free.t.ops["rq_job"] and free.t.ops["scan_read"] == 0
    tally = free.t
    result = report(free.s, tally, 300.0, MEASURED)
    lease_cpu = sum(tally.ops[name] * MEASURED[name]["cpu_usec"] for name in ("lease", "take_clean", "release", "renew",
                                                                              "reclaim")) / 300.0 / 1e6
    assert abs(result.values["  of which env lease (CPU s/s)"] - lease_cpu) < 1e-9


def test_waiting_for_an_env_and_the_reaper_are_counted() -> None:
    sim = run(env_pods=3)  # five slots for three envs: two always wait
    assert sim.t.ops["lease_none_free"] > 0 and sim.t.ops["lease_none_free"] == sim.t.ops["wait_release"]
    assert sim.t.env_waiting > 0
    assert 55 <= sim.t.ops["reclaim"] <= 61  # one reaper round every 5 s
    assert sim.t.ops["reaper_lock"] == 4 * sim.t.ops["reclaim"]  # the other four runners try its lock


def test_per_rollout_mode_creates_one_pod_per_episode_started() -> None:
    sim = run(mode="per-rollout")
    assert sim.t.pod_creations >= sim.t.episodes > 0
    assert run().t.pod_creations == 0


def test_a_saturated_model_queues_steps_and_caps_throughput() -> None:
    few = Assumptions(replica_slots=1, steps_min=4, steps_max=4, model_s=1.0)
    sim = Simulation(Scenario("t", env_pods=50, runners=40, replicas=2, assumptions=few), 1, 200.0, 50.0)
    tally = sim.run()
    result = report(sim.s, tally, 150.0, MEASURED)
    assert result.values["steps/s"] <= 2.0 + 1e-9  # 2 replicas x 1 slot / 1 s
    assert result.saturation["model replicas"] > 0.99
    assert result.values["steps waiting for a replica"] > 10
    assert result.first_to_saturate()[0] == "model replicas"
