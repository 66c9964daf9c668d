"""End to end: producer -> RQ -> runner -> gateway -> scripted policy -> desktop env -> stream -> sink -> S3.

Every component is real and talks over real HTTP/Redis: a private redis-server, Xvfb desktops, two
scripted-policy replicas (the vLLM stand-in: no GPU here), the gateway, two forking RQ workers, the
sink writing to moto's S3 server (the MinIO stand-in). Tasks: four shell examples (one with a
deliberately wrong script), four driving real apps (LibreOffice Calc and Writer, Chrome, VLC) and
three real OSWorld tasks from ../shared/osworld_tasks.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from PIL import Image

from common.blob_keys import blob_key
from common.objectstore import S3Store
from common.polling import free_port, http_ok, wait_until
from common.task import OSWorldTask, load_task_file
from services.cli.stack import LocalStack, StackConfig
from services.desktop_env.processes import is_alive
from services.scripted_policy.scripts import MAX_HOLDS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SHARED_TASKS = ROOT.parent / "shared" / "osworld_tasks"
EXAMPLE_IDS = ["os-make-notes-dir", "os-todo-wrong-name", "files-upload-to-drive", "os-hello-file",
               # real apps, their files from examples/fixtures through the runners' URL cache
               "calc-total-row", "writer-sign-draft", "chrome-bookmark-page", "vlc-pause-video"]
OSWORLD_FILES = [
    "os__e0df059f-28a6-4169-924f-b9623e7184cc.json",
    "os__4783cc41-c03c-4e1b-89b4-50658f642bd5.json",
    "os__c288e301-e626-4b98-a1ab-159dcb162af5.json",
]


def _expected(task_id: str) -> dict[str, Any]:
    for path in (ROOT / "examples" / "scripts" / f"{task_id}.json",
                 ROOT / "examples" / "scripts" / "osworld" / f"{task_id}.json"):
        if path.exists():
            return dict(json.loads(path.read_text())["expected"])
    raise KeyError(task_id)




#: Scripts for the failure paths: replies that never parse, and a task that never finishes.
TEST_SCRIPTS = {
    "gibberish": {"instruction": "Answer in gibberish forever", "replies": ["I refuse to use the format."] * 10},
    "idle": {"instruction": "Keep pressing shift", "replies": ["Thought: again\nAction: press(key='shift')"] * 10},
    # scripts that wait on the screen for what never shows on the bare desktop: held, then played on
    "hold-change": {"instruction": "Wait for a window that never opens", "replies": [
        "Thought: the desktop settles after its reset\nAction: wait()\n\nwait()\n\nwait()",
        "Thought: shift opens nothing\nAction: press(key='shift')",
        {"reply": "Thought: give up\nAction: call_user()", "after_change": True}]},
    "hold-drawn": {"instruction": "Wait for a button that is never drawn", "replies": [
        {"reply": "Thought: give up\nAction: call_user()", "when_drawn": [4000, 3000, 4100, 3100]}]},  # off the screen
}


def _failure_task(task_id: str, instruction: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "instruction": instruction, "evaluator": {"func": "infeasible"}, "domain": "tests",
            **extra}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: str) -> Iterator[LocalStack]:
    scripts = tmp_path_factory.mktemp("scripts")
    shutil.copytree(ROOT / "examples" / "scripts", scripts, dirs_exist_ok=True)
    for name, script in TEST_SCRIPTS.items():
        (scripts / f"test-{name}.json").write_text(json.dumps(script))
    config = StackConfig(
        work_dir=tmp_path_factory.mktemp("stack"),
        scripts_dir=scripts,
        store_url="s3://trajectories",
        envs=2,
        runners=2,
        replicas=2,
        max_infra_retries=1,
        fixtures_dir=ROOT / "examples" / "fixtures",
        extra_env={"S3_ENDPOINT": s3_endpoint, "S3_ACCESS_KEY": "testing", "S3_SECRET_KEY": "testing",
                   "PRODUCER_RETRY_INTERVALS_S": "[0]"},
    )
    with LocalStack(config) as running:
        yield running


def _tasks() -> list[OSWorldTask]:
    examples = [load_task_file(next((ROOT / "examples" / "tasks").rglob(f"{i}.json"))) for i in EXAMPLE_IDS]
    return examples + [load_task_file(SHARED_TASKS / name) for name in OSWORLD_FILES]


def test_runs_flow_through_every_service_and_land_in_s3(stack: LocalStack, s3_endpoint: str) -> None:
    tasks = _tasks()
    client = httpx.Client(base_url=stack.producer_url, timeout=10)
    response = client.post("/v1/runs", json={"tasks": [t.to_json_dict() for t in tasks], "rollouts_per_task": 1,
                                             "max_steps": 10, "run_id": "e2e-run"})
    assert response.status_code == 201, response.text

    def finished() -> dict[str, Any] | None:
        run = client.get("/v1/runs/e2e-run").json()
        return run if run["finished"] else None

    run = wait_until(finished, 240, "the e2e run to finish", interval_s=0.5)
    by_task = {r["task_id"]: r for r in run["rollouts"]}
    for task in tasks:
        want = _expected(task.id)
        got = by_task[task.id]
        assert (got["status"], got["reward"]) == (want["status"], want["reward"]), got

    store = S3Store("trajectories", s3_endpoint, "testing", "testing")

    def manifests_written() -> bool:
        return all(store.list(f"e2e-run/{t.id}_0/manifest.json") for t in tasks)

    wait_until(manifests_written, 30, "the sink to write every manifest")
    prefix = "e2e-run/e0df059f-28a6-4169-924f-b9623e7184cc_0"
    files = {k.rsplit("/", 1)[1] for k in store.list(prefix + "/")}
    assert {"task_config.json", "image_0000.png", "step_0000.json", "final_messages.json", "reward.txt",
            "manifest.json"} <= files
    manifest = json.loads(store.get(f"{prefix}/manifest.json"))
    assert manifest["status"] == "completed" and manifest["reward"] == 1.0
    assert float(store.get(f"{prefix}/reward.txt").decode()) == 1.0
    task_config = json.loads(store.get(f"{prefix}/task_config.json"))
    assert task_config["id"] == "e0df059f-28a6-4169-924f-b9623e7184cc" and task_config["proxy"] is False
    step = json.loads(store.get(f"{prefix}/step_0000.json"))
    assert step["schema"] == "cua.step.v1" and step["actions"][0]["action_type"] == "hotkey"
    assert step["replica"] and step["token_ids"] and step["logprobs"]
    shot = store.get(f"{prefix}/image_0000.png")
    assert store.get(blob_key(shot)) == shot  # the runner put it under its content address; the sink copied it
    image = Image.open(io.BytesIO(shot))
    assert image.size == (1920, 1080)
    assert len(set(image.convert("L").resize((64, 36)).getdata())) > 1  # a real desktop, not a blank frame
    messages = json.loads(store.get(f"{prefix}/final_messages.json"))
    assert "image_0000.png" in json.dumps(messages) and "base64" not in json.dumps(messages)
    listed = client.get("/v1/runs/e2e-run/trajectories").json()["trajectories"]
    assert len(listed) == len(tasks)


def _wait_finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        run = client.get(f"/v1/runs/{run_id}").json()
        return run if run["finished"] else None

    return wait_until(finished, 240, f"run {run_id} to finish", interval_s=0.5)


def test_failure_statuses(stack: LocalStack) -> None:
    tasks = [
        _failure_task("gibberish", "Answer in gibberish forever"),
        _failure_task("idle", "Keep pressing shift"),
        _failure_task("no-script", "A task nobody scripted"),
        _failure_task("bad-setup", "Keep pressing shift", config=[{"type": "teleport", "parameters": {}}]),
    ]
    client = httpx.Client(base_url=stack.producer_url, timeout=10)
    rejected = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 3, "run_id": "e2e-fail"})
    assert rejected.status_code == 422 and "unsupported setup type 'teleport'" in rejected.json()["error"]
    response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 3, "run_id": "e2e-fail",
                                             "on_unsupported": "skip"})
    assert response.status_code == 201, response.text
    # OSWorld's UI-TARS harness: the last step becomes FAIL at max_steps (an explicit option, off by default)
    parity = client.post("/v1/runs", json={"tasks": [tasks[1]], "max_steps": 3, "run_id": "e2e-parity",
                                           "agent_options": {"fail_at_max_steps": True}})
    assert parity.status_code == 201, parity.text
    run = _wait_finished(client, "e2e-fail")
    by_task = {r["task_id"]: r for r in run["rollouts"]}
    # replies that never parse: re-sampled, then UI-TARS ends as DONE (as OSWorld's agent): never a FAIL, so
    # the infeasible task is scored 0
    assert (by_task["gibberish"]["status"], by_task["gibberish"]["reward"]) == ("parse_error", 0.0)
    assert "unparseable reply at step 0 after 3 samples" in by_task["gibberish"]["error"]
    assert "ended as the agent's DONE" in by_task["gibberish"]["error"]
    assert (by_task["idle"]["status"], by_task["idle"]["num_steps"]) == ("truncated", 3)
    assert by_task["idle"]["reward"] == 0.0  # infeasible task, no FAIL: evaluated, no forced failure
    assert (by_task["no-script"]["status"], by_task["no-script"]["reward"]) == ("agent_fail", 1.0)
    bad = by_task["bad-setup"]
    assert bad["status"] == "unsupported" and bad["reward"] is None and bad["num_steps"] == 0
    assert "teleport" in bad["error"]  # recorded by the producer, never run
    assert run["success_rate"] == pytest.approx(1 / 3)  # unsupported has no reward
    [forced] = _wait_finished(client, "e2e-parity")["rollouts"]
    assert (forced["status"], forced["reward"], forced["num_steps"]) == ("agent_fail", 1.0, 3)
    assert "taken as FAIL (fail_at_max_steps)" in forced["error"]
    envs = client.get("/v1/envs").json()
    wait_until(lambda: client.get("/v1/envs").json()["idle"] == envs["total"], 20, "every env released")


def test_scripts_waiting_on_the_screen_hold_on_the_real_screenshots(stack: LocalStack) -> None:
    """The policy reads the screenshots the runner sends through the gateway: a reply waiting for a change that
    never comes (shift changes nothing) or for a box that is never drawn (off the screen) is held
    `MAX_HOLDS` times, each hold a runner step, then given."""
    tasks = [_failure_task("hold-change", "Wait for a window that never opens"),
             _failure_task("hold-drawn", "Wait for a button that is never drawn")]
    client = httpx.Client(base_url=stack.producer_url, timeout=10)
    response = client.post("/v1/runs", json={"tasks": tasks, "max_steps": 10, "run_id": "e2e-hold"})
    assert response.status_code == 201, response.text
    steps = {r["task_id"]: (r["status"], r["num_steps"]) for r in _wait_finished(client, "e2e-hold")["rollouts"]}
    assert steps == {"hold-change": ("agent_fail", 2 + MAX_HOLDS + 1), "hold-drawn": ("agent_fail", MAX_HOLDS + 1)}


def test_cli_submit_and_stats(stack: LocalStack, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    task_file = next((ROOT / "examples" / "tasks").rglob("os-python4-default.json"))
    submit = subprocess.run([sys.executable, "-m", "services.cli", "submit", str(task_file), "--producer",
                             stack.producer_url, "--run-id", "e2e-cli", "--rollouts", "2"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert submit.returncode == 0, submit.stderr
    assert submit.stdout.strip().splitlines()[-1] == "e2e-cli"
    watch = subprocess.run([sys.executable, "-m", "services.cli", "watch", "e2e-cli", "--producer",
                            stack.producer_url, "--timeout", "120"], capture_output=True, text=True, env=env,
                           timeout=180)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    stats = subprocess.run([sys.executable, "-m", "services.cli", "stats", "e2e-cli", "--producer",
                            stack.producer_url], capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                           timeout=60)
    assert stats.returncode == 0 and stats.stdout.count("agent_fail") == 2 and "100.0%" in stats.stdout
    bad = subprocess.run([sys.executable, "-m", "services.cli", "submit", str(tmp_path), "--producer",
                          stack.producer_url], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "no task JSON files found" in bad.stderr


FAST_TASKS = sorted((ROOT / "examples" / "tasks" / "fast").glob("*.json"))


def test_fast_policy_without_wait_after_opening_a_window(stack: LocalStack) -> None:
    """Zero-latency scripted replies that type right after opening (or closing) a terminal: with the
    default settings, the runner waits for the screen to settle after each action, so every rollout
    ends as its script expects."""
    tasks = [load_task_file(path) for path in FAST_TASKS]
    assert len(tasks) >= 4 and all("wait()" not in json.dumps(json.loads(
        (ROOT / "examples" / "scripts" / f"{t.id}.json").read_text())["replies"]) for t in tasks)
    client = httpx.Client(base_url=stack.producer_url, timeout=10)
    response = client.post("/v1/runs", json={"tasks": [t.to_json_dict() for t in tasks], "rollouts_per_task": 3,
                                             "max_steps": 10, "run_id": "e2e-fast"})
    assert response.status_code == 201, response.text
    run = _wait_finished(client, "e2e-fast")
    outcomes = [(r["task_id"], r["rollout_index"], r["status"], r["reward"]) for r in run["rollouts"]]
    assert all((status, reward) == ("completed", 1.0) for _, _, status, reward in outcomes), outcomes
    assert len(outcomes) == 3 * len(tasks)


def _descendants(pid: int) -> set[int]:
    return {child.pid for child in psutil.Process(pid).children(recursive=True) if is_alive(child.pid)}


def test_up_stops_every_process_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "up", "--envs", "1", "--runners", "1", "--replicas", "1",
         "--port", str(port), "--work-dir", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # `up` prints "stack up" once every service is healthy
            if b"stack up" in line:
                break
        assert http_ok(f"http://127.0.0.1:{port}/healthz")
        started = _descendants(process.pid)
        assert len(started) >= 6  # redis, env, policy, gateway, producer, sink, runner
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        wait_until(lambda: not any(is_alive(pid) for pid in started), 30, "no orphan left")
    finally:
        if process.poll() is None:
            process.kill()
