"""Re-admission of unhealthy envs: an env marked unhealthy (a failed reset) that answers `/healthz` and
resets cleanly again goes back into the pool, so the pool does not only shrink."""

from __future__ import annotations

import logging

from common.env_client import DesktopEnvClient, EnvError
from common.envpool import EnvPool, Lease

log = logging.getLogger(__name__)

#: Lease owner used while an env is probed (shown by `GET /v1/envs` as `leased_by`).
PROBE_OWNER = "health-probe"


def readmit_recovered(pool: EnvPool, lease_ttl_ms: int = 120_000) -> list[str]:
    """Probe every unhealthy env: healthy (`GET /healthz`) and reset (`POST /reset`) -> re-admitted.

    The env is leased for the probe (nobody leases an unhealthy env, but the lease keeps two probing
    reapers apart). Returns the ids of the envs re-admitted. Envs that still fail stay out.
    """
    readmitted: list[str] = []
    for env in pool.unhealthy_envs():
        if not pool.claim(env.env_id, PROBE_OWNER, lease_ttl_ms):
            continue
        lease = Lease(env=env, owner=PROBE_OWNER, ttl_ms=lease_ttl_ms)
        try:
            with DesktopEnvClient(env.url) as client:
                if not client.healthy():
                    continue
                client.reset()
            pool.mark_unhealthy(env.env_id, unhealthy=False)
            readmitted.append(env.env_id)
        except EnvError as exc:
            log.info("env %s still failing: %s", env.env_id, exc)
        finally:
            pool.release(lease)
    return readmitted
