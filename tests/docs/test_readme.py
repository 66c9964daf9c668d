"""The README documents every environment variable of every service's settings class."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings

from services.desktop_env.settings import DesktopEnvSettings
from services.model_gateway.settings import GatewaySettings
from services.runner.settings import RunnerSettings
from services.scripted_policy.settings import ScriptedPolicySettings
from services.storage_sink.settings import SinkSettings
from services.task_producer.settings import ProducerSettings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def env_names(settings: type[BaseSettings]) -> set[str]:
    prefix = str(settings.model_config.get("env_prefix", ""))
    names = set()
    for name, field in settings.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", None)
        names.add(str(choices[0]) if choices else f"{prefix}{name}".upper())
    return names


def test_every_setting_is_documented() -> None:
    missing = set()
    for settings in (ProducerSettings, RunnerSettings, GatewaySettings, SinkSettings, DesktopEnvSettings,
                     ScriptedPolicySettings):
        missing |= {name for name in env_names(settings) if f"`{name}`" not in README}
    assert not missing, f"README lacks: {sorted(missing)}"


def test_quickstart_is_exactly_two_commands() -> None:
    block = README.split("## Quickstart", 1)[1].split("```")[1]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make demo", "make test"]


def test_the_coverage_table_is_the_one_the_code_computes() -> None:
    from common.task import load_task_set
    from services.cli.coverage_view import coverage_markdown
    from services.runner.osworld.coverage import coverage

    index = Path(__file__).resolve().parents[3] / "shared" / "osworld" / "test_all.json"
    assert coverage_markdown(coverage(load_task_set(index))) in README
