"""`cua-rollout audit` (services/cli/audit.py, commands/audit.py): OSWorld tasks run once through the real
stack (Redis, producer, gateway, scripted policy, runner, Xvfb desktops, sink) with the do-nothing agents
(noop, garbage, stall: one run each in one stack); every task set up and scored, and doing nothing earns
nothing, infeasible tasks included (issues 25 and 36)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.cli import audit
from services.runner.agent.base import ParseError
from services.runner.agent.registry import AGENTS, agent_options

ROOT = Path(__file__).resolve().parents[2]
NOGDRIVE = ROOT.parent / "shared" / "osworld" / "test_nogdrive.json"
INFEASIBLE = "c288e301-e626-4b98-a1ab-159dcb162af5"
needs_index = pytest.mark.skipif(not NOGDRIVE.is_file(), reason="OSWorld's index is not in ../shared/osworld")


@needs_index
def test_selection_takes_offline_tasks_and_gives_the_others_reasons() -> None:
    selection = audit.select_tasks(NOGDRIVE, per_domain=1)
    domains = [task.effective_domain for task in selection.audited]
    assert len(domains) == len(set(domains)) == 10
    assert "needs online_setup" in selection.skipped["3299584d-8f11-4457-bf4c-ce98f7600250"]["reason"]
    assert "needs online_task" in selection.skipped["bba3381f-b5eb-4439-bd9e-80c22218d5a7"]["reason"]
    only = audit.select_tasks(NOGDRIVE, only=["937087b6"])
    assert [t.id for t in only.audited] == ["937087b6-f668-4ba6-9110-60682ee33441"]


def _outcome(task_id: str, status: str, reward: float | None) -> audit.TaskOutcome:
    return audit.TaskOutcome(task_id, "os", status, reward, None, status != "setup_error", reward is not None, True)


def test_report_counts_and_explanations(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = [_outcome("a", "completed", 0.0), _outcome("b", "completed", 1.0)]
    report = audit.AuditReport("noop", outcomes)
    assert report.summary_line() == "audit: set up 2/2, scored 2/2, stored 2/2, noop nonzero 1" and not report.passed()
    assert report.explanation(outcomes[1]) is None  # a start-state difference: fixed, never explained
    monkeypatch.setitem(audit.KNOWN_NOOP_NONZERO, "b", "checker bug (upstream issue)")
    assert report.passed() and report.explanation(outcomes[1]) == "OSWorld checker bug: checker bug (upstream issue)"
    broken = audit.AuditReport("noop", [_outcome("a", "setup_error", None)])
    assert broken.summary_line() == "audit: set up 0/1, scored 0/1, stored 1/1, noop nonzero 0" and not broken.passed()
    assert audit.AuditReport("fail", [_outcome("b", "agent_fail", 1.0)]).passed()  # infeasible task paid for FAIL
    lost = dataclasses.replace(outcomes[0], stored=False)  # scored, but the sink never wrote its manifest
    unstored = audit.AuditReport("noop", [lost])
    assert unstored.summary_line() == "audit: set up 1/1, scored 1/1, stored 0/1, noop nonzero 0"
    assert not unstored.passed() and unstored.problems() == [lost]
    assert audit.stored_task_ids([{"trajectory": "run-1/a_0", "manifest": {"status": "completed"}},
                                  {"trajectory": "run-1/b_c_0", "manifest": {}}, {"trajectory": "run-1/d_0"}]) == {"a"}
    for agent, status in (("garbage", "parse_error"), ("stall", "truncated")):  # do nothing: must earn nothing
        paid = audit.AuditReport(agent, [_outcome("c", status, 1.0)])
        assert paid.summary_line().endswith(f"{agent} nonzero 1") and not paid.passed()
    assert audit.check_agents(["stall", "noop", "stall"]) == ["stall", "noop"]
    with pytest.raises(ValueError, match="--agent 'nap': known agents are noop, fail, garbage, stall"):
        audit.check_agents(["noop", "nap"])


@pytest.mark.parametrize(("name", "options"), [
    *[(name, {}) for name in sorted(set(AGENTS) - {"external"})], ("osworld_prompt", {"action_space": "computer_13"})])
def test_the_garbage_reply_is_unparseable_by_every_built_in_agent(name: str, options: dict[str, str]) -> None:
    agent = AGENTS[name]("Set Python4", (1920, 1080), agent_options(name, options))
    with pytest.raises(ParseError):
        agent.parse(audit.GARBAGE_REPLY)


def test_each_agents_script_names_its_runs_model(tmp_path: Path) -> None:
    script = json.loads(audit.write_agent_script(tmp_path, "stall").read_text())
    assert script["model"] == audit.audit_model("stall") == "audit-stall"
    assert len(script["replies"]) == audit.AUDIT_MAX_STEPS and all("wait()" in r for r in script["replies"])


@pytest.mark.e2e
@pytest.mark.timeout(1600)
@needs_index
def test_audit_one_task_per_domain_sets_up_and_scores_each_with_reward_zero(tmp_path: Path) -> None:
    agents = {"noop": "completed", "garbage": "parse_error", "stall": "truncated"}
    # one task per domain, os's being the infeasible os/c288e301 (an infeasible task pays for FAIL only)
    index = {task.effective_domain: [task.id] for task in audit.select_tasks(NOGDRIVE, per_domain=1).audited}
    index["os"] = [INFEASIBLE]
    (tmp_path / "examples").symlink_to(NOGDRIVE.parent / "examples")
    (tmp_path / "index.json").write_text(json.dumps(index))
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "audit", str(tmp_path / "index.json"), "--envs", "2",
         *[arg for agent in agents for arg in ("--agent", agent)],
         "--json", "--work-dir", str(tmp_path / "audit"), "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=ROOT, timeout=1500)
    lines = result.stdout.strip().splitlines()
    assert lines[-3:] == [f"audit: set up 10/10, scored 10/10, stored 10/10, {agent} nonzero 0" for agent in agents], \
        result.stdout[-3000:] + result.stderr
    reports = json.loads("\n".join(lines[:-3]))["reports"]
    assert [report["agent"] for report in reports] == list(agents)
    for report in reports:
        for outcome in report["outcomes"]:
            assert outcome["set_up"] and outcome["scored"] and outcome["stored"], outcome
            assert outcome["status"] == agents[report["agent"]], outcome
            assert outcome["reward"] == 0.0, outcome
            if report["agent"] == "garbage":
                assert "unparseable reply at step 0 after 3 samples" in outcome["error"], outcome
        assert report["explained"] == {}
    # thunderbird's first task: the stand-in profile carries the account's saved login (issue 25)
    assert {"dfac9ee8-9bc4-4cdc-b465-4a4bfcd2f397", INFEASIBLE} <= {o["task_id"] for o in reports[0]["outcomes"]}
    assert result.returncode == 0
