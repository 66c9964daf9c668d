"""Stack tests: the whole pipeline started locally (real Redis, desktops, gateway, runners, sink)."""
