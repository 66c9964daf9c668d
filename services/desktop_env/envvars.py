"""The env pod holds no credentials: environment variables that carry secrets or reach the rest of the
system are removed before the env server starts and before any desktop child (actions, apps) does.

An agent's actions run arbitrary code inside the env, so whatever the env server's environment holds
is readable by the model under test (`env`, `/proc/<pid>/environ`). Removed (`is_credential`): the
settings of the other services (`PRODUCER_`, `GATEWAY_`, `RUNNER_`, `SINK_`, `POLICY_`, `REDIS_`,
`S3_`, `STORE_`, `MINIO_`, `AWS_` prefixes) and any name that looks like a credential
(`TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `CREDENTIAL`, `API_KEY`, `ACCESS_KEY`, `PRIVATE_KEY`,
`AUTH`, `COOKIE`, `SESSION_KEY` anywhere in it, case-insensitive). The env's own `DESKTOP_*`
settings are kept for the server; the session drops them for children.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Settings prefixes of cua-rollout's other services and of the stores they use.
SERVICE_PREFIXES = ("PRODUCER_", "GATEWAY_", "RUNNER_", "SINK_", "POLICY_", "REDIS_", "S3_", "STORE_", "MINIO_",
                    "AWS_")
_CREDENTIAL = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE"
                         r"|SESSION_?KEY", re.IGNORECASE)
#: Kept although they match: the env's own sudo password (OSWorld's `password`, a setting of the env)
#: and the X authority file of an existing display (the session never gives it to children).
_ENV_OWN = ("DESKTOP_CLIENT_PASSWORD", "XAUTHORITY")


def is_credential(name: str) -> bool:
    """True when the variable `name` must not reach the env (see the module doc)."""
    if name in _ENV_OWN:
        return False
    upper = name.upper()
    return upper.startswith(SERVICE_PREFIXES) or _CREDENTIAL.search(name) is not None


def scrub(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without the variables `is_credential` names."""
    return {k: v for k, v in environ.items() if not is_credential(k)}
