"""Sandboxed local envs (services/desktop_env/sandbox.py): two real envs, each in its own network,
mount and PID namespace; destructive tasks in one leave the host and the neighbour untouched.

Needs root (namespaces, overlay mounts, veth pairs): as root the sandbox must work, so these tests
fail rather than skip when it does not; as another user they are skipped (the launcher falls back to
unsandboxed envs there, covered by tests/desktop_env/test_server.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from common.env_client import DesktopEnvClient, EnvError
from common.polling import wait_until
from services.desktop_env import sandbox
from services.desktop_env.launcher import LocalEnvLauncher
from services.desktop_env.processes import is_alive
from tests.servers import env_clients

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sandboxes need root; the fallback is tested elsewhere")

SUDO = "echo password | sudo -S -p '' "


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEnvLauncher]:
    assert sandbox.unavailable_reason() is None  # root here: the sandbox must be available
    with LocalEnvLauncher(count=2, root_dir=tmp_path_factory.mktemp("sandboxed"), sandbox=True) as started:
        yield started


@pytest.fixture(scope="module")
def clients(launcher: LocalEnvLauncher) -> Iterator[list[DesktopEnvClient]]:
    with env_clients(launcher.urls) as envs:
        yield envs


def sh(env: DesktopEnvClient, command: str, timeout_s: float = 60) -> str:
    """Run `command` in the env's shell; its stdout (asserting it succeeded)."""
    result = env.execute(command, shell=True, timeout_s=timeout_s)
    assert (result.status, result.returncode) == ("success", 0), result
    return result.output or ""


def test_each_env_has_its_own_address_and_runs_as_user(launcher: LocalEnvLauncher,
                                                       clients: list[DesktopEnvClient]) -> None:
    hosts = [env.host for env in clients]
    assert len(set(hosts)) == 2 and all(h.startswith("10.213.") for h in hosts)
    for env in clients:
        assert sh(env, "id -un; id -u; echo $HOME; pwd; getent passwd user | cut -d: -f6") == \
            "user\n1000\n/home/user\n/home/user\n/home/user\n"
        assert sh(env, "stat -c %U /home/user; echo $XDG_RUNTIME_DIR; echo $DBUS_SESSION_BUS_ADDRESS") == \
            "user\n/run/user/1000\nunix:path=/run/user/1000/bus\n"
        assert env.host in sh(env, "ip -o -4 addr show")
    wrong = clients[0].execute("echo nope | sudo -S -p '' true", shell=True)
    assert wrong.returncode != 0  # sudo wants the user's password, as on OSWorld's VMs


def test_home_user_is_real_and_is_the_launchers_home_dir(launcher: LocalEnvLauncher,
                                                         clients: list[DesktopEnvClient]) -> None:
    env = clients[0]
    env.reset()
    sh(env, "echo hi > /home/user/Documents/real.txt && " + SUDO + "mkdir /home/user/Desktop/by-root")
    assert (launcher.home(0) / "Documents" / "real.txt").read_text() == "hi\n"
    assert (launcher.home(0) / "Desktop" / "by-root").is_dir()
    assert not (launcher.home(1) / "Documents" / "real.txt").exists()
    assert sh(env, "readlink -f ~/Documents/real.txt") == "/home/user/Documents/real.txt\n"
    env.reset()  # removes the root-owned directory too (sudo with the password)
    assert not (launcher.home(0) / "Desktop" / "by-root").exists()


def test_destructive_commands_stay_inside_one_env(tmp_path: Path, clients: list[DesktopEnvClient]) -> None:
    victim, neighbour = clients
    host_file = Path("/tmp") / f"cua-sandbox-host-{os.getpid()}"
    host_file.write_text("host")
    try:
        sh(neighbour, "echo neighbour > /tmp/neighbour-file")
        sh(victim, "rm -rf /tmp/* /tmp/.[!.]* 2>/dev/null; "
               + SUDO + "sh -c 'echo owned > /etc/cua-sandbox-test && mkdir -p /usr/lib/cua-sandbox-pkg && "
               "echo bin > /usr/bin/cua-sandbox-tool && rm -rf /etc/issue /usr/share/doc/bash'")
        assert sh(victim, "cat /etc/cua-sandbox-test /usr/bin/cua-sandbox-tool; ls /usr/share/doc/bash || true") == \
            "owned\nbin\n"
        for path in ("/etc/cua-sandbox-test", "/usr/lib/cua-sandbox-pkg", "/usr/bin/cua-sandbox-tool"):
            assert not Path(path).exists(), f"{path} leaked to the host"
        assert Path("/etc/issue").exists() and Path("/usr/share/doc/bash").is_dir()
        assert host_file.read_text() == "host"
        listing = "cat /tmp/neighbour-file; ls -d /etc/cua-sandbox-test /usr/share/doc/bash 2>&1 || true"
        assert sh(neighbour, listing) == \
            "neighbour\nls: cannot access '/etc/cua-sandbox-test': No such file or directory\n/usr/share/doc/bash\n"
        assert neighbour.healthy() and victim.healthy()  # the X socket survives (abstract socket)
    finally:
        host_file.unlink()


def test_apps_ports_do_not_collide_and_localhost_is_per_env(clients: list[DesktopEnvClient]) -> None:
    # What OSWorld's Chrome tasks do: an app on localhost:1337, socat 9222 -> localhost:1337.
    for index, env in enumerate(clients):
        sh(env, f"mkdir -p /tmp/www && echo env-{index} > /tmp/www/index.html")
        env.launch(["python3", "-m", "http.server", "1337", "--bind", "127.0.0.1", "--directory", "/tmp/www"])
        env.launch("socat tcp-listen:9222,fork,reuseaddr tcp:localhost:1337", shell=True)

    def served(index: int) -> str | None:
        try:
            response = httpx.get(f"http://{clients[index].host}:9222/index.html", timeout=2)
        except httpx.HTTPError:
            return None
        return response.text if response.is_success else None

    for index in range(2):
        assert wait_until(lambda i=index: served(i), 20, f"env {index}'s port 9222") == f"env-{index}\n"
    for env in clients:
        env.reset()


def _ns_ids(pid: int) -> set[str]:
    return {os.readlink(f"/proc/{pid}/ns/{kind}") for kind in ("net", "mnt", "pid_for_children")}


def _processes_in(namespaces: set[str]) -> list[int]:
    found = []
    for process in psutil.process_iter():
        try:
            ids = {os.readlink(f"/proc/{process.pid}/ns/{kind}") for kind in ("net", "mnt", "pid")}
        except OSError:
            continue
        if ids & namespaces:
            found.append(process.pid)
    return found


def _env_processes(supervisor: int) -> tuple[int, int]:
    """(host PID of the env's PID 1: bubblewrap's init, host PID of the env server)."""
    children = {p.name(): p for p in psutil.Process(supervisor).children()}
    init, = children["bwrap"].children()
    server, = children["nsenter"].children()
    assert server.cmdline()[-2:] == ["-m", "services.desktop_env"]
    return init.pid, server.pid


def test_kill_all_and_stop_leave_nothing_behind(tmp_path: Path, clients: list[DesktopEnvClient]) -> None:
    host_user_sleeper = subprocess.Popen(["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups",
                                          "sleep", "600"])
    try:
        with LocalEnvLauncher(count=1, root_dir=tmp_path, sandbox=True) as one:
            supervisor = one.pids[0]
            env_init, server = _env_processes(supervisor)
            namespaces = _ns_ids(server) - _ns_ids(os.getpid())
            assert len(namespaces) == 3 and _ns_ids(env_init) == _ns_ids(server)
            net = one.networks[0]
            # the stage's mounts live in the supervisor's and the env's mount namespaces, not the host's
            assert f"stage-{net.slot}" not in Path("/proc/self/mountinfo").read_text()
            env = DesktopEnvClient(one.urls[0])
            # an orphan of the env is re-parented to bubblewrap's init (PID 1) and reaped by it
            assert sh(env, "sh -c 'sleep 0.2 &'; ps -o comm= -p 1") == "bwrap\n"
            wait_until(lambda: sh(env, "ps -eo stat= | grep -c '^Z' || true") == "0\n", 10, "orphans reaped")
            sh(env, "sleep 1000 > /dev/null 2>&1 &")
            # as root: every process in the env but PID 1 (the server too, so the request fails)
            with pytest.raises(EnvError):
                env.execute(SUDO + "kill -9 -1", shell=True)
            wait_until(lambda: not is_alive(supervisor), 20, "the env to end after `sudo kill -9 -1`")
            assert is_alive(host_user_sleeper.pid) and is_alive(os.getpid())
            assert all(neighbour.healthy() for neighbour in clients)
            assert sh(clients[0], "echo still-here") == "still-here\n"
            env.close()
        assert not is_alive(supervisor) and not is_alive(env_init) and not is_alive(server)
        assert _processes_in(namespaces) == []  # not even a zombie: the supervisor reaped the env's init
        assert not net.host_if_exists()
        assert f"stage-{net.slot}" not in os.listdir("/run/cua-rollout")
        assert net.host_if not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    finally:
        host_user_sleeper.kill()
        host_user_sleeper.wait()


def test_reset_empties_the_private_tmp_and_closes_apps(clients: list[DesktopEnvClient]) -> None:
    env = clients[1]
    sh(env, "touch /tmp/left-over ~/Desktop/left-over && " + SUDO + "mkdir -p /tmp/root-dir/sub")
    env.launch(["mousepad"])
    wait_until(lambda: "Mousepad" in sh(env, "wmctrl -l"), 20, "mousepad's window")
    env.reset()
    assert sh(env, "ls -A /tmp | grep -v '^.X' || true; ls -A ~/Desktop; wmctrl -l") == ""
    assert env.healthy()
