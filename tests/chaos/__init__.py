"""Chaos suite (issue 15, point 2): the local stack under random SIGKILLs of runners, the sink, policy
replicas and envs, a Redis restart and an object-store outage; then every rollout, trajectory, lease and
env is checked from Redis and the store. `make chaos` runs the full suite (`python -m tests.chaos`);
`test_chaos_short.py` runs a short one in the normal test suite."""
