"""The docs document every environment variable of every service's settings class; the README's quickstart is
two commands; the README links every reference page."""

from __future__ import annotations

from pydantic_settings import BaseSettings

from services.desktop_env.settings import DesktopEnvSettings
from services.model_gateway.settings import GatewaySettings
from services.runner.settings import RunnerSettings
from services.scripted_policy.settings import ScriptedPolicySettings
from services.storage_sink.settings import SinkSettings
from services.task_producer.settings import ProducerSettings
from tests.docs.docs_text import README, ROOT, page


def env_names(settings: type[BaseSettings]) -> set[str]:
    prefix = str(settings.model_config.get("env_prefix", ""))
    names = set()
    for name, field in settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        names.add(str(choices[0]) if choices else f"{prefix}{name}".upper())
    return names


def test_every_setting_is_documented() -> None:
    docs = page("settings.md")
    missing = set()
    for settings in (ProducerSettings, RunnerSettings, GatewaySettings, SinkSettings, DesktopEnvSettings,
                     ScriptedPolicySettings):
        missing |= {name for name in env_names(settings) if f"`{name}`" not in docs}
    assert not missing, f"docs/settings.md lacks: {sorted(missing)}"


def test_quickstart_is_exactly_two_commands() -> None:
    block = README.split("## Quickstart", 1)[1].split("```")[1]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make demo", "make test"]


def test_the_coverage_table_is_the_one_the_code_computes() -> None:
    from common.task import load_task_set
    from services.cli.coverage_view import coverage_markdown
    from services.runner.osworld.coverage import coverage

    index = ROOT.parent / "shared" / "osworld" / "test_all.json"
    assert coverage_markdown(coverage(load_task_set(index))) in page("osworld.md")


def test_the_readme_links_every_reference_page() -> None:
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages, "docs/ has no pages"
    assert not {name for name in pages if f"(docs/{name})" not in README}, "README does not link every page of docs/"


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) < 200, "the README is the front door: reference sections go to docs/"

