"""Discrete-event simulation of cua-rollout at cluster scale: 10,000 env pods, 1,000 runners, 64
model replicas (issues 12 and 27). Pure Python, no cluster: `python bench/cluster_sim.py` (~1-3 min).

Every rollout slot loops: take a job (RQ) -> lease an env -> [per-rollout mode: create the pod, wait
for it] -> task setup -> steps -> evaluate -> reset (warm pool) or delete the pod -> release. A step
is: screenshot, the model call (queued at its sticky replica, `replica_slots` served at once), the
action, the screen-settle wait, then `is_cancelled` + `publish` and the sink's handling of the entry.

What each part costs Redis is measured by bench/redis_costs.py on a real redis-server, running the
project's own code per operation (`MEASURED`: commands sent, commands run including a script's own,
main-thread CPU): the env lease (`free-set`: `common/envpool.py`, one script whatever the pool's size;
`scan`: the lease of before issue 27, SMEMBERS + HGETALL of the whole registry then SET NX on each env
in id order until one is free), renewals (every TTL/3) and the release; the publish with the PNG in the
entry or (issue 27 point 2) its object key; the sink per entry; per rollout the attempt counter,
records and heartbeat start/end, RQ's job bookkeeping, the job heartbeat every 5 s; per reaper round
(every 5 s, one runner at a time) a heartbeat check per started job and the pool's `reclaim`, and
every other runner's try for the round's lock.

"Rollouts per runner": each runner process runs that many rollouts at once, each with its own job,
lease, heartbeat and events (issue 27 point 3, `RUNNER_CONCURRENCY`, is built after this; its
per-rollout Redis traffic is modelled as today's one rollout per worker process, and the reaper lock
is tried once per runner process). The default scenario (F) assumes 10 per runner, the count at which
1,000 runners fill 10,000 env pods; `--rollouts-per-runner` re-runs it with the default chosen there.

Outputs, per scenario side by side: Redis commands per step and per second, Redis main-thread
utilization, stream bytes/s in and out (per shard), pod creations/s, model, env and sink
utilization, and which part saturates first. Stated assumptions: `Assumptions`.
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

#: bench/redis_costs.py: per operation, commands sent / run (a script's own calls included) / Redis
#: main-thread CPU in microseconds (an upper bound: one command at a time on an otherwise idle server)
#: and execution time (a lower bound). 10,000 registered envs, 300 KiB PNGs; measured on the shared
#: 2-core development machine at load average 5-6 (bench/README.md, "Cluster scale").
MEASURED: dict[str, dict[str, float]] = {
    "lease": {"sent": 1.0, "run": 8.0, "cpu_usec": 74.6, "exec_usec": 41.5},
    "take_clean": {"sent": 1.0, "run": 1.0, "cpu_usec": 21.0, "exec_usec": 0.5},
    "renew": {"sent": 1.0, "run": 5.0, "cpu_usec": 50.8, "exec_usec": 20.2},
    "release": {"sent": 1.0, "run": 13.0, "cpu_usec": 68.8, "exec_usec": 37.3},
    "scan_read": {"sent": 2.0, "run": 2.0, "cpu_usec": 2695.4, "exec_usec": 2321.1},
    "scan_set_nx": {"sent": 1.0, "run": 1.0, "cpu_usec": 21.5, "exec_usec": 1.0},
    "lease_none_free": {"sent": 1.0, "run": 13.0, "cpu_usec": 62.9, "exec_usec": 37.7},
    "reclaim": {"sent": 1.01, "run": 3.01, "cpu_usec": 40.5, "exec_usec": 16.0},
    "is_cancelled": {"sent": 1.0, "run": 1.0, "cpu_usec": 20.8, "exec_usec": 0.4},
    "publish_png": {"sent": 2.0, "run": 2.0, "cpu_usec": 538.6, "exec_usec": 26.9},
    "sink_png": {"sent": 1.16, "run": 3.19, "cpu_usec": 167.6, "exec_usec": 80.3},
    "publish_key": {"sent": 2.0, "run": 2.0, "cpu_usec": 62.6, "exec_usec": 5.3},
    "sink_key": {"sent": 1.16, "run": 3.19, "cpu_usec": 22.4, "exec_usec": 14.0},
    "rollout_bookkeeping": {"sent": 6.01, "run": 19.01, "cpu_usec": 292.9, "exec_usec": 93.7},
    "wait_release": {"sent": 1.0, "run": 1.0, "cpu_usec": 267.5, "exec_usec": 9.8},
    "rq_job": {"sent": 52.2, "run": 52.2, "cpu_usec": 793.1, "exec_usec": 199.8},
    "job_heartbeat": {"sent": 1.0, "run": 1.0, "cpu_usec": 38.7, "exec_usec": 3.0},
    "reaper_per_job": {"sent": 0.002, "run": 0.002, "cpu_usec": 0.4, "exec_usec": 0.3},
    "reaper_lock": {"sent": 2.0, "run": 2.0, "cpu_usec": 42.6, "exec_usec": 1.8},
}
#: The operations of the env pool (the "of which env lease" lines).
LEASE_OPS = ("lease", "lease_none_free", "wait_release", "take_clean", "renew", "release", "scan_read",
             "scan_set_nx", "reclaim")


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
LEASE_RENEW_S = 10.0  # RUNNER_LEASE_TTL_MS (30 s) / 3
HEARTBEAT_S = 5.0  # RUNNER_HEARTBEAT_TTL_S (15 s) / 3
REAPER_S = 5.0  # RUNNER_REAPER_INTERVAL_S
LEASE_POLL_S = 0.2  # EnvPool.lease's poll while nothing is free
KEY_BYTES = 200  # an object key in place of the PNG (issue 27 point 2)


@dataclass
class Scenario:
    """One simulated configuration."""

    name: str
    env_pods: int = 10_000
    runners: int = 1_000
    rollouts_per_runner: int = 1
    replicas: int = 64
    mode: str = "warm-pool"  # or "per-rollout"
    lease: str = "free-set"  # common/envpool.py; "scan": the lease of before issue 27
    png_in_stream: bool = True  # False: the runner PUTs the PNG to S3, the entry carries its key
    event_shards: int = 1  # EVENT_SHARDS
    assumptions: Assumptions = field(default_factory=Assumptions)


@dataclass
class Tally:
    """What the simulation counts inside the measurement window."""

    ops: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    episodes: int = 0
    entries: int = 0  # stream entries: steps and episode start/end events
    pod_creations: int = 0
    model_busy_s: float = 0.0
    samples: int = 0  # once per simulated second in the window:
    envs_leased: int = 0  # sum of envs leased
    model_waiting: int = 0  # sum of steps queued at replicas
    env_waiting: int = 0  # sum of rollouts waiting for a free env
    in_job: int = 0  # sum of slots running a rollout


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
        self.in_job = 0  # slots running a job (RQ's started jobs)
        self.waiting_for_env = 0
        self.t = Tally()
        self.kind = "png" if scenario.png_in_stream else "key"

    def at(self, delay_s: float, callback: Callable[[], None]) -> None:
        self.seq += 1
        heapq.heappush(self.events, (self.now + delay_s, self.seq, callback))

    def counting(self) -> bool:
        return self.now >= self.warmup_s

    def op(self, name: str, count: float = 1) -> None:
        if self.counting():
            self.t.ops[name] += count  # type: ignore[assignment]

    def run(self) -> Tally:
        for slot in range(self.s.runners * self.s.rollouts_per_runner):
            self.at(self.rng.uniform(0, 30.0), lambda slot=slot: self.next_job(slot))  # type: ignore[misc]
        self.at(self.warmup_s, self.sample)
        self.at(self.rng.uniform(0, REAPER_S), self.reaper_round)
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
        self.t.env_waiting += self.waiting_for_env
        self.t.in_job += self.in_job
        # what runs every few seconds while a rollout holds its job and lease, for this second
        self.op("job_heartbeat", self.in_job / HEARTBEAT_S)
        self.op("renew", (self.s.env_pods - len(self.free_envs)) / LEASE_RENEW_S)
        self.at(1.0, self.sample)

    def reaper_round(self) -> None:
        """One runner's reaper checks every started job's heartbeat and reclaims expired leases; every
        other runner process tries the round's lock."""
        self.op("reaper_per_job", self.in_job)
        self.op("reclaim")
        self.op("reaper_lock", self.s.runners - 1)
        self.at(REAPER_S, self.reaper_round)

    def entry(self, kind: str) -> None:
        """One stream entry: published by the runner, handled by a sink."""
        self.op(f"publish_{kind}")
        self.op(f"sink_{kind}")
        if self.counting():
            self.t.entries += 1

    # --- one rollout -----------------------------------------------------------------------
    def next_job(self, slot: int) -> None:
        self.in_job += 1
        self.op("rq_job")
        self.op("rollout_bookkeeping")
        self.op("is_cancelled")  # before the start
        self.lease(slot, self.now)

    def lease(self, slot: int, started: float, waiting: bool = False) -> None:
        if self.s.lease == "scan":
            self.op("scan_read")
        if not self.free_envs:  # every env leased: a waiter retries (woken by a release, or its poll)
            if self.s.lease == "scan":
                self.op("scan_set_nx", self.s.env_pods)
            else:
                self.op("lease_none_free")
                self.op("wait_release")
            self.waiting_for_env += not waiting
            self.at(LEASE_POLL_S, lambda: self.lease(slot, started, waiting=True))
            return
        self.waiting_for_env -= waiting
        env = heapq.heappop(self.free_envs)
        # scan: SET NX on envs 0..env in id order, only the last succeeds; free set: one script
        if self.s.lease == "scan":
            self.op("scan_set_nx", env + 1)
        else:
            self.op("lease")
        self.op("take_clean")
        boot = 0.0
        if self.s.mode == "per-rollout":
            boot = self.a.pod_start_s
            if self.counting():
                self.t.pod_creations += 1
        steps = self.rng.randint(self.a.steps_min, self.a.steps_max)
        replica = self.rng.randrange(self.s.replicas)  # the gateway's sticky pick for this episode
        self.entry("key")  # episode start event (no PNG)
        leased_at = self.now
        self.at(boot + self.a.setup_s, lambda: self.step(slot, env, replica, 0, steps, leased_at))

    def step(self, slot: int, env: int, replica: int, index: int, steps: int, leased_at: float) -> None:
        if index == steps:
            self.at(self.a.evaluate_s + RESET_S, lambda: self.finish(slot, env, leased_at))
            return
        self.at(SCREENSHOT_S + GATEWAY_S, lambda: self.model(replica, lambda: self.after_model(
            slot, env, replica, index, steps, leased_at)))

    def after_model(self, slot: int, env: int, replica: int, index: int, steps: int, leased_at: float) -> None:
        def published() -> None:
            self.op("is_cancelled")
            self.entry(self.kind)
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

    def finish(self, slot: int, env: int, leased_at: float) -> None:
        self.op("release")
        self.entry("key")  # episode end event
        if self.counting():
            self.t.episodes += 1
        heapq.heappush(self.free_envs, env)
        self.in_job -= 1
        self.next_job(slot)


@dataclass
class Report:
    """Per-second figures of one scenario over the measurement window."""

    name: str
    values: dict[str, float]
    saturation: dict[str, float]  # utilization 0..1+ per part
    redis_cpu: dict[str, float]  # Redis main-thread CPU s/s per operation
    waiting: dict[str, float]  # work queued in front of a part (mean over the window)

    def first_to_saturate(self) -> tuple[str, float]:
        """The part that limits throughput: Redis when its main thread is over 1 (the simulation does
        not slow it down: everything would queue there), else the most utilized part (runner slots and
        env pods count only while working, not while they wait for a replica or an env)."""
        if self.saturation["Redis main thread"] >= 1.0:
            return "Redis main thread", self.saturation["Redis main thread"]
        part = max(self.saturation, key=lambda p: self.saturation[p])
        return part, self.saturation[part]


def entry_bytes(png_in_stream: bool, png_kb: float) -> float:
    """Bytes of a step's stream entry: its JSON (a typical UI-TARS step, bench/redis_costs.py) plus the
    PNG, or the PNG's object key."""
    from bench.redis_costs import step_event
    from common.events import encode_event

    json_bytes = sum(len(k) + len(v) for k, v in encode_event(step_event(), None).items())
    return json_bytes + (png_kb * 1024 if png_in_stream else KEY_BYTES)


def report(scenario: Scenario, tally: Tally, window_s: float, costs: dict[str, dict[str, float]]) -> Report:
    """Turn operation counts into rates, Redis commands and main-thread CPU, and utilizations."""
    a = scenario.assumptions
    per_s = {name: count / window_s for name, count in tally.ops.items()}
    steps_per_s = tally.steps / window_s

    def total(metric: str, names: tuple[str, ...] | None = None) -> float:
        return sum(rate * costs[name][metric] for name, rate in per_s.items() if names is None or name in names)

    def per_step(value: float) -> float:
        return value / steps_per_s if steps_per_s else 0.0

    step_bytes = entry_bytes(scenario.png_in_stream, a.png_kb)
    stream_in = steps_per_s * step_bytes + (tally.entries / window_s - steps_per_s) * entry_bytes(False, 0)
    redis_cpu = total("cpu_usec") / 1e6
    values = {
        "steps/s": steps_per_s,
        "episodes/s": tally.episodes / window_s,
        "Redis commands sent/s": total("sent"),
        "Redis commands sent per step": per_step(total("sent")),
        "  of which env lease (commands)": per_step(total("sent", LEASE_OPS)),
        "Redis commands run per step (scripts' own)": per_step(total("run")),
        "Redis main thread, CPU s/s": redis_cpu,
        "  of which env lease (CPU s/s)": total("cpu_usec", LEASE_OPS) / 1e6,
        "  lower bound (execution only)": total("exec_usec") / 1e6,
        "stream in, MB/s (XADD)": stream_in / 1e6,
        "stream out, MB/s (XREADGROUP)": stream_in / 1e6,
        "  per shard, MB/s": stream_in / 1e6 / scenario.event_shards,
        "pod creations/s": tally.pod_creations / window_s,
        "sink replicas needed (1 put at a time)": steps_per_s * (2 if scenario.png_in_stream else 1) * a.sink_put_s,
    }
    samples = max(tally.samples, 1)
    leased, in_job = tally.envs_leased / samples, tally.in_job / samples
    waiting = {"model replicas": tally.model_waiting / samples, "env pods (working)": tally.env_waiting / samples}
    values["rollouts in flight"] = in_job
    values["env pods leased, fraction"] = leased / scenario.env_pods
    values["steps waiting for a replica"] = waiting["model replicas"]
    values["rollouts waiting for an env"] = waiting["env pods (working)"]
    saturation = {
        "model replicas": tally.model_busy_s / window_s / (scenario.replicas * a.replica_slots),
        # a rollout or env is working when it is not waiting: for a replica, or (a rollout) for an env
        "runner slots (working)": (in_job - sum(waiting.values())) / (scenario.runners * scenario.rollouts_per_runner),
        "env pods (working)": (leased - waiting["model replicas"]) / scenario.env_pods,
        "Redis main thread": redis_cpu,
        "Redis NIC": 2 * stream_in * 8 / (a.nic_gbps * 1e9),
        "API server pod creations": tally.pod_creations / window_s / a.api_pod_creations_per_s,
    }
    breakdown = {name: rate * costs[name]["cpu_usec"] / 1e6 for name, rate in sorted(per_s.items())}
    return Report(scenario.name, values, saturation, breakdown, waiting)


#: The name of the default configuration's scenario in `scenarios()`.
DEFAULT = "F: default"


def scenarios(rollouts_per_runner: int = 10) -> list[Scenario]:
    """The issue's scale: 10,000 env pods, 1,000 runners, 64 replicas. A-C: the code before issue 27
    (scan lease, PNGs in the stream); D: the O(1) free-set lease (this code) as configured today, one
    rollout per runner and PNGs in the stream; E: D with `rollouts_per_runner` rollouts per runner
    process (point 3); F, the default configuration once issue 27 is complete: E with PNG keys in the
    stream (point 2), one event shard."""
    many = rollouts_per_runner
    return [
        Scenario("A: before 27, 1 rollout/runner", lease="scan"),
        Scenario("B: before 27, 10/runner", rollouts_per_runner=10, lease="scan"),
        Scenario("C: B, per-rollout pods", rollouts_per_runner=10, mode="per-rollout", lease="scan"),
        Scenario("D: free-set lease, 1/runner, PNG in stream"),
        Scenario(f"E: D with {many}/runner", rollouts_per_runner=many),
        Scenario(f"{DEFAULT}: E + PNG keys in stream", rollouts_per_runner=many, png_in_stream=False),
    ]


def print_table(reports: list[Report]) -> None:
    """Scenarios side by side, then the first part to saturate in each."""
    width = 13
    for r in reports:
        print(r.name)
    print(f"{'':44s}" + "".join(f"{r.name[0]:>{width}s}" for r in reports))
    for key in reports[0].values:
        print(f"{key:44s}" + "".join(f"{r.values[key]:>{width},.2f}" for r in reports))
    print("utilization (1.00 = saturated)")
    for key in reports[0].saturation:
        print(f"  {key:42s}" + "".join(f"{r.saturation[key]:>{width}.2f}" for r in reports))
    print("Redis main thread by operation, CPU s/s")
    for op in sorted({op for r in reports for op in r.redis_cpu}):
        print(f"  {op:42s}" + "".join(f"{r.redis_cpu.get(op, 0.0):>{width}.3f}" for r in reports))
    for r in reports:
        part, level = r.first_to_saturate()
        print(f"{r.name}: saturates first: {part} ({level:.2f})")


def main(argv: list[str] | None = None) -> list[Report]:
    """Parse options, simulate every scenario, print the table; returns the reports."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon-s", type=float, default=120.0, help="simulated seconds per scenario")
    parser.add_argument("--warmup-s", type=float, default=40.0, help="simulated seconds not counted")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rollouts-per-runner", type=int, default=10,
                        help="of the default configuration (RUNNER_CONCURRENCY once issue 27 point 3 is built)")
    parser.add_argument("--only", default="", help="simulate only the scenarios whose letter is listed (e.g. EF)")
    parser.add_argument("--measure", action="store_true", help="re-measure Redis costs (bench/redis_costs.py)")
    args = parser.parse_args(argv)
    costs = dict(MEASURED)
    if args.measure:
        from bench.redis_costs import measure
        costs.update(measure())
        for name, cost in costs.items():
            print(f"{name:20s} " + " ".join(f"{k}={v:.2f}" for k, v in cost.items()))
    reports = []
    for scenario in scenarios(args.rollouts_per_runner):
        if args.only and scenario.name[0] not in args.only:
            continue
        tally = Simulation(scenario, args.seed, args.horizon_s, args.warmup_s).run()
        reports.append(report(scenario, tally, args.horizon_s - args.warmup_s, costs))
    print_table(reports)
    return reports


if __name__ == "__main__":
    main()
