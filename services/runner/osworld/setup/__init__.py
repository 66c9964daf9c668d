"""Run OSWorld task `config` (and evaluator `postconfig`) setup steps against an env.

Semantics of OSWorld `desktop_env/controllers/setup.py` (`SetupController.setup` and its
`_<type>_setup` methods); the handlers live in one module per kind of step (`basic`, `chrome`, `googledrive`), each
with a `SETUP_HANDLERS` dict merged here, and what a step needs beyond an env in `NEEDS`.
"""

from __future__ import annotations

from common.task import SetupStep
from services.runner.osworld.context import SetupContext
from services.runner.osworld.errors import SetupError
from services.runner.osworld.protocol import EnvLike
from services.runner.osworld.registry import merge_registries
from services.runner.osworld.requirements import Needs
from services.runner.osworld.setup import basic, chrome, googledrive
from services.runner.osworld.setup.base import StepHandler

DOMAIN_MODULES = (basic, chrome, googledrive)

SETUP_HANDLERS: dict[str, StepHandler] = merge_registries(DOMAIN_MODULES, "SETUP_HANDLERS")
NEEDS: dict[str, Needs] = merge_registries(DOMAIN_MODULES, "NEEDS")
"""Setup step type -> `handler(parameters, env, ctx)`; step type -> requirements."""


def run_setup(steps: list[SetupStep], env: EnvLike, ctx: SetupContext) -> None:
    """Run `steps` in order.

    Raises: SetupError naming the step (1-based index and type) for an unsupported type, bad
    parameters, a URL missing from the cache, an unmet `until`; env errors propagate as they are.
    """
    for index, step in enumerate(steps, 1):
        handler = SETUP_HANDLERS.get(step.type)
        if handler is None:
            raise SetupError(
                f"unsupported OSWorld setup step type {step.type!r} (step {index}); "
                f"supported: {', '.join(sorted(SETUP_HANDLERS))}"
            )
        try:
            noted = len(ctx.log)
            handler(step.parameters, env, ctx)
            for entry in ctx.log[noted:]:
                entry.setdefault("step", index)
        except SetupError as exc:
            raise SetupError(f"setup step {index} ({step.type}): {exc}") from exc
        except Exception as exc:
            exc.add_note(f"during OSWorld setup step {index} ({step.type})")
            raise


__all__ = ["NEEDS", "SETUP_HANDLERS", "SetupContext", "SetupError", "StepHandler", "run_setup"]
