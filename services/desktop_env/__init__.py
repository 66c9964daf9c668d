"""The env pod: an Xvfb desktop served over the OSWorld VM server protocol (`python -m services.desktop_env`).

Modules: `settings` (DESKTOP_* variables), `session` (Xvfb, D-Bus, openbox, reset), `home` (the
env's home layout), `shims` (terminal, python, sudo, Chrome, nautilus stand-ins; `app_ready` and
`painted` behind `desktop-app-ready`), `commands` (subprocesses of `/execute`), `zygote` /
`zygote_process` / `action_child` / `xconnect` (every `python -c` action a fresh process forked from
a warm zygote), `screen`, `x11`, `terminal`, `accessibility` (with `atspi_dump`, run under Debian's
python3), `recording`, `wallpaper`, `operations`, `homemap` (`/home/user` mapping when not
sandboxed), `processes` (marker-based process control), `vscode_cli` + `vscode_server` (the `code`
command: code-server in a Chromium app window), `server` + `pod` + `schemas` + `routes/`
(FastAPI app), `launcher` (N local envs), `sandbox` (one env in its own namespaces; `netns`,
`sandbox_fs`, `sandbox_user`; bubblewrap builds it).
"""
