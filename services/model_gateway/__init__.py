"""Model gateway: OpenAI-compatible proxy over N vLLM replicas for RL rollouts: policy-version routing, rolling
weight reloads, bounded-load consistent hashing of episodes, circuit breakers, deadlines and auth."""
