"""Each service's image carries only its pyproject extra (deploy/docker/Dockerfile installs core + extra): every
third-party module a service's code imports, at the top or inside a function, directly or through common/,
must come from a distribution in that set. Read statically (ast), so a lazy import cannot slip through."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("image_requirements", ROOT / "deploy" / "docker" / "requirements.py")
assert _spec is not None and _spec.loader is not None
_requirements_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_requirements_module)
requirements = _requirements_module.requirements  # what the image builds install
OURS = ("common", "services", "cua_rollout")
#: Service package -> the extras its image installs (docker-compose.yml's EXTRAS build args).
IMAGES = {"task_producer": ["producer"], "model_gateway": ["gateway"], "storage_sink": ["sink"],
          "scripted_policy": ["policy"], "runner": ["runner"], "desktop_env": ["env"], "cli": ["cli"]}
#: Imports that are not the service's own: code sent to the env pod to run there, modules of Debian's
#: python3 packages (the env image's venv sees them), a script's sibling module.
NOT_INSTALLED_BY_PIP = {
    ("services/runner/agent/clipboard.py", "pyautogui"),  # paste_text's source is sent to the env and runs there
    ("services/runner/agent/clipboard.py", "Xlib"),
    ("services/desktop_env/atspi_dump.py", "pyatspi"),  # Debian python3-pyatspi (deploy/desktop-packages.txt)
    ("services/desktop_env/app_ready.py", "pyatspi"),
    ("services/desktop_env/atspi_dump.py", "atspi_ns"),  # this script runs by path, beside its sibling
}
#: Imports of our own code not followed: the runner's `local` provider starts env pods on this machine, so it
#: needs the env pod's libraries; it is used where the whole project is installed (`cua-rollout up`, the
#: `cli` extra), never in the runner image (imported only when RUNNER_ENV_PROVIDER=local).
NOT_FOLLOWED = {("services/runner/envs/local.py", "services.desktop_env.launcher")}


def _module_file(name: str) -> Path | None:
    path = ROOT / name.replace(".", "/")
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(path: Path) -> set[str]:
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name == "__init__.py":
        package += ".__init__"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:-node.level], *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


@cache
def third_party_imports(service: str) -> frozenset[str]:
    """Top-level names of every non-stdlib module imported by services/<service> and what it imports of ours."""
    todo = list((ROOT / "services" / service).rglob("*.py"))
    seen: set[Path] = set()
    out: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path):
            top = name.split(".")[0]
            if top in OURS:
                if (str(path.relative_to(ROOT)), name) in NOT_FOLLOWED:
                    continue
                module = _module_file(name)
                if module is not None and module not in seen:
                    todo.append(module)
            elif top and top not in sys.stdlib_module_names \
                    and (str(path.relative_to(ROOT)), top) not in NOT_INSTALLED_BY_PIP:
                out.add(top)
    return frozenset(out)


def _installed(extras: list[str]) -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = set()
    for requirement in requirements(pyproject, extras):
        name = requirement.split(";")[0]
        for stop in "<>=!~[ ":
            name = name.split(stop)[0]
        names.add(name.lower().replace("_", "-"))
    return names


@pytest.mark.parametrize("service", sorted(IMAGES))
def test_every_import_of_a_service_is_in_its_image(service: str) -> None:
    distributions = importlib.metadata.packages_distributions()
    installed = _installed(IMAGES[service])
    missing = {}
    for module in third_party_imports(service):
        owners = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not owners & installed:
            missing[module] = sorted(owners)
    assert not missing, f"services/{service} imports modules its extras {IMAGES[service]} do not install: {missing}"


def test_light_images_carry_none_of_the_runners_libraries() -> None:
    heavy = {"opencv-python-headless", "librosa", "playwright", "pygame", "pandas", "kubernetes"}
    for extras in (["gateway"], ["sink"], ["producer"], ["policy"], ["env"]):
        assert not heavy & _installed(extras), extras
