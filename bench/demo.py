"""`make demo` end to end, before and after, on the same tasks, side by side in one run (issue 13).

Issue 13 measured `make demo` at ~35 s on this machine, on main as it was then (`--before`, default
`befe9ff`: its `examples/tasks` held 11 tasks of the domains `os`, `files` and `editor`). The demo has
grown since (38 tasks, 19 of them real OSWorld ones on real apps), so its whole run is no measure
of the same work. This bench times, alternately and `--repeat` times each, `--rollouts` rollouts per
task (default 2, the before demo's own default):

- **before**: the `--before` commit, checked out into a temporary git worktree, running its own
  `python -m services.cli demo` (with this checkout's `.venv`: the same packages for both);
- **after**: this checkout's `python -m services.cli demo --tasks <file> ...` with exactly the task
  files the `--before` commit's demo ran (same ids), its own defaults (4 envs and 4 runners since
  f80c745, 2 before) and its own `examples/scripts`: since f80c745 the `os`, `files` and `editor`
  scripts leave out the `wait()` steps that the runner's screen settle covers (9 of the 11 scripts;
  bench/README.md gives the figure with the old scripts too).

Each is timed from the command's start to its exit, as a user timing `make demo` would (stack start,
the run, the export, shutdown); both must exit 0 (every rollout as its script expects). Prints each
run's seconds, the medians and before/after (target >= 1.5x). Needs the git history (a clone, not
an archive). `python bench/demo.py [--before REV] [--repeat 1]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
#: main when issue 13 measured `make demo` at ~35 s.
ISSUE_COMMIT = "befe9ff"
TASKS_DIR = "examples/tasks"


def tasks_at(rev: str) -> list[str]:
    """Paths (relative to the repository) of the task files under examples/tasks at `rev`.
    Raises: CalledProcessError for an unknown revision."""
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev, TASKS_DIR],
                             check=True, capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if line.endswith(".json")]


def timed_demo(cwd: Path, extra: list[str], work_dir: Path, log: Path) -> float:
    """Run `python -m services.cli demo` in `cwd`; returns its wall time in seconds.
    Raises: RuntimeError (naming the log) when it exits non-zero."""
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run([str(PYTHON), "-m", "services.cli", "demo", "--work-dir", str(work_dir), *extra],
                              cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"demo in {cwd} exited {code}: see {log}")
    return seconds


def main(argv: list[str] | None = None) -> None:
    """Parse flags, run before and after alternately, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=ISSUE_COMMIT, help="the commit to compare with")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each")
    parser.add_argument("--rollouts", type=int, default=2, help="rollouts per task (the before demo's default: 2)")
    args = parser.parse_args(argv)

    task_files = tasks_at(args.before)
    missing = [path for path in task_files if not (ROOT / path).is_file()]
    if missing:
        sys.exit(f"task files of {args.before} missing here: {missing}")
    common = ["--rollouts", str(args.rollouts)]
    after_args = common + [arg for path in task_files for arg in ("--tasks", path)]
    times: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="cua-bench-demo-") as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(old), args.before],
                       check=True)
        (old / ".venv").symlink_to(ROOT / ".venv")
        try:
            for i in range(args.repeat):
                for name, cwd, extra in (("before", old, common), ("after", ROOT, after_args)):
                    run_dir = Path(tmp) / f"{name}-{i}"
                    seconds = timed_demo(cwd, extra, run_dir, Path(tmp).parent / f"cua-bench-demo-{name}-{i}.log")
                    times[name].append(seconds)
                    print(f"{name} run {i + 1}: {seconds:.1f} s", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    before, after = statistics.median(times["before"]), statistics.median(times["after"])
    print(f"\n{len(task_files)} tasks ({args.before}'s examples/tasks), {args.rollouts} rollouts each")
    print("| demo | runs s | median s |\n|---|---|---|")
    for name, label, median in (("before", f"before {args.before}", before), ("after", "after (this checkout)", after)):
        print(f"| {label} | {' / '.join(f'{t:.1f}' for t in times[name])} | {median:.1f} |")
    print(f"before/after: {before / after:.2f}x (target >= 1.5x)")


if __name__ == "__main__":
    main()
