"""cua-rollout's Python client for trainers and evaluators: `from cua_rollout.client import RolloutClient`."""
