"""What one process forked by the zygote does: become a fresh `python -c` (or `python file.py`)
process of the env and run one agent action in it.

A child starts as a *standby* right after the fork: it leaves the zygote's session (`setsid`, so a
timeout can kill its whole process group), closes every descriptor it inherited except its own
three, and opens its own X connection for pyautogui (reloading `pyautogui._pyautogui_x11`, so the
key mapping is read afresh, exactly as at import). Then it blocks until the server sends the
request on the socket the zygote handed to the server (see `zygote`). Given the request it takes
the env's working directory and environment, its stdio (stdin `/dev/null`, stdout and stderr the
zygote's memory files), `sys.argv`, a fresh `__main__`, and runs the code, then answers the server
on that socket; the exit status follows CPython's rules (`sys.exit(n)` -> n, `sys.exit("msg")`
-> message on stderr and 1, an uncaught exception -> traceback on stderr and 1, an uncaught
KeyboardInterrupt -> killed by SIGINT), after joining non-daemon threads and running `atexit`
handlers, as the interpreter's shutdown does.
"""

from __future__ import annotations

import atexit
import builtins
import importlib
import io
import json
import os
import signal
import socket
import sys
import threading
import types
from importlib.machinery import BuiltinImporter
from typing import Any, NoReturn

from services.desktop_env import screen

_PYTHON_C = "<string>"  # the file name CPython gives `python -c` code
_keep_alive: list[Any] = []  # inherited objects whose file descriptors we closed: never finalized


def prepare_pyautogui(display: str) -> None:
    """In the zygote, once: import pyautogui (and Xlib, Pillow, pyscreeze), turn off its fail-safe
    and pause (OSWorld's server settings) and make its `screenshot()` grab `display` in-process."""
    import pyautogui
    import pyscreeze

    def grab(imageFilename: str | None = None, region: Any = None) -> Any:  # noqa: N803 (pyautogui's name)
        image = screen.grab(display, region)
        if imageFilename:
            image.save(imageFilename)
        return image

    pyautogui.FAILSAFE = False
    pyautogui.PAUSE = 0
    pyautogui.screenshot = grab
    pyscreeze.screenshot = grab


def _detach_x_connections() -> None:
    """Forget (without closing, and without ever finalizing) the zygote's X connections, whose
    descriptors this child is about to close; a finalizer would close a reused descriptor number."""
    for name in ("pyautogui._pyautogui_x11", "mouseinfo"):
        module = sys.modules.get(name)
        conn = getattr(module, "_display", None)
        if conn is not None:
            _keep_alive.append(conn)
            try:
                conn.display.socket.detach()
            except (AttributeError, OSError):
                pass


def _close_inherited(keep: tuple[int, ...]) -> None:
    """Close every descriptor >= 3 except `keep` (the zygote's listener, sockets, pipes)."""
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def _connect_pyautogui(display: str) -> None:
    # Any: pyautogui's private X connection (`_display`) is replaced at run time.
    _pyautogui_x11: Any = importlib.import_module("pyautogui._pyautogui_x11")

    from services.desktop_env import x11

    os.environ["DISPLAY"] = display
    try:
        importlib.reload(_pyautogui_x11)  # own connection and key mapping, as a fresh import
    except Exception as exc:  # noqa: BLE001 - the action will see it when it uses pyautogui
        _pyautogui_x11._display = _Unreachable(display, exc)
        return
    conn = x11.repair_error_classes(_pyautogui_x11._display)
    mouseinfo: Any = sys.modules.get("mouseinfo")
    if mouseinfo is not None and hasattr(mouseinfo, "_display"):
        mouseinfo._display = conn


class _Unreachable:
    """Stand-in X connection when the display could not be opened: any use raises the cause."""

    def __init__(self, display: str, cause: Exception) -> None:
        self._display_name, self._cause = display, cause

    def __getattr__(self, name: str) -> Any:
        raise ConnectionError(f"cannot open X display {self._display_name}: {self._cause}") from self._cause


def _receive_request(conn: socket.socket) -> dict[str, Any] | None:
    """The request line from the server (None: the server closed the connection unused)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None
        data += chunk
    request: dict[str, Any] = json.loads(data)
    return request


def _answer(conn: socket.socket, out_fd: int, err_fd: int, status: int) -> None:
    """Send the server the action's reply (see `zygote`)."""
    reply = {"output": read_memfile(out_fd), "error": read_memfile(err_fd), "returncode": status}
    conn.sendall(json.dumps(reply).encode() + b"\n")


def read_memfile(fd: int) -> str:
    """All text written to the memory file `fd` so far (UTF-8, undecodable bytes replaced)."""
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0).decode("utf-8", "replace") if size else ""


def standby(conn_fd: int, out_fd: int, err_fd: int, display: str) -> NoReturn:
    """Body of a forked child: prepare, wait for the request (one JSON line) on the socket `conn_fd`
    (connected to the server), run it, answer on the same socket, exit with the action's status.
    End of file instead of a request exits with 0 at once."""
    status = 70  # EX_SOFTWARE: this function failed before running the action
    me = os.getpid()
    try:
        os.setsid()
        _detach_x_connections()
        _close_inherited((conn_fd, out_fd, err_fd))
        _connect_pyautogui(display)
        conn = socket.socket(fileno=conn_fd)
        _keep_alive.append(conn)
        request = _receive_request(conn)
        if request is None:
            os._exit(0)
        _become(request, out_fd, err_fd)
        status = _run_main(request["code"], request["filename"], request["argv"])
        if os.getpid() == me:  # not in a process the action forked
            try:
                _answer(conn, out_fd, err_fd, status)
            except OSError:  # the action closed the socket: the server reads the exit status instead
                pass
    finally:
        os._exit(status)


def _stream(fd: int, encoding: str, errors: str, unbuffered: bool, line_buffering: bool = False) -> io.TextIOWrapper:
    """A text stream on `fd` set up as the interpreter sets up stdout/stderr for a file or pipe:
    block-buffered, or write-through with `PYTHONUNBUFFERED`."""
    raw = io.FileIO(fd, "w", closefd=False)
    if unbuffered:
        return io.TextIOWrapper(raw, encoding=encoding, errors=errors, write_through=True)  # type: ignore[arg-type]
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors, line_buffering=line_buffering)


def _become(request: dict[str, Any], out_fd: int, err_fd: int) -> None:
    """Take the request's cwd, environment and stdio (see module doc); stdio follows the env's
    `PYTHONUNBUFFERED` and `PYTHONIOENCODING` as a new interpreter's would."""
    env: dict[str, str] = request["env"]
    encoding, errors = sys.stdout.encoding, sys.stdout.errors or "strict"
    if env.get("PYTHONIOENCODING"):
        name, _, handler = env["PYTHONIOENCODING"].partition(":")
        encoding, errors = name or encoding, handler or errors
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(out_fd, 1)  # `out_fd`/`err_fd` stay open (close-on-exec) to read the output back at the end
    os.dup2(err_fd, 2)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding)
    sys.stdout = _stream(1, encoding, errors, unbuffered)
    sys.stderr = _stream(2, encoding, "backslashreplace", unbuffered, line_buffering=True)
    for name in ("stdin", "stdout", "stderr"):  # the interpreter's originals are these, as in a new process
        setattr(sys, f"__{name}__", getattr(sys, name))
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])


def _exit_status(exc: SystemExit) -> int:
    """CPython's exit status for `SystemExit(code)`."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _run_main(code: str, filename: str, argv: list[str]) -> int:
    """Run `code` as the `__main__` of `python -c` (`filename` "<string>") or of `python filename`;
    returns the exit status (see module doc)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={})
    if filename == _PYTHON_C:
        main.__dict__["__loader__"] = BuiltinImporter  # as `python -c` sets it (a class, not a loader instance)
        sys.path[0] = ""
    else:
        main.__file__ = filename
        sys.path[0] = os.path.dirname(os.path.abspath(filename))
    sys.modules["__main__"] = main
    sys.argv = list(argv)
    sys.orig_argv = [sys.executable, *(["-c", code] if filename == _PYTHON_C else [filename]), *argv[1:]]
    interrupted = False
    try:
        exec(compile(code, filename, "exec"), main.__dict__)  # noqa: S102 - running the agent's code is the job
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # the agent's code failed: report it as the interpreter would
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # drop this function's frame
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        interrupted, status = isinstance(exc, KeyboardInterrupt), 1
    status = _shutdown(status)
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return status


def _shutdown(status: int) -> int:
    """The interpreter's exit sequence: join non-daemon threads, run atexit handlers, flush stdio
    (a failed flush gives status 120, as CPython)."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except SystemExit as exc:
        status = _exit_status(exc)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 120
    return status
