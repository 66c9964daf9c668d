"""`python -m tests.chaos [--rollouts N] [--store-outage-s S]` (`make chaos`): the full chaos run; prints
the table and exits 1 on any loss, duplicate or leak, or a runner fault not recovered within 60 s."""

from __future__ import annotations

import argparse
import logging
import resource
import shutil
import sys
from pathlib import Path

from tests.chaos.harness import Chaos, ChaosConfig


def main() -> int:
    """Run the chaos suite with the command-line sizes; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", type=int, default=500)
    parser.add_argument("--store-outage-s", type=float, default=120.0)
    parser.add_argument("--deadline-s", type=float, default=1800.0)
    parser.add_argument("--work-dir", type=Path, default=Path(".cua/chaos"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's request log
    shutil.rmtree(args.work_dir, ignore_errors=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # moto and the proxy serve in this process
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    result = Chaos(ChaosConfig(rollouts=args.rollouts, store_outage_s=args.store_outage_s,
                               deadline_s=args.deadline_s, work_dir=args.work_dir)).run()
    print(result.table())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
