"""The real vLLM servers of this directory's tests (`tests/vllm_fixtures.py`). Every test that needs vLLM lives
here, in few modules, so that `--dist loadscope` runs them on few workers, which share one pair of servers."""

from tests.vllm_fixtures import tiny_text_model, vllm_replicas  # noqa: F401
