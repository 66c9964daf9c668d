"""Trainer interface end to end on the local stack (real desktops, Redis, gateway, scripted policy
replica as the vLLM stand-in, runners, sink): the Python client sees every rollout finish once, and
`cua-rollout export` writes step and trajectory records that read back with pandas and match the
stored steps."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pandas as pd
import pytest
from playwright.sync_api import sync_playwright
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from common.blob_keys import blob_key
from common.objectstore import LocalDirStore
from common.polling import wait_until
from common.runstate import RolloutRecord
from common.task import load_task_file
from cua_rollout.client import RolloutClient
from services.cli.main import app
from services.cli.stack import LocalStack, StackConfig
from services.runner.osworld import metrics
from services.runner.osworld.rescore import rescore_run

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"  # Debian's chromium (setup.sh); playwright downloads no browser
FAST_TASKS = sorted((ROOT / "examples" / "tasks" / "fast").glob("*.json"))[:2]


#: A scripted episode with pointer actions, for the trajectory viewer's markers.
POINTER_SCRIPT = {"instruction": "Point at things on the desktop", "replies": [
    "Thought: I click near the top left.\nAction: click(start_box='(200,150)')",
    "Thought: I drag across the screen.\nAction: drag(start_box='(300,400)', end_box='(700,600)')",
    "Thought: I type a note.\nAction: type(content='hello viewer')",
    "Thought: Done.\nAction: finished(content='done')"]}


#: A task whose outcome is a coin flip (bash's $RANDOM): its results are mixed, so adaptive runs extend it.
COIN_SCRIPT = {"instruction": "Flip a coin into ~/coin.txt", "replies": [
    "Thought: A terminal.\nAction: hotkey(key='ctrl alt t')",
    "Thought: Flip.\nAction: type(content='echo $((RANDOM % 2)) > ~/coin.txt\\n')",
    "Thought: Done.\nAction: finished(content='done')"]}
COIN_TASK = {"id": "coin", "instruction": COIN_SCRIPT["instruction"], "domain": "tests", "evaluator": {
    "func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "cat ~/coin.txt", "shell": True},
    "expected": {"type": "rule", "rules": {"include": ["1"], "exclude": ["No such file"]}}}}


def _wait_persisted(store: Path, rollouts: list[RolloutRecord]) -> None:
    """The sink writes asynchronously: wait for every finished rollout's manifest."""
    wait_until(lambda: all((store / str(r.trajectory) / "manifest.json").is_file() for r in rollouts), 60,
               "the sink to persist every manifest")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    scripts = tmp_path_factory.mktemp("scripts")
    shutil.copytree(ROOT / "examples" / "scripts", scripts, dirs_exist_ok=True)
    (scripts / "test-pointer.json").write_text(json.dumps(POINTER_SCRIPT))
    (scripts / "test-coin.json").write_text(json.dumps(COIN_SCRIPT))
    config = StackConfig(work_dir=tmp_path_factory.mktemp("results-stack"), scripts_dir=scripts,
                         envs=2, runners=2, replicas=1)
    with LocalStack(config) as running:
        yield running


def test_client_streams_each_rollout_once_and_export_matches_the_stored_steps(
        stack: LocalStack, tmp_path: Path) -> None:
    tasks = [load_task_file(path) for path in FAST_TASKS]
    with RolloutClient(stack.producer_url) as client:
        client.submit(tasks, rollouts_per_task=2, run_id="results-e2e", max_steps=10)
        finished = [r.rollout_id for r in client.iter_finished("results-e2e")]
        summary = client.wait("results-e2e", timeout_s=60)
    assert sorted(finished) == sorted(r.rollout_id for r in summary.rollouts)  # each once, all of them
    assert len(finished) == 2 * len(tasks)

    store = Path(stack.store_url.removeprefix("file://"))
    _wait_persisted(store, summary.rollouts)
    stored_steps = {p: json.loads(p.read_text()) for p in sorted(store.glob("results-e2e/*/step_*.json"))}
    assert stored_steps
    runner = CliRunner()
    for fmt in ("jsonl", "parquet"):
        out = tmp_path / f"steps.{fmt}"
        result = runner.invoke(app, ["export", "results-e2e", "--format", fmt, "--out", str(out),
                                     "--producer", stack.producer_url])
        assert result.exit_code == 0, result.output
        frame = pd.read_json(out, lines=True) if fmt == "jsonl" else pd.read_parquet(out)
        assert len(frame) == len(stored_steps)
        for row in frame.to_dict("records"):
            trajectory = store / row["screenshot"].rsplit("/", 1)[0]
            step = stored_steps[trajectory / f"step_{int(row['step']):04d}.json"]
            assert row["response"] == step["response"]
            assert row["group_id"] == f"results-e2e/{row['task_id']}"
            assert (store / row["screenshot"]).is_file()
            # the runner put it under its content address; the sink's copy is the same bytes
            shot = (store / row["screenshot"]).read_bytes()
            assert shot.startswith(b"\x89PNG") and (store / blob_key(shot)).read_bytes() == shot
            reward_file = trajectory / "reward.txt"
            assert row["reward"] == (float(reward_file.read_text()) if reward_file.exists() else None)
            manifest = json.loads((trajectory / "manifest.json").read_text())
            assert (row["status"], row["rollout_id"]) == (manifest["status"], manifest["rollout_id"])
    out = tmp_path / "trajectories.parquet"
    result = runner.invoke(app, ["export", "results-e2e", "--format", "parquet", "--level", "trajectory",
                                 "--out", str(out), "--producer", stack.producer_url])
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out)
    assert sorted(frame["rollout_id"]) == sorted(finished)
    assert sum(len(s) for s in frame["screenshots"]) == len(stored_steps)


def test_export_of_an_unknown_run_or_format_fails_with_exit_code_2(stack: LocalStack) -> None:
    runner = CliRunner()
    bad_format = runner.invoke(app, ["export", "x", "--format", "csv", "--producer", stack.producer_url])
    assert bad_format.exit_code == 2 and "--format must be jsonl or parquet" in bad_format.output
    unknown = runner.invoke(app, ["export", "no-such-run", "--producer", stack.producer_url])
    assert unknown.exit_code == 2 and "run 'no-such-run' not found" in unknown.output


def test_rescore_after_a_changed_metric_writes_a_new_score_version(
        stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = [load_task_file(path) for path in FAST_TASKS]
    with RolloutClient(stack.producer_url) as client:
        client.submit(tasks, rollouts_per_task=1, run_id="rescore-e2e", max_steps=10)
        run = client.wait("rescore-e2e", timeout_s=300)
    store_dir = Path(stack.store_url.removeprefix("file://"))
    _wait_persisted(store_dir, run.rollouts)
    store = LocalDirStore(store_dir)
    scored = {r.trajectory: r.reward for r in run.rollouts if r.reward is not None}
    assert scored and all(reward == 1.0 for reward in scored.values())
    same = rescore_run(store, "rescore-e2e")  # the same metrics on the recorded inputs: same rewards
    assert {r.trajectory: (r.version, r.reward, r.changed) for r in same} == {t: (2, 1.0, False) for t in scored}
    # a "checker fix" that changes the metric's verdict shows without re-running any episode
    monkeypatch.setitem(metrics.METRICS, "check_include_exclude", lambda result, rules=None: 0.0)
    fixed = rescore_run(store, "rescore-e2e")
    assert {(r.version, r.previous_reward, r.reward) for r in fixed} == {(3, 1.0, 0.0)}
    for trajectory in scored:
        document = json.loads((store_dir / trajectory / "score_v3.json").read_text())
        assert (document["reward"], document["previous_reward"]) == (0.0, 1.0)
        assert float((store_dir / trajectory / "reward.txt").read_text()) == 1.0  # version 1 kept


def test_trajectory_viewer_draws_each_action_at_its_screen_coordinates_in_headless_chromium(
        stack: LocalStack) -> None:
    task = {"id": "pointer", "instruction": POINTER_SCRIPT["instruction"], "evaluator": {"func": "infeasible"},
            "domain": "tests"}
    with RolloutClient(stack.producer_url) as client:
        client.submit([task], run_id="viewer-e2e", max_steps=6)
        run = client.wait("viewer-e2e", timeout_s=300)
    store = Path(stack.store_url.removeprefix("file://"))
    _wait_persisted(store, run.rollouts)
    trajectory = str(run.rollouts[0].trajectory)
    expected = []  # (kind, x, y) of every pointer action, as the runner executed it (screen pixels)
    for step_file in sorted((store / trajectory).glob("step_*.json")):
        for action in json.loads(step_file.read_text())["actions"]:
            inputs = action["inputs"]
            if action["action_type"] == "click":
                expected.append(("click", inputs["x"], inputs["y"]))
            elif action["action_type"] == "drag":
                expected.append(("drag", inputs["x1"], inputs["y1"]))
    assert [kind for kind, _, _ in expected] == ["click", "drag"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{stack.producer_url}/ui/trajectories/{trajectory}")
        page.wait_for_function("[...document.querySelectorAll('.shot svg')].every(s => s.getAttribute('viewBox'))")
        drawn = page.evaluate("""() => [...document.querySelectorAll('circle.marker')].map(c => {
            const img = c.closest('.shot').querySelector('img').getBoundingClientRect();
            const box = c.getBoundingClientRect();
            const shot = c.closest('.shot').querySelector('img');
            return {kind: c.classList[1], x: (box.x + box.width / 2 - img.x) / img.width * shot.naturalWidth,
                    y: (box.y + box.height / 2 - img.y) / img.height * shot.naturalHeight};
        })""")
        typed = page.locator(".typed code").all_inner_texts()
        overview = page.goto(f"{stack.producer_url}/ui")
        assert overview is not None and overview.status == 200
        assert page.locator("#runs a", has_text="viewer-e2e").count() == 1
        run_page = page.goto(f"{stack.producer_url}/ui/runs/viewer-e2e")
        assert run_page is not None and run_page.status == 200 and page.locator("#rollouts tr").count() == 2
        browser.close()
    assert [d["kind"] for d in drawn] == [kind for kind, _, _ in expected]
    for marker, (_, x, y) in zip(drawn, expected, strict=True):  # where it is rendered, in screen pixels
        assert abs(marker["x"] - x) <= 3 and abs(marker["y"] - y) <= 3, (marker, x, y)
    assert "type: hello viewer" in typed


def test_adaptive_run_on_examples_stops_uniform_tasks_and_extends_mixed_ones(stack: LocalStack) -> None:
    policy = {"min_rollouts": 2, "max_rollouts": 6, "batch": 2}
    with RolloutClient(stack.producer_url) as client:
        client.submit([load_task_file(FAST_TASKS[0]), COIN_TASK], run_id="adaptive-e2e", max_steps=6, adaptive=policy)
        run = client.wait("adaptive-e2e", timeout_s=900)
    by_task: dict[str, list[float | None]] = {}
    for record in sorted(run.rollouts, key=lambda r: r.rollout_index):
        by_task.setdefault(record.task_id, []).append(record.reward)
    assert by_task[FAST_TASKS[0].stem] == [1.0, 1.0]  # solved every time: no more samples
    coin = by_task["coin"]
    assert len(coin) in (2, 4, 6) and set(coin) <= {0.0, 1.0}
    for end in range(2, len(coin), 2):  # every batch but the last was added after mixed results
        assert len(set(coin[:end])) == 2, coin
    assert len(coin) == 6 or len(set(coin)) == 1, coin  # it stopped at the cap or on uniform results


def _scrape(url: str) -> dict[str, float]:
    """Prometheus text exposition -> `name{labels}` -> value (samples summed when repeated)."""
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            key = f"{sample.name}{{{labels}}}"
            samples[key] = samples.get(key, 0.0) + sample.value
    return samples


def test_grafana_dashboard_reads_metrics_the_services_export(stack: LocalStack) -> None:
    tasks = [load_task_file(path) for path in FAST_TASKS]
    with RolloutClient(stack.producer_url) as client:
        client.submit(tasks, run_id="metrics-e2e", max_steps=10)
        run = client.wait("metrics-e2e", timeout_s=300)
    runner_ports = [p.env["RUNNER_METRICS_PORT"] for p in stack.processes if "RUNNER_METRICS_PORT" in p.env]
    exported: dict[str, float] = {}
    for url in [f"{stack.producer_url}/metrics", f"{stack.gateway_url}/metrics",
                *(f"http://127.0.0.1:{port}/metrics" for port in runner_ports)]:
        for key, value in _scrape(url).items():
            exported[key] = exported.get(key, 0.0) + value
    names = {key.split("{", 1)[0] for key in exported}
    dashboard = json.loads((ROOT / "deploy" / "monitoring" / "grafana-dashboard.json").read_text())
    used = {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in re.findall(r"\b(?:cua|gateway)_[a-z_]+", target["expr"])}
    assert used and used <= names, f"dashboard queries metrics nobody exports: {sorted(used - names)}"
    # counted in the work-horses (one process per rollout), summed by the runners' metrics ports
    steps = sum(r.num_steps for r in run.rollouts)
    assert exported["cua_runner_steps_total{}"] >= steps > 0
    assert exported['cua_runner_rollouts_total{status="completed"}'] >= len(tasks)
    assert exported['cua_envs{state="idle"}'] + exported['cua_envs{state="leased"}'] == 2
