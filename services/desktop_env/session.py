"""One desktop session: Xvfb + a D-Bus session bus + the desktop shell (GNOME Shell with its private
system bus, or openbox: `shell`) on one display, the env's home, and the environment every child gets.
`start()`, `reset()` (back to a clean desktop in about a second), `stop()` (nothing left behind).
Apps OSWorld's VM shows maximised open maximised (`placement`).

Processes: Xvfb, dbus-daemon and the shell are the session's core and survive resets; everything
else started in the env carries the env's marker variable (see `processes`) and is stopped by
`reset()`; windows of processes we could not signal are disconnected from the X server.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from common.polling import DeadlineExceeded, wait_until
from common.processes import stop_child
from services.desktop_env import envvars, home, shell, shims, ubuntu_defaults, x11
from services.desktop_env.commands import CommandRunner
from services.desktop_env.homemap import HomeMapper
from services.desktop_env.hotkeys import TerminalHotkey
from services.desktop_env.placement import Placer
from services.desktop_env.processes import (
    MARKER_VAR,
    ChildRegistry,
    die_with_parent,
    is_alive,
    marked_pids,
    stop_pids,
)
from services.desktop_env.recording import ScreenRecorder
from services.desktop_env.settings import DesktopEnvSettings
from services.desktop_env.terminal import TerminalLogs

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 15.0
_SHELL_START_TIMEOUT_S = 240.0  # GNOME Shell: ~4 s on a quiet machine, minutes on busy cores
_REAP_INTERVAL_S = 1.0
_STOP_ROUNDS = 3  # rounds of stopping the env's processes at reset: those started meanwhile go in the next
_MODIFIER_KEYS = ("Shift_L", "Shift_R", "Control_L", "Control_R", "Alt_L", "Alt_R", "Super_L", "Super_R")
# Variables of the server's own environment that must not leak into the desktop's children.
_DROPPED_VARS = ("DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY", "XAUTHORITY", "XDG_SESSION_ID", "SESSION_MANAGER",
                 "NO_AT_BRIDGE", *shell.UBUNTU_SESSION_VARS)  # the host's desktop names are not the env's


# Accessibility on for every app (AT-SPI over the session bus), as on OSWorld's Ubuntu desktop: GTK 2/3
# load the ATK bridge, Qt exposes its tree, LibreOffice uses its GTK 3 front end (which has one).
_ACCESSIBILITY_VARS = {
    "GTK_MODULES": "gail:atk-bridge",
    "QT_ACCESSIBILITY": "1",
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
    "GNOME_ACCESSIBILITY": "1",
    "SAL_USE_VCLPLUGIN": "gtk3",
}
# What `/reset` keeps in a private /tmp: the X server's socket directory and lock file.
_X_SERVER_FILES = (".X11-unix", ".X*-lock", ".ICE-unix")


def _is_fork_of(pid: int, core_pids: list[int]) -> bool:
    """True when `pid` is a fork of a core process that has not run another program: the session bus's
    babysitter of a service it is starting (killing it ends the bus, and GNOME Shell with it)."""
    try:
        process = psutil.Process(pid)
        parent = process.ppid()
        return parent in core_pids and process.name() == psutil.Process(parent).name()
    except psutil.Error:
        return False


#: The AT-SPI bus (its launcher, its dbus-daemon, the registry): GNOME Shell registers on it once, at its
#: start, so a reset keeps it (apps' registrations end with the apps).
_ACCESSIBILITY_BUS = ("at-spi-bus-launcher", "at-spi2-registryd")


def _is_accessibility_bus(pid: int) -> bool:
    """True for a process of the AT-SPI bus (`_ACCESSIBILITY_BUS` or the launcher's bus daemon)."""
    try:
        process = psutil.Process(pid)
        return process.name() in _ACCESSIBILITY_BUS or psutil.Process(process.ppid()).name() in _ACCESSIBILITY_BUS
    except psutil.Error:
        return False


class SessionError(RuntimeError):
    """The desktop could not be started (display in use, Xvfb or openbox failed)."""


def display_in_use(number: int) -> bool:
    """True when display `:number` has an X socket or a lock file whose owner is alive."""
    if Path(f"/tmp/.X11-unix/X{number}").exists():
        return True
    lock = Path(f"/tmp/.X{number}-lock")
    try:
        return is_alive(int(lock.read_text().strip()))
    except (OSError, ValueError):
        return lock.exists()


class DesktopSession:
    """The desktop of one env (see module doc). Not started until `start()`."""

    def __init__(self, settings: DesktopEnvSettings) -> None:
        self.settings = settings
        self.display = settings.display
        self.home = settings.home
        self.mapper = HomeMapper(self.home)
        self.marker = f"{settings.env_id}@{settings.display}"
        self._owns_runtime_dir = settings.runtime_dir is None
        self.runtime_dir = settings.runtime_dir or Path(
            tempfile.mkdtemp(prefix=f"desktop-env-{settings.display_number}-"))
        self.bin_dir = self.runtime_dir / "bin"
        self.terminals = TerminalLogs(self.runtime_dir / "terminals")
        self.registry = ChildRegistry()
        self.env = self._child_env()
        self.commands = CommandRunner(self.env, self.home, self.registry)
        self.recorder = ScreenRecorder(self.display, settings.width, settings.height,
                                       self.runtime_dir / "recording.mp4", self.registry)
        self._core: dict[str, subprocess.Popen[bytes]] = {}
        self.placer = Placer(self.display)
        self.hotkey = TerminalHotkey(self.display, lambda: self.commands.launch(
            [str(self.bin_dir / "desktop-terminal")], shell=False))
        self._reset_lock = threading.Lock()
        self._stopping = threading.Event()

    # -- environment -----------------------------------------------------------------------
    def _child_env(self) -> dict[str, str]:
        env = {k: v for k, v in envvars.scrub(os.environ).items()
               if not k.startswith("DESKTOP_") and k not in _DROPPED_VARS}
        xdg_runtime = self.xdg_runtime_dir
        env.update(_ACCESSIBILITY_VARS)
        env.update({
            "DISPLAY": self.display,
            "HOME": str(self.home),
            "PWD": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_RUNTIME_DIR": str(xdg_runtime),
            "PATH": f"{self.bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
            MARKER_VAR: self.marker,
            "GSETTINGS_SCHEMA_DIR": str(self.runtime_dir / "schemas"),  # ubuntu_defaults.install writes it
        })
        env.setdefault("LANG", "C.UTF-8")
        if shutil.which("dbus-daemon"):
            env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={self.bus_path}"
            if self.settings.shell == shell.GNOME:
                env.update(shell.UBUNTU_SESSION_VARS)
        return env

    @property
    def xdg_runtime_dir(self) -> Path:
        """The desktop's XDG_RUNTIME_DIR (`DESKTOP_XDG_RUNTIME_DIR`, default `<runtime dir>/xdg`)."""
        return self.settings.xdg_runtime_dir or self.runtime_dir / "xdg"

    @property
    def bus_path(self) -> Path:
        """Socket of the desktop's D-Bus session bus: `bus` in its XDG runtime dir (as on Ubuntu)."""
        return self.xdg_runtime_dir / "bus"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Lay out the home and start Xvfb, D-Bus and the shell; returns once the window manager
        answers (polled, at most ~15 s each, 240 s for GNOME Shell). Raises: SessionError naming what failed."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        self.xdg_runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.terminals.log_dir.mkdir(parents=True, exist_ok=True)
        shims.install(self.bin_dir, self.terminals.log_path_pattern(), self.settings.client_password)
        if ubuntu_defaults.install(self.runtime_dir) is None:  # Ubuntu's GSettings defaults (wallpaper...)
            self.env.pop("GSETTINGS_SCHEMA_DIR", None)
        self._build_home()
        if self.settings.start_xvfb:
            self._start_xvfb()
        else:
            self._wait("display", None, lambda: x11.display_ready(self.display))
        if "DBUS_SESSION_BUS_ADDRESS" in self.env:
            bus = self.bus_path
            self._spawn_core("dbus", ["dbus-daemon", "--session", "--nofork", "--nopidfile",
                                      f"--address=unix:path={bus}"])
            self._wait("dbus-daemon", self._core["dbus"], bus.exists)
        if self.settings.start_xvfb or not x11.wm_running(self.display):
            self._start_shell()
        self.placer.start()
        if os.getpid() == 1:  # a sandbox's PID 1 inherits every orphan of the env: reap them as they exit
            threading.Thread(target=self._reap_loop, name="orphan-reaper", daemon=True).start()
        log.info("desktop %s up on %s, home %s", self.settings.env_id, self.display, self.home)

    @property
    def gnome(self) -> bool:
        """True when the desktop shell is GNOME Shell."""
        return self.settings.shell == shell.GNOME and "DBUS_SESSION_BUS_ADDRESS" in self.env

    def _start_shell(self) -> None:
        if not self.gnome:
            self._spawn_core("openbox", ["openbox", "--config-file", str(self.home / ".config/openbox/rc.xml")])
            self._wait("openbox", self._core["openbox"], lambda: x11.wm_running(self.display))
            return
        argv, socket = shell.system_bus_argv(self.runtime_dir)
        self._spawn_core("system-bus", argv)
        self._wait("system bus", self._core["system-bus"], socket.exists)
        self._spawn_core("gnome-shell", shell.GNOME_SHELL_ARGV, shell.gnome_shell_env(self.env, socket))
        self._wait("GNOME Shell", self._core["gnome-shell"],
                   lambda: x11.wm_running(self.display)
                   and shell.gnome_shell_ready(self.env, self.display, self.settings.width),
                   _SHELL_START_TIMEOUT_S)
        if not self.hotkey.start():
            log.warning("ctrl+alt+t could not be grabbed on %s", self.display)

    def _reap_loop(self) -> None:
        own_session = os.getsid(0)
        while not self._stopping.wait(_REAP_INTERVAL_S):
            self.registry.reap_orphans(skip_session=own_session)

    def _start_xvfb(self) -> None:
        if display_in_use(self.settings.display_number):
            raise SessionError(f"display {self.display} is already in use (X socket or lock file exists)")
        size = f"{self.settings.width}x{self.settings.height}x24"
        self._spawn_core("xvfb", ["Xvfb", self.display, "-screen", "0", size, "-nolisten", "tcp"])
        self._wait("Xvfb", self._core["xvfb"], lambda: x11.display_ready(self.display))

    def _spawn_core(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        with open(self.runtime_dir / f"{name}.log", "wb") as log_file, self.registry.spawning():
            process = subprocess.Popen(argv, env=env or self.env, cwd=self.home, stdin=subprocess.DEVNULL,
                                       stdout=log_file, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            self.registry.add(process)
        self._core[name] = process

    def _wait(self, what: str, process: subprocess.Popen[bytes] | None, ready: Callable[[], bool],
              timeout_s: float = _START_TIMEOUT_S) -> None:
        """Poll `ready` until true (at most `timeout_s`); fail fast with the log tail when `process` exits meanwhile."""
        try:
            wait_until(lambda: (process is not None and process.poll() is not None) or ready(),
                       timeout_s, f"{what} on {self.display}", interval_s=0.05)
        except DeadlineExceeded as exc:
            raise SessionError(str(exc)) from exc
        if process is not None and process.poll() is not None:
            log_path = self.runtime_dir / f"{self._name_of(process)}.log"
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise SessionError(f"{what} exited with code {process.returncode} on {self.display}: {tail.strip()}")

    def _name_of(self, process: subprocess.Popen[bytes]) -> str:
        return next((name for name, p in self._core.items() if p is process), "unknown")

    def core_alive(self) -> bool:
        """True while every core process we started still runs."""
        return all(p.poll() is None for p in self._core.values())

    def stop(self) -> None:
        """Stop the env's processes, then the shell, D-Bus and Xvfb; remove our runtime directory."""
        self._stopping.set()
        self.recorder.abort()
        self.placer.stop()
        self.hotkey.stop()
        self._stop_env_processes()
        for name in ("gnome-shell", "openbox", "system-bus", "dbus", "xvfb"):
            process = self._core.pop(name, None)
            if process is None:
                continue
            stop_child(process, grace_s=5.0)
            self.registry.discard(process)
        if self._owns_runtime_dir:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)

    # -- reset -----------------------------------------------------------------------------
    def _stop_env_processes(self) -> None:
        core_pids = [p.pid for p in self._core.values()]
        # a Chromium profile in this env's home (the `google-chrome` shim's, the VS Code window's; see
        # shims.py): Chromium's own marker
        chromium_profile = f"--user-data-dir={self.settings.home}/"
        left: list[int] = []
        for _ in range(_STOP_ROUNDS):  # a dying parent may start children (VS Code restarts its watchers)
            pids = [pid for pid in marked_pids(self.marker, exclude=core_pids, cmdline_marks=[chromium_profile])
                    if not _is_fork_of(pid, core_pids) and not (self.gnome and _is_accessibility_bus(pid))]
            if not pids:
                break
            left = stop_pids(pids)
        if left:
            log.warning("processes %s of env %s survived SIGKILL", left, self.settings.env_id)
        self.registry.prune()
        self.registry.reap_orphans()

    def _close_leftover_windows(self) -> None:
        windows = x11.list_windows(self.display)
        if not windows:
            return
        x11.kill_clients(self.display, [w.wid for w in windows])
        try:
            wait_until(lambda: not x11.list_windows(self.display), 2.0, "windows to close", interval_s=0.02)
        except DeadlineExceeded:
            log.warning("windows still open after reset: %s", [w.title for w in x11.list_windows(self.display)])

    def _build_home(self) -> None:
        home.build(self.home, str(self.bin_dir / "desktop-terminal"), self.settings.client_password)

    def _kept_in_tmp(self) -> tuple[str, ...]:
        """Globs of `/tmp` entries a reset keeps: the X server's files, and the session's own runtime
        and XDG runtime directories when they lie in /tmp (the default runtime dir does: wiping it
        would take the zygote's log and socket and the D-Bus socket with it)."""
        own = []
        for directory in (self.runtime_dir, self.xdg_runtime_dir):
            try:
                own.append(directory.resolve().relative_to(Path("/tmp").resolve()).parts[0])
            except (ValueError, IndexError):
                continue  # not under /tmp
        return (*_X_SERVER_FILES, *own)

    def _xdotool(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=5, check=False)

    @property
    def resetting(self) -> bool:
        """True while `reset()` runs."""
        return self._reset_lock.locked()

    def wait_for_reset(self) -> None:
        """Block until a running `reset()` has finished (at once when none runs)."""
        with self._reset_lock:
            pass

    def reset(self) -> float:
        """Back to a clean desktop: stop every process and window of the env (not Xvfb, D-Bus or the
        shell), GNOME Shell's overview closed and its settings back (`shell.reset_shell`), rebuild the
        home, release held keys, pointer to the screen centre.

        Returns the duration in ms (normally well under a second).
        """
        with self._reset_lock:
            started = time.perf_counter()
            self.recorder.abort()
            if self.gnome:
                shell.reset_shell(self.env, self.home / ".config" / "dconf" / "user")
            self._stop_env_processes()
            self._close_leftover_windows()
            self._build_home()
            if self.settings.wipe_tmp:
                home.wipe(Path("/tmp"), self.settings.client_password, keep=self._kept_in_tmp())
            self.terminals.clear()
            self._xdotool("keyup", "--delay", "0", *_MODIFIER_KEYS)  # default: 12 ms after each key
            self._xdotool("mousemove", str(self.settings.width // 2), str(self.settings.height // 2))
            if self.gnome:  # the closed apps leave the dock and the top bar a moment later
                shell.wait_panels_still(self.display, self.settings.width, self.settings.height)
            return (time.perf_counter() - started) * 1000.0
