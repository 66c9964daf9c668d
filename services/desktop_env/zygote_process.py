"""The zygote: a warm Python process of one env that forks the processes every `python -c` action of
`/execute` (and every `/run_python` script) runs in, and never runs agent code itself, so every fork
starts from the same clean state.

Started by `zygote.Zygote` as `python -m services.desktop_env.zygote_process <control-fd>` with the
env's environment: it imports pyautogui, Xlib and Pillow once, connected to the env's display, and
forks *standby* children ahead of requests (each opens its own X connection, see `action_child`).
It is not on the path of an action: the server talks to a standby directly.

Control channel (the inherited `SOCK_SEQPACKET` socket, one message per packet):
- zygote -> server `b"S <pid>"` with three descriptors attached: the server's end of a socket pair
  connected to standby `pid`, and the memory files its stdout and stderr will go to;
- zygote -> server `b"X <pid> <returncode>"`: child `pid` exited (`returncode` negative for a
  signal, as `subprocess` reports it); the server needs it when a child ends without answering;
- server -> zygote `b"U"`: a standby was used, fork another one;
- server -> zygote `b"K <pid>"`: kill child `pid` and its process group (its timeout passed; the
  zygote sends the signal because only it sees the child's pid in every PID namespace).
The zygote exits when the server closes the channel. `STANDBY` standbys are forked at start.

Single-threaded on purpose: forking a process that runs other threads can copy a held lock.
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import sys

from services.desktop_env import action_child, xconnect
from services.desktop_env.processes import die_with_parent

STANDBY = 2  # standbys forked at start; one more for every one the server uses


class _Zygote:
    def __init__(self, control: socket.socket, display: str) -> None:
        self.control = control
        self.display = display
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, None)
        self.pidfds: dict[int, int] = {}

    def fork_standby(self) -> None:
        ours, theirs = socket.socketpair()
        out_fd, err_fd = os.memfd_create("stdout"), os.memfd_create("stderr")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child; never returns
            action_child.standby(theirs.fileno(), out_fd, err_fd, self.display)
        try:
            theirs.close()
            self.pidfds[pid] = pidfd = os.pidfd_open(pid)
            self.selector.register(pidfd, selectors.EVENT_READ, pid)
            socket.send_fds(self.control, [b"S %d" % pid], [ours.fileno(), out_fd, err_fd])
        finally:
            ours.close()
            os.close(out_fd)
            os.close(err_fd)

    def serve_forever(self) -> None:
        for _ in range(STANDBY):
            self.fork_standby()
        while True:
            for key, _ in self.selector.select():
                if key.data is None:
                    message = self.control.recv(64)
                    if not message:  # the server went away
                        return
                    if message.startswith(b"K "):
                        _kill(int(message.split()[1]))
                    else:
                        self.fork_standby()
                else:
                    self._exited(key.data)

    def _exited(self, pid: int) -> None:
        pidfd = self.pidfds.pop(pid)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.control.send(b"X %d %d" % (pid, os.waitstatus_to_exitcode(status)))


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # its group (it called setsid), and itself should it not have yet
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main() -> None:
    """Entry point: `python -m services.desktop_env.zygote_process <control-fd>`."""
    die_with_parent()
    control = socket.socket(fileno=int(sys.argv[1]))
    control.setblocking(True)
    display = os.environ["DISPLAY"]
    xconnect.install()
    action_child.prepare_pyautogui(display)
    gc.freeze()  # children's garbage collections never touch (and copy) the zygote's objects
    try:
        _Zygote(control, display).serve_forever()
    except (BrokenPipeError, ConnectionResetError):  # the server went away
        pass


if __name__ == "__main__":
    main()
