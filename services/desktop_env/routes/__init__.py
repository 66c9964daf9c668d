"""The env pod's HTTP routes, one `APIRouter` per domain of OSWorld's VM server
(`desktop_env/server/main.py`): `observe` (screen, windows, terminal, accessibility, wallpaper),
`execute` (commands, Python and bash scripts), `files`, `setup` (open, wallpaper, download),
`windows`, `recording`, `admin` (reset). Every route gets the env through `Depends(get_pod)`.
"""

from fastapi import APIRouter

from services.desktop_env.routes import admin, execute, files, observe, recording, setup, windows

ROUTERS: tuple[APIRouter, ...] = (observe.router, execute.router, files.router, setup.router, windows.router,
                                  recording.router, admin.router)
