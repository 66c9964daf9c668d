"""Make the desktop gallery (`docs/desktop/`): the step-0 screenshot of one OSWorld example per domain, from a
real run, so anyone can compare the first screen an agent gets here with OSWorld's VM at a glance.

`python scripts/desktop_gallery.py [--out docs/desktop] [--width 960]` starts a local stack (`LocalStack`: real
desktops, runners, gateway with the scripted policy, sink), runs the first example task of each domain under
`examples/tasks/osworld/` for one step, and writes `<domain>.png` (the step-0 screenshot scaled to `--width`
pixels) and `README.md` (task, instruction, the wait before the first observation and its cause, the windows on
the screen) into `--out`. Takes a few minutes (each domain's app starts once). Exit code 1 when a rollout has no
step 0.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from PIL import Image

from common.polling import wait_until
from common.task import load_task_file
from services.cli.stack import LocalStack, StackConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks" / "osworld"
RUN_ID = "desktop-gallery"


def first_task_per_domain() -> list[Path]:
    """The first (by name) example task file of each domain directory."""
    return [sorted(domain.glob("*.json"))[0] for domain in sorted(EXAMPLES.iterdir()) if domain.is_dir()]


def run_step_0(task_files: list[Path], work_dir: Path) -> tuple[dict[str, Any], Path]:
    """Run each task for one step on a local stack; returns the finished run and the trajectory store."""
    config = StackConfig(work_dir=work_dir, scripts_dir=ROOT / "examples" / "scripts", envs=4, runners=4,
                         replicas=1, fixtures_dir=ROOT / "examples" / "fixtures")
    tasks = [load_task_file(path, path.parent.name).to_json_dict() for path in task_files]
    with LocalStack(config) as stack, httpx.Client(base_url=stack.producer_url, timeout=30) as client:
        response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 1, "run_id": RUN_ID})
        response.raise_for_status()

        def finished() -> dict[str, Any] | None:
            run: dict[str, Any] = client.get(f"/v1/runs/{RUN_ID}").json()
            return run if run["finished"] else None

        run = wait_until(finished, 120 + 120 * len(tasks), "the gallery run to finish", interval_s=1.0)
        store = Path(stack.store_url.removeprefix("file://"))
        wait_until(lambda: all((store / r["trajectory"] / "manifest.json").is_file() for r in run["rollouts"]), 60,
                   "the sink to persist every manifest")
        return run, store


def _window_text(windows: list[dict[str, Any]] | None) -> str:
    if not windows:
        return "-"
    return "; ".join(f"{w['title']} ({w['width']}x{w['height']}{', maximised' if w.get('maximized') else ''})"
                     for w in windows)


def write_gallery(run: dict[str, Any], store: Path, task_files: list[Path], out: Path, width: int) -> list[str]:
    """Write the screenshots and README.md into `out`; returns the domains whose step 0 is missing."""
    out.mkdir(parents=True, exist_ok=True)
    rows, missing = [], []
    for path in task_files:
        domain, task = path.parent.name, load_task_file(path, path.parent.name)
        rollout = next(r for r in run["rollouts"] if r["task_id"] == task.id)
        trajectory = store / rollout["trajectory"]
        if not (trajectory / "step_0000.json").is_file():
            missing.append(domain)
            continue
        step = json.loads((trajectory / "step_0000.json").read_text())
        with Image.open(io.BytesIO((trajectory / "image_0000.png").read_bytes())) as image:
            size = (width, round(image.height * width / image.width))
            scaled = image.convert("RGB").resize(size, Image.Resampling.LANCZOS)
        scaled.save(out / f"{domain}.png", optimize=True)
        timings = step["timings"]
        rows.append(f"### {domain}\n\n`{task.id}`: {task.instruction}\n\n"
                    f"First observation after {timings.get('first_screen_ms', 0) / 1000:.1f} s "
                    f"(`{timings.get('first_screen_cause')}`); windows: {_window_text(step.get('windows'))}.\n\n"
                    f"![{domain}]({domain}.png)\n")
    (out / "README.md").write_text(
        "# The first screen an agent sees, per OSWorld domain\n\n"
        "Made by `scripts/desktop_gallery.py` from a real run (`make gallery`): the step-0 screenshot of the first "
        "example task of each domain in `examples/tasks/osworld/`, taken once the windows its setup opened were "
        "drawn (`services/runner/first_screen.py`). See `docs/desktop.md`.\n\n" + "\n".join(rows))
    return missing


def main() -> int:
    """Run and write the gallery; exit code as in the module doc."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "desktop")
    parser.add_argument("--width", type=int, default=960)
    args = parser.parse_args()
    task_files = first_task_per_domain()
    with tempfile.TemporaryDirectory(prefix="desktop-gallery-", dir=ROOT.parent) as work:
        run, store = run_step_0(task_files, Path(work))
        missing = write_gallery(run, store, task_files, args.out, args.width)
    if missing:
        print(f"no step 0 for {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"gallery of {len(task_files) - len(missing)} domains in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
