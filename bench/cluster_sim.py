"""Discrete-event simulation of cua-rollout at cluster scale: 10,000 env pods, 1,000 runners, 64
model replicas (issue 12). Pure Python, no cluster: `python bench/cluster_sim.py` (~10-60 s).

Every rollout slot (a runner's RQ worker) loops: take a job (RQ) -> lease an env (the Redis env
pool's algorithm as written in `common/envpool.py`: SMEMBERS + HGETALL of the whole registry, then
SET NX on each env in id order until one is free) -> [per-rollout mode: create the pod, wait for it]
-> task setup -> steps -> evaluate -> reset (warm pool) or delete the pod -> release. A step is:
screenshot, the model call (queued at its sticky replica, `replica_slots` served at once), the
action, the screen-settle wait, then `is_cancelled` + `publish` (EXISTS, XLEN, XADD of the step
entry with its PNG). The sink consumes each entry (XREADGROUP/XAUTOCLAIM per batch of 32, XACK +
XDEL per entry, 2 S3 PUTs).

Inputs: step timings measured in bench/README.md (env pod, settle, gateway figures); Redis server
CPU per command measured by bench/redis_costs.py on a real redis-server (`usec_per_call` of INFO
commandstats; `--measure` re-measures, else the figures below are used); the rest are stated
assumptions (`Assumptions`). Outputs, per scenario side by side: Redis commands per step and per
second, Redis main-thread utilization, stream bytes/s in and out, pod creations/s, model, env and
sink utilization, and which part saturates first.
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Redis server CPU per call (microseconds), bench/redis_costs.py on 2026-11-23, the shared 2-core
#: machine (load average ~20 during the run, so absolute values are pessimistic): 10,000 registered
#: envs, 300 KiB step entries (308,413 bytes with the JSON), batch 32.
MEASURED_REDIS_USEC: dict[str, float] = {
    "exists": 3.15, "xlen": 2.70, "xadd": 43.73, "xack": 3.11, "xdel": 33.36, "xreadgroup": 14639.91,
    "xautoclaim": 22.91, "set": 4.41, "smembers": 9.75, "hgetall": 21492.85, "evalsha": 47.54,
    "hset": 5.0, "incr": 3.0, "spop": 5.0, "sadd": 5.0, "rq_usec_per_job": 241.26, "rq_commands_per_job": 60.22,
    "step_entry_bytes": 308413.0, "png_kb": 300.0, "hgetall_fields": 10000.0,
}


@dataclass(frozen=True)
class Assumptions:
    """Inputs not measured here (no GPU, no cluster), each with its source.

    Times in seconds, sizes in KiB.
    """

    model_s: float = 1.0  # one UI-TARS-7B step (bench/README.md: "a real UI-TARS-7B step (~1 s)")
    replica_slots: int = 16  # steps a vLLM replica serves at once at ~model_s (continuous batching)
    png_kb: float = 300.0  # a 1920x1080 app screenshot, PNG (a bare desktop is far smaller)
    setup_s: float = 3.0  # task setup (files, app launch) before step 0
    evaluate_s: float = 2.0  # getters + metric after the last step
    pod_start_s: float = 8.0  # per-rollout mode: schedule + start with the image cached + /healthz
    steps_min: int = 5  # steps per episode, uniform in [min, max] (OSWorld's max_steps: 15)
    steps_max: int = 15
    sink_put_s: float = 0.03  # one S3 PUT of a step's PNG or JSON from inside the region
    nic_gbps: float = 10.0  # Redis host's network
    api_pod_creations_per_s: float = 50.0  # kube-scheduler's default client QPS (binds per second)


#: bench/README.md, measured on the development machine: medians (s).
SCREENSHOT_S = 0.066  # GET /screenshot
ACTION_S = 0.01172  # /execute through the zygote, paced
SETTLE_S = 1.052  # screen-settle wait after actions, mean
RESET_S = 0.293  # POST /reset, dirty desktop
GATEWAY_S = 0.006  # gateway overhead with a 2 MB body
LEASE_TTL_S = 30.0  # RUNNER_LEASE_TTL_MS; renewed every ttl/3
SINK_BATCH = 32


@dataclass
class Scenario:
    """One simulated configuration."""

    name: str
    env_pods: int = 10_000
    runners: int = 1_000
    rollouts_per_runner: int = 1
    replicas: int = 64
    mode: str = "warm-pool"  # or "per-rollout"
    lease: str = "scan"  # common/envpool.py today; "free-list": SPOP from a set of free env ids
    png_in_stream: bool = True  # False: the runner PUTs the PNG to S3, the entry carries its key
    assumptions: Assumptions = field(default_factory=Assumptions)


@dataclass
class Tally:
    """What the simulation counts inside the measurement window."""

    commands: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    episodes: int = 0
    pod_creations: int = 0
    model_busy_s: float = 0.0
    samples: int = 0  # once per simulated second in the window:
    envs_leased: int = 0  # sum of envs leased
    model_waiting: int = 0  # sum of steps queued at replicas


class Simulation:
    """Event loop over (time, seq, callback); all state in memory."""

    def __init__(self, scenario: Scenario, seed: int, horizon_s: float, warmup_s: float) -> None:
        self.s = scenario
        self.a = scenario.assumptions
        self.rng = random.Random(seed)
        self.horizon_s, self.warmup_s = horizon_s, warmup_s
        self.now = 0.0
        self.events: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = 0
        self.free_envs = list(range(scenario.env_pods))  # a heap: the scan takes the lowest free id
        self.replica_busy = [0] * scenario.replicas
        self.replica_queue: list[list[Callable[[], None]]] = [[] for _ in range(scenario.replicas)]
        self.t = Tally()

    def at(self, delay_s: float, callback: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.events, (self.now + delay_s, self.seq, callback))

    def counting(self) -> bool:
        return self.now >= self.warmup_s

    def cmd(self, name: str, count: float = 1) -> None:
        if self.counting():
            self.t.commands[name] += count  # type: ignore[assignment]

    def run(self) -> Tally:
        for slot in range(self.s.runners * self.s.rollouts_per_runner):
            self.at(self.rng.uniform(0, 30.0), lambda slot=slot: self.next_job(slot))  # type: ignore[misc]
        self.at(self.warmup_s, self.sample)
        while self.events:
            when, _, callback = heapq.heappop(self.events)
            if when > self.horizon_s:
                break
            self.now = when
            callback()
        return self.t

    def sample(self) -> None:
        self.t.samples += 1
        self.t.envs_leased += self.s.env_pods - len(self.free_envs)
        self.t.model_waiting += sum(len(q) for q in self.replica_queue)
        self.at(1.0, self.sample)

    # --- one rollout -----------------------------------------------------------------------
    def next_job(self, slot: int) -> None:
        self.cmd("rq_job")
        self.cmd("exists")  # is_cancelled before the start
        self.lease(slot, self.now)

    def lease(self, slot: int, started: float) -> None:
        if self.s.lease == "scan":
            self.cmd("smembers")
            self.cmd("hgetall")
        else:
            self.cmd("spop")
        if not self.free_envs:  # every env leased: the pool polls every 0.2 s (scan: SET NX on each env)
            self.cmd("set", self.s.env_pods if self.s.lease == "scan" else 0)
            self.at(0.2, lambda: self.lease(slot, started))
            return
        env = heapq.heappop(self.free_envs)
        # scan: SET NX on envs 0..env in id order, only the last succeeds; free list: one SET NX
        self.cmd("set", env + 1 if self.s.lease == "scan" else 1)
        boot = 0.0
        if self.s.mode == "per-rollout":
            boot = self.a.pod_start_s
            if self.counting():
                self.t.pod_creations += 1
        steps = self.rng.randint(self.a.steps_min, self.a.steps_max)
        replica = self.rng.randrange(self.s.replicas)  # the gateway's sticky pick for this episode
        self.cmd("xlen")
        self.cmd("xadd")  # episode start event
        self.at(boot + self.a.setup_s, lambda: self.step(slot, env, replica, 0, steps, self.now))

    def step(self, slot: int, env: int, replica: int, index: int, steps: int, leased_at: float) -> None:
        if index == steps:
            self.at(self.a.evaluate_s + RESET_S, lambda: self.finish(slot, env, leased_at))
            return
        self.at(SCREENSHOT_S + GATEWAY_S, lambda: self.model(replica, lambda: self.after_model(
            slot, env, replica, index, steps, leased_at)))

    def after_model(self, slot: int, env: int, replica: int, index: int, steps: int, leased_at: float) -> None:
        def published() -> None:
            self.cmd("exists")
            self.cmd("xlen")
            self.cmd("xadd")
            self.sink_entry()
            if self.counting():
                self.t.steps += 1
            self.step(slot, env, replica, index + 1, steps, leased_at)
        self.at(ACTION_S + SETTLE_S, published)

    def model(self, replica: int, done: Callable[[], None]) -> None:
        if self.replica_busy[replica] < self.a.replica_slots:
            self.replica_busy[replica] += 1
            if self.counting():
                self.t.model_busy_s += self.a.model_s
            self.at(self.a.model_s, lambda: self.model_done(replica, done))
        else:
            self.replica_queue[replica].append(done)

    def model_done(self, replica: int, done: Callable[[], None]) -> None:
        self.replica_busy[replica] -= 1
        if self.replica_queue[replica]:
            self.model(replica, self.replica_queue[replica].pop(0))
        done()

    def sink_entry(self) -> None:
        self.cmd("xack")
        self.cmd("xdel")
        self.cmd("xreadgroup", 1 / SINK_BATCH)
        self.cmd("xautoclaim", 1 / SINK_BATCH)

    def finish(self, slot: int, env: int, leased_at: float) -> None:
        self.cmd("evalsha")  # release
        if self.s.lease == "free-list":
            self.cmd("sadd")
        self.cmd("xlen")
        self.cmd("xadd")  # episode end event
        self.sink_entry()
        self.cmd("hset")  # record_rollout
        self.cmd("incr")  # attempt counter
        if self.counting():
            self.t.episodes += 1
            self.cmd("evalsha", (self.now - max(leased_at, self.warmup_s)) / (LEASE_TTL_S / 3))  # renewals
        heapq.heappush(self.free_envs, env)
        self.next_job(slot)


@dataclass
class Report:
    """Per-second figures of one scenario over the measurement window."""

    name: str
    values: dict[str, float]
    saturation: dict[str, float]  # utilization 0..1+ per part


def report(scenario: Scenario, tally: Tally, window_s: float, usec: dict[str, float]) -> Report:
    """Turn counts into rates, Redis CPU (from measured usec per call) and utilizations."""
    a = scenario.assumptions
    per_s = {name: count / window_s for name, count in tally.commands.items()}
    json_bytes = usec["step_entry_bytes"] - usec["png_kb"] * 1024
    entry_bytes = json_bytes + (a.png_kb * 1024 if scenario.png_in_stream else 200)  # 200: an S3 key
    scale = {"xadd": entry_bytes / usec["step_entry_bytes"], "xreadgroup": entry_bytes / usec["step_entry_bytes"],
             "hgetall": scenario.env_pods / usec["hgetall_fields"]}
    redis_cpu = sum(rate * usec.get(name, 5.0) * scale.get(name, 1.0)
                    for name, rate in per_s.items() if name != "rq_job") / 1e6
    redis_cpu += per_s.get("rq_job", 0.0) * usec["rq_usec_per_job"] / 1e6
    commands_per_s = sum(r for n, r in per_s.items() if n != "rq_job") + per_s.get("rq_job", 0.0) * usec[
        "rq_commands_per_job"]
    steps_per_s = tally.steps / window_s
    stream_in = (steps_per_s + 2 * tally.episodes / window_s) * entry_bytes
    sink_replicas_needed = steps_per_s * (2 if scenario.png_in_stream else 1) * a.sink_put_s
    lease_cpu = sum(per_s.get(name, 0.0) * usec.get(name, 5.0) * scale.get(name, 1.0)
                    for name in ("hgetall", "set", "smembers", "spop", "sadd")) / 1e6
    values = {
        "steps/s": steps_per_s,
        "episodes/s": tally.episodes / window_s,
        "Redis commands/s": commands_per_s,
        "Redis commands per step": commands_per_s / steps_per_s if steps_per_s else 0.0,
        "  of which env-lease SET NX per step": per_s.get("set", 0.0) / steps_per_s if steps_per_s else 0.0,
        "Redis main thread, CPU s/s": redis_cpu,
        "  of which env lease (HGETALL+SET)": lease_cpu,
        "stream in, MB/s (XADD)": stream_in / 1e6,
        "stream out, MB/s (XREADGROUP)": stream_in / 1e6,
        "pod creations/s": tally.pod_creations / window_s,
        "sink replicas needed": sink_replicas_needed,
    }
    leased = tally.envs_leased / max(tally.samples, 1)
    values["steps waiting for a replica"] = tally.model_waiting / max(tally.samples, 1)
    saturation = {
        "model replicas": tally.model_busy_s / window_s / (scenario.replicas * a.replica_slots),
        "env pods (leased)": leased / scenario.env_pods,
        "Redis main thread": redis_cpu,
        "Redis NIC": 2 * stream_in * 8 / (a.nic_gbps * 1e9),
        "API server pod creations": tally.pod_creations / window_s / a.api_pod_creations_per_s,
    }
    return Report(scenario.name, values, saturation)


def scenarios() -> list[Scenario]:
    """The issue's scale: 10,000 env pods, 1,000 runners, 64 replicas, as the code is (A-C), then
    with the changes that scale brings (D: O(1) free-list lease, E: D + PNGs out of the stream)."""
    return [
        Scenario("A: 1 rollout/runner, today"),
        Scenario("B: 10/runner, warm pool", rollouts_per_runner=10),
        Scenario("C: 10/runner, per-rollout pods", rollouts_per_runner=10, mode="per-rollout"),
        Scenario("D: B + free-list lease", rollouts_per_runner=10, lease="free-list"),
        Scenario("E: D + PNG to S3 by runner", rollouts_per_runner=10, lease="free-list", png_in_stream=False),
    ]


def print_table(reports: list[Report]) -> None:
    """Scenarios side by side, then the first part to saturate in each."""
    width = 15
    for r in reports:
        print(r.name)
    print(f"{'':38s}" + "".join(f"{r.name[0]:>{width + 2}s}" for r in reports))
    for key in reports[0].values:
        print(f"{key:38s}" + "".join(f"{r.values[key]:>{width + 2},.2f}" for r in reports))
    print("utilization (1.00 = saturated)")
    for key in reports[0].saturation:
        print(f"  {key:36s}" + "".join(f"{r.saturation[key]:>{width + 2}.2f}" for r in reports))
    for r in reports:
        part, level = max(r.saturation.items(), key=lambda kv: kv[1])
        print(f"{r.name}: saturates first: {part} ({level:.2f})")


def main(argv: list[str] | None = None) -> list[Report]:
    """Parse options, simulate every scenario, print the table; returns the reports."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon-s", type=float, default=120.0, help="simulated seconds per scenario")
    parser.add_argument("--warmup-s", type=float, default=40.0, help="simulated seconds not counted")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", action="store_true", help="re-measure Redis costs (bench/redis_costs.py)")
    args = parser.parse_args(argv)
    usec = dict(MEASURED_REDIS_USEC)
    if args.measure:
        from bench.redis_costs import measure
        usec.update(measure())
    reports = []
    for scenario in scenarios():
        tally = Simulation(scenario, args.seed, args.horizon_s, args.warmup_s).run()
        reports.append(report(scenario, tally, args.horizon_s - args.warmup_s, usec))
    print_table(reports)
    return reports


if __name__ == "__main__":
    main()
