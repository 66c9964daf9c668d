"""The producer's API routers, one module per area; `api.create_app` includes them all."""
