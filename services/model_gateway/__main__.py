"""`python -m services.model_gateway`: serve the gateway with uvicorn."""

import uvicorn

from common.malloc import keep_freed_memory
from common.service import setup_logging
from common.settings import load_settings
from services.model_gateway.server import create_app
from services.model_gateway.settings import GatewaySettings

if __name__ == "__main__":
    settings = load_settings(GatewaySettings)  # SystemExit naming a bad setting
    setup_logging(settings.log_level)
    keep_freed_memory()  # request bodies of MBs relayed in chunks: reuse freed heap, no page faults per chunk
    # Per-request work nobody reads is skipped: uvicorn logs at warning, so its access log (info) would never
    # show; the gateway never uses the client's address, so X-Forwarded-* headers need no rewriting.
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="warning", access_log=False,
                proxy_headers=False)
