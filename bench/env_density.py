"""Env density (issue 27, point 5): how many local desktop envs fit on this machine with LibreOffice
Calc and Chromium open in each. `python bench/env_density.py` (as root: sandboxed envs, as `make demo`
runs them; `--max-envs`, `--batch`, `--deadline-s` bound it; `--shell gnome|openbox` picks the desktop
shell, issue 33).

Starts envs in batches (`services.desktop_env.launcher.LocalEnvLauncher`, one per batch), and for
each batch:
- memory of each new env at rest (PSS of its process tree: shared pages split between their users, so
  envs sum up to what they take together; `psutil` reading `/proc/*/smaps_rollup`) and the growth of
  the machine's memory in use since the start per env (`MemTotal - MemAvailable`, which other jobs on
  the machine move too);
- opens Calc (`libreoffice --calc`) and Chromium (`google-chrome about:blank`, the env's shim over
  Debian's chromium, as OSWorld's tasks start it) in each new env through `/setup/launch`, waits for
  both windows (`wmctrl -lx` through `/execute`), waits for the env's memory to settle, measures again;
- checks every env started so far: both its apps' windows are still there, and it answers `GET
  /screenshot` within 2 s (3 times; one env after the other, `--parallel` for more at once) while all
  the apps are open; and measures the envs' CPU while idle with the apps open.

It stops at the first limit: memory (`MemAvailable` below `--reserve-mib`, left for the machine's other
jobs), X (an Xvfb or display failure while starting), PIDs (threads near `kernel.pid_max`, `threads-max`
or the cgroup's `pids.max`, or a start failing on fork), CPU (an env too slow on `/screenshot` or an app
not up in time while memory is left), or at its own bounds (`--max-envs`, `--deadline-s`). It prints a
row per batch, the limit hit and what would lift it, and the other processes that used the machine's
CPU meanwhile (sampled at each batch). It ends
only the processes it started (the launchers' envs, by PID; an env's apps die with its PID namespace).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.env_client import DesktopEnvClient, EnvError  # noqa: E402
from services.desktop_env.launcher import LocalEnvLauncher  # noqa: E402

MIB = 1024 * 1024
APPS = {"calc": ["libreoffice", "--calc"], "chromium": ["google-chrome", "about:blank"]}
WINDOW_CLASSES = {"calc": "libreoffice-calc", "chromium": "chrom"}  # in `wmctrl -lx`'s class column


@dataclass
class Env:
    """One started env: its URL, the PID of its top process, its memory (MiB) at rest and with apps."""

    url: str
    pid: int
    rest_mib: float = 0.0
    apps_mib: float = 0.0
    apps_error: str = ""


@dataclass
class Batch:
    """What one batch measured."""

    envs: int  # envs alive after the batch
    rest_mib: float  # mean PSS of the batch's envs at rest
    apps_mib: float  # mean PSS with both apps open
    machine_mib_per_env: float  # growth of the machine's memory in use since the start, per env alive
    apps_open: int  # envs whose Calc and Chromium windows are both still there
    healthy: int  # of those, the envs answering every /screenshot within the limit
    latency_p50_ms: float
    latency_max_ms: float
    idle_cpu_pct: float  # mean CPU % of one env with its apps open, idle (100 = one core)
    available_mib: float
    threads: int
    load: float


@dataclass
class Result:
    """The whole run: batches, the limit that stopped it and why."""

    batches: list[Batch] = field(default_factory=list)
    limit: str = ""
    detail: str = ""

    @property
    def reached(self) -> int:
        """Envs alive and healthy with both apps open at the last batch that passed every check."""
        good = [b for b in self.batches if b.healthy == b.envs]
        return good[-1].envs if good else 0


def tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants (an env's apps are the supervisor's descendants)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def pss_mib(pid: int) -> float:
    """PSS of a process tree, MiB."""
    total = 0
    for process in tree(pid):
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / MIB


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process tree so far."""
    total = 0.0
    for process in tree(pid):
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def machine_used_mib() -> float:
    """Memory in use on the machine (total - available), MiB."""
    memory = psutil.virtual_memory()
    return (memory.total - memory.available) / MIB


def thread_limit() -> tuple[int, str]:
    """The lowest limit on threads (each is a PID) and its name."""
    limits = {"kernel.pid_max": int(Path("/proc/sys/kernel/pid_max").read_text()),
              "kernel.threads-max": int(Path("/proc/sys/kernel/threads-max").read_text())}
    cgroup = Path("/sys/fs/cgroup/pids.max")
    if cgroup.exists() and cgroup.read_text().strip() != "max":
        limits["cgroup pids.max"] = int(cgroup.read_text())
    name = min(limits, key=lambda k: limits[k])
    return limits[name], name


def threads_in_use() -> int:
    """Threads on the machine (each takes a PID)."""
    return sum(1 for _ in Path("/proc").glob("[0-9]*/task/[0-9]*"))


def open_apps(env: Env, timeout_s: float) -> None:
    """Launch Calc and Chromium in `env` and wait for both windows; sets `env.apps_error` on failure."""
    try:
        with DesktopEnvClient(env.url, timeout_s=30.0) as client:
            for command in APPS.values():
                client.launch(command)
            deadline = time.monotonic() + timeout_s
            missing = list(WINDOW_CLASSES)
            while time.monotonic() < deadline:
                listing = (client.execute(["wmctrl", "-lx"]).output or "").lower()
                missing = [app for app, cls in WINDOW_CLASSES.items() if cls not in listing]
                if not missing:
                    return
                time.sleep(1.0)
            env.apps_error = f"no window of {', '.join(missing)} after {timeout_s:.0f}s"
    except EnvError as exc:
        env.apps_error = f"launching the apps failed: {exc}"


def settle_mib(envs: list[Env], quiet_s: float = 5.0, timeout_s: float = 60.0) -> list[float]:
    """Each env's PSS once their total changed by less than 2% over `quiet_s` (at most `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    values = [pss_mib(env.pid) for env in envs]
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        again = [pss_mib(env.pid) for env in envs]
        if abs(sum(again) - sum(values)) <= 0.02 * sum(values):
            return again
        values = again
    return values


def screenshot_sweep(envs: list[Env], limit_s: float, parallel: int,
                     rounds: int = 3) -> tuple[int, int, list[float]]:
    """Each env asked whether both apps' windows are still there, then for `rounds` screenshots
    (`parallel` envs at a time). Returns the envs with both apps open, those of them that answered
    every screenshot within `limit_s`, and every latency (ms)."""
    def one(env: Env) -> tuple[bool, bool, list[float]]:
        latencies, ok = [], True
        with DesktopEnvClient(env.url, timeout_s=limit_s * 5) as client:
            try:
                listing = (client.execute(["wmctrl", "-lx"]).output or "").lower()
            except EnvError:
                listing = ""
            apps = all(cls in listing for cls in WINDOW_CLASSES.values())
            for _ in range(rounds):
                started = time.monotonic()
                try:
                    client.screenshot()
                except EnvError:
                    ok = False
                latencies.append((time.monotonic() - started) * 1000)
        return apps, apps and ok and max(latencies) <= limit_s * 1000, latencies

    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(one, envs))
    return (sum(apps for apps, _, _ in results), sum(ok for _, ok, _ in results),
            [ms for _, _, lat in results for ms in lat])


def idle_cpu_pct(envs: list[Env], window_s: float = 5.0) -> float:
    """Mean CPU % of one env (its whole tree, apps included) over `window_s` of idling."""
    before = [cpu_seconds(env.pid) for env in envs]
    time.sleep(window_s)
    after = [cpu_seconds(env.pid) for env in envs]
    return statistics.mean(100 * (b - a) / window_s for a, b in zip(before, after, strict=True))


def classify_start_failure(message: str) -> str:
    """The limit an env that did not start points at."""
    text = message.lower()
    if "resource temporarily unavailable" in text or "fork" in text or "cannot allocate" in text:
        return "PIDs" if "fork" in text or "temporarily" in text else "memory"
    if "xvfb" in text or "display" in text or "cannot open display" in text:
        return "X"
    return "env start"


LIFT = {
    "memory": "more RAM, or less per env: a smaller screen (DESKTOP_WIDTH/HEIGHT: Xvfb's framebuffer and "
              "every app's buffers scale with it), Chromium's --renderer-process-limit, KSM for the pages "
              "identical across envs",
    "CPU": "more cores (or fewer envs per core): the envs' apps idle at the CPU measured here, and each "
           "screenshot (PNG encode of the screen) takes ~60 ms of a core",
    "X": "fewer displays per X server limit: each env runs its own Xvfb in its own namespace here",
    "PIDs": "raise kernel.pid_max / the cgroup's pids.max: Chromium and LibreOffice start many threads",
    "env start": "read the env's log named in the detail",
    "bench bound": "a larger --max-envs or --deadline-s",
}


def run(max_envs: int, batch: int, deadline_s: float, reserve_mib: float, app_timeout_s: float,
        screenshot_limit_s: float, parallel: int, root: Path, tracker: Others) -> Result:
    """Grow the envs batch by batch until a limit or a bound; every env is stopped before returning."""
    result = Result()
    launchers: list[LocalEnvLauncher] = []
    envs: list[Env] = []
    started, used_start = time.monotonic(), machine_used_mib()
    limit_threads, limit_name = thread_limit()
    try:
        while not result.limit:
            if len(envs) >= max_envs or time.monotonic() - started > deadline_s:
                result.limit, result.detail = "bench bound", f"{len(envs)} envs (--max-envs {max_envs}, " \
                                                             f"--deadline-s {deadline_s:.0f})"
                break
            # the larger of the last batch's PSS with apps and the machine's growth per env so far
            last = result.batches[-1] if result.batches else None
            per_env = max(last.apps_mib, last.machine_mib_per_env) if last else 600.0
            count = min(batch, max_envs - len(envs))
            available = psutil.virtual_memory().available / MIB
            if available - count * per_env < reserve_mib:
                result.limit = "memory"
                result.detail = (f"{available:,.0f} MiB available; {count} more envs at {per_env:,.0f} MiB each "
                                 f"would leave less than the {reserve_mib:,.0f} MiB reserved for other jobs")
                break
            launcher = LocalEnvLauncher(count, root / f"batch-{len(launchers)}", sandbox=None,
                                        base_display=100 + len(envs))
            launchers.append(launcher)
            try:
                launcher.start(timeout_s=180.0)
            except RuntimeError as exc:
                result.limit, result.detail = classify_start_failure(str(exc)), str(exc)[:600]
                break
            new = [Env(url, pid) for url, pid in zip(launcher.urls, launcher.pids, strict=True)]
            envs += new
            for env, mib in zip(new, settle_mib(new), strict=True):
                env.rest_mib = mib
            with ThreadPoolExecutor(len(new)) as pool:
                list(pool.map(lambda env: open_apps(env, app_timeout_s), new))
            for env, mib in zip(new, settle_mib(new), strict=True):
                env.apps_mib = mib
            apps_open, healthy, latencies = screenshot_sweep(envs, screenshot_limit_s, parallel)
            row = Batch(envs=len(envs), rest_mib=statistics.mean(e.rest_mib for e in new),
                        apps_mib=statistics.mean(e.apps_mib for e in new),
                        machine_mib_per_env=(machine_used_mib() - used_start) / len(envs), apps_open=apps_open,
                        healthy=healthy,
                        latency_p50_ms=statistics.median(latencies), latency_max_ms=max(latencies),
                        idle_cpu_pct=idle_cpu_pct(envs), available_mib=psutil.virtual_memory().available / MIB,
                        threads=threads_in_use(), load=psutil.getloadavg()[0])
            result.batches.append(row)
            tracker.sample()
            print_row(row, flush=True)
            failed = [e.apps_error for e in new if e.apps_error]
            if failed or healthy < len(envs):
                memory_left = row.available_mib > reserve_mib
                result.limit = "CPU" if memory_left else "memory"
                result.detail = (f"{len(envs) - healthy} of {len(envs)} envs unhealthy: {len(envs) - apps_open} with "
                                 f"an app gone, the others slower than {screenshot_limit_s:.0f} s on /screenshot (max "
                                 f"{row.latency_max_ms:,.0f} ms); new apps: {failed[:2] or 'up'}; load {row.load:.1f} "
                                 f"on {psutil.cpu_count()} cores, {row.available_mib:,.0f} MiB available")
            elif row.threads > 0.9 * limit_threads:
                result.limit, result.detail = "PIDs", f"{row.threads} threads, {limit_name} {limit_threads}"
    finally:
        for launcher in launchers:
            launcher.stop()
    return result


def print_row(row: Batch, flush: bool = False) -> None:
    """One line per batch."""
    print(f"{row.envs:5d} {row.rest_mib:9.0f} {row.apps_mib:9.0f} {row.machine_mib_per_env:10.0f} {row.apps_open:6d} "
          f"{row.healthy:8d} "
          f"{row.latency_p50_ms:8.0f} {row.latency_max_ms:8.0f} {row.idle_cpu_pct:8.1f} {row.available_mib:10,.0f} "
          f"{row.threads:8d} {row.load:6.1f}", flush=flush)


class Others:
    """CPU used by the processes this bench did not start, sampled at each batch (so jobs that come and
    go between the start and the end are counted too): what else ran on the machine meanwhile."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.own = {psutil.Process().pid}
        self.last: dict[int, float] = {}
        self.used: dict[tuple[int, str], float] = {}  # (pid, command) -> CPU seconds since the start
        self.rss: dict[tuple[int, str], float] = {}
        self.sample()

    def sample(self) -> None:
        """Add each process's CPU since the last sample (a process's first: since the bench started)."""
        for process in psutil.process_iter(["pid", "name", "cmdline", "memory_info", "cpu_times", "create_time"]):
            info = process.info
            if info["cpu_times"] is None or info["pid"] in self.own or self._mine(process):
                continue
            cpu = info["cpu_times"].user + info["cpu_times"].system
            key = (info["pid"], " ".join(info["cmdline"] or [info["name"] or "?"])[:90])
            if info["pid"] not in self.last and info["create_time"] < time.time() - (time.monotonic() - self.started):
                self.last[info["pid"]] = cpu  # running before the bench: only what it uses from now on
            self.used[key] = self.used.get(key, 0.0) + cpu - self.last.get(info["pid"], 0.0)
            self.last[info["pid"]] = cpu
            if info["memory_info"] is not None:
                self.rss[key] = info["memory_info"].rss / MIB

    def _mine(self, process: psutil.Process) -> bool:
        try:
            return any(parent.pid in self.own for parent in process.parents())
        except psutil.NoSuchProcess:
            return True

    def top(self, count: int = 12) -> list[str]:
        """The processes that used the most CPU, as `mean % of a core, RSS MiB, pid, command`."""
        seconds = time.monotonic() - self.started
        rows = sorted(self.used.items(), key=lambda kv: kv[1], reverse=True)[:count]
        return [f"{100 * cpu / seconds:6.1f}% {self.rss.get(key, 0.0):7.0f} MiB {key[0]:7d} {key[1]}"
                for key, cpu in rows]


def main(argv: list[str] | None = None) -> Result:
    """Parse the bounds, run, print the summary; returns the result."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-envs", type=int, default=48)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--deadline-s", type=float, default=2400.0, help="no new batch after this")
    parser.add_argument("--reserve-mib", type=float, default=3072.0, help="memory left for the machine's other jobs")
    parser.add_argument("--app-timeout-s", type=float, default=240.0)
    parser.add_argument("--screenshot-limit-s", type=float, default=2.0)
    parser.add_argument("--parallel", type=int, default=1, help="envs asked for screenshots at once in a sweep")
    parser.add_argument("--shell", choices=("gnome", "openbox"), default=None,
                        help="the envs' desktop shell (DESKTOP_SHELL; default: the env's, GNOME Shell where installed)")
    args = parser.parse_args(argv)
    if args.shell:
        os.environ["DESKTOP_SHELL"] = args.shell
    print(f"machine: {psutil.cpu_count()} cores, {psutil.virtual_memory().total / MIB:,.0f} MiB, load "
          f"{psutil.getloadavg()[0]:.1f}; threads limit {thread_limit()[1]} {thread_limit()[0]}")
    tracker = Others()
    print(f"{'envs':>5s} {'rest MiB':>9s} {'apps MiB':>9s} {'machine/env':>10s} {'apps':>6s} {'healthy':>8s} "
          f"{'p50 ms':>8s} {'max ms':>8s} {'idle CPU%':>8s} {'avail MiB':>10s} {'threads':>8s} {'load':>6s}")
    with tempfile.TemporaryDirectory(prefix="env-density-") as tmp:
        result = run(args.max_envs, args.batch, args.deadline_s, args.reserve_mib, args.app_timeout_s,
                     args.screenshot_limit_s, args.parallel, Path(tmp), tracker)
    print(f"reached: {result.reached} envs healthy with Calc and Chromium open")
    print(f"stopped by: {result.limit}: {result.detail}")
    print(f"would lift it: {LIFT.get(result.limit, '?')}")
    tracker.sample()
    print("other processes by CPU during the run (mean % of a core, last RSS, pid, command):")
    print("\n".join(f"  {line}" for line in tracker.top()))
    return result


if __name__ == "__main__":
    main()
