"""The live dashboard in a real browser (Playwright driving Debian's Chromium) against the local stack (real
desktops, Redis, gateway, scripted policy replica, runners, sink): the wall shows a running rollout's
screenshot and opens it live, the run page updates without a reload as its rollouts finish and plots them,
the overview plots the last hour, a task's group shows its rollouts, and the trajectory page steps with the
keyboard. Each page's screenshot goes to the test's artifacts (`CUA_TEST_ARTIFACTS`, default
`.cua/test-artifacts/dashboard`); with `CUA_DOCS_SCREENSHOTS=1` also to docs/ (docs/dashboard.md shows them)."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from cua_rollout.client import RolloutClient
from services.cli.stack import LocalStack, StackConfig

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"  # Debian's chromium (setup.sh); playwright downloads no browser
ARTIFACTS = Path(os.environ.get("CUA_TEST_ARTIFACTS", ROOT / ".cua" / "test-artifacts")) / "dashboard"

#: An episode of several pointer steps (the policy answers each after POLICY_LATENCY_MS), so it runs long
#: enough to be seen on the wall.
WALL_SCRIPT = {"instruction": "Walk around the desktop for the wall", "replies": [
    "Thought: I click the top left.\nAction: click(start_box='(200,150)')",
    "Thought: I drag across.\nAction: drag(start_box='(300,400)', end_box='(700,600)')",
    "Thought: I click the middle.\nAction: click(start_box='(960,540)')",
    "Thought: I type a note.\nAction: type(content='hello wall')",
    "Thought: I click again.\nAction: click(start_box='(400,300)')",
    "Thought: I click once more.\nAction: click(start_box='(800,500)')",
    "Thought: Done.\nAction: finished(content='done')"]}
TASK = {"id": "wall-walk", "instruction": WALL_SCRIPT["instruction"], "evaluator": {"func": "infeasible"},
        "domain": "tests"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    scripts = tmp_path_factory.mktemp("scripts")
    shutil.copytree(ROOT / "examples" / "scripts", scripts, dirs_exist_ok=True)
    (scripts / "test-wall.json").write_text(json.dumps(WALL_SCRIPT))
    config = StackConfig(work_dir=tmp_path_factory.mktemp("dashboard-stack"), scripts_dir=scripts, envs=2,
                         runners=2, replicas=1, policy_latency_ms=700,
                         extra_env={"PRODUCER_LIVE_INTERVAL_S": "0.5", "PRODUCER_SERIES_INTERVAL_S": "2"})
    with LocalStack(config) as running:
        yield running


def _shot(page: Page, name: str) -> None:
    """The page's screenshot in the artifacts (and in docs/ with CUA_DOCS_SCREENSHOTS=1)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"dashboard-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    if os.environ.get("CUA_DOCS_SCREENSHOTS") == "1":
        shutil.copy(path, ROOT / "docs" / path.name)


def test_dashboard_pages_update_live_in_headless_chromium(stack: LocalStack) -> None:
    url = stack.producer_url
    with RolloutClient(url) as client, sync_playwright() as playwright:
        client.submit([TASK], rollouts_per_task=2, run_id="dashboard-e2e", max_steps=10)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        run_page = context.new_page()
        run_page.goto(f"{url}/ui/runs/dashboard-e2e")
        run_page.evaluate("window.__loadedOnce = true")  # gone if the page reloads

        wall = context.new_page()
        wall.goto(f"{url}/ui/wall")
        # a running rollout's screenshot (its latest step) with its last action, on the wall
        wall.wait_for_function("""[...document.querySelectorAll('.tile[data-rollout] img')]
            .some(i => i.complete && i.naturalWidth > 0)""", timeout=120_000)
        tile = wall.locator(".tile[data-rollout]").first
        assert "wall-walk" in tile.inner_text() and "policy" in tile.inner_text()
        wall.wait_for_function("document.querySelector('.tile[data-rollout] .last-action')?.textContent.includes('(')")
        _shot(wall, "wall")
        tile.click()  # opens that rollout live
        wall.wait_for_url("**/ui/trajectories/dashboard-e2e/wall-walk_*")
        if wall.locator("#steps").get_attribute("data-live") == "true":
            wall.evaluate("window.__loadedOnce = true")
            shown = wall.locator(".step").count()
            wall.wait_for_function(f"document.querySelectorAll('.step').length > {shown}", timeout=120_000)
            assert wall.evaluate("window.__loadedOnce") is True  # steps were appended without a reload
        wall.wait_for_function("document.getElementById('steps').dataset.live === 'false'", timeout=120_000)
        assert "status" in wall.locator("#outcome").inner_text()  # the outcome replaced "running"

        # the run page: the rollouts finish and the page follows without a reload, with data in its plots
        run_page.wait_for_function("document.getElementById('done-count').textContent === '2/2'", timeout=180_000)
        assert run_page.evaluate("window.__loadedOnce") is True
        run_page.wait_for_function("window.cuaPlots['plot-completed'].data[0].length === 2")
        assert run_page.evaluate("window.cuaPlots['plot-rate'].data[1].length") == 2
        assert run_page.locator("#rollouts tr").count() == 3 and run_page.locator("#groups a").count() == 1
        _shot(run_page, "run")

        overview = context.new_page()
        overview.goto(f"{url}/ui")
        assert overview.locator("#runs a", has_text="dashboard-e2e").count() == 1
        overview.wait_for_function("window.cuaPlots['plot-steps'] && window.cuaPlots['plot-steps'].data[0].length >= 3",
                                   timeout=30_000)
        steps_plotted = overview.evaluate("Math.max(...window.cuaPlots['plot-steps'].data[1])")
        assert steps_plotted > 0  # the steps of the run, per second
        _shot(overview, "overview")

        run_page.locator("#groups a").first.click()
        run_page.wait_for_url("**/group?task=wall-walk")
        assert run_page.locator("#group .tile").count() == 2
        run_page.wait_for_function("window.cuaPlots['plot-group'].data[1].length === 2")
        _shot(run_page, "group")

        trajectory = context.new_page()
        record = client.wait("dashboard-e2e", timeout_s=10).rollouts[0]
        trajectory.goto(f"{url}/ui/trajectories/{record.trajectory}")
        assert not trajectory.locator("details.code").first.evaluate("d => d.open")  # code folded away
        current = "document.querySelector('.step.current')?.dataset.step"
        for key, expected in (("ArrowRight", "0"), ("ArrowRight", "1"), ("j", "2"), ("ArrowLeft", "1"), ("k", "0")):
            trajectory.keyboard.press(key)
            assert trajectory.evaluate(current) == expected, key
        assert "click(x=" in trajectory.locator(".step .action").first.inner_text()
        assert trajectory.locator(".timebar .model_ms").first.evaluate("s => parseFloat(s.style.width)") > 0
        _shot(trajectory, "trajectory")
        href = trajectory.locator("#download").get_attribute("href")
        browser.close()
    archive = zipfile.ZipFile(io.BytesIO(httpx.get(f"{url}{href}", timeout=30).content))
    assert "manifest.json" in archive.namelist() and "image_0000.png" in archive.namelist()
