"""The live dashboard's data: one background sampler per producer reads Redis (and the gateway, the store,
Prometheus) at a fixed rate and every browser is served from its snapshot (`sampler.py`)."""
