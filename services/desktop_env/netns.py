"""The network of one sandboxed env: the network namespace bubblewrap made for it (`--unshare-net`),
joined to the host by a veth pair, one /30 of a private subnet per env (host end `.1`, env end `.2`).

An env slot `n` owns, for the life of its sandbox process: the lock file `/run/cua-rollout/slot-n.lock`
(flock) and the veth pair `cua<n>h` (host) / `cua<n>e` (env). The env end is created straight in the
env's namespace (`ip link ... netns <pid>`), and the namespace has no name, so it lives exactly as
long as the env's processes and the kernel deletes the pair with it. A slot whose lock is free but
whose host veth still exists is stale (its owner was killed, its namespace not yet gone) and is
cleaned on claim. Commands: iproute2's `ip`, util-linux's `nsenter` (configuring the env end).
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SUBNET = "10.213.0.0/16"
STATE_DIR = Path("/run/cua-rollout")


class NetworkError(RuntimeError):
    """The env network could not be set up; the message names the failing command and its output."""


def slot_count(subnet: str) -> int:
    """How many env slots (/30 blocks) fit in `subnet` (e.g. 16384 for a /16).

    Raises: ValueError when `subnet` is not an IPv4 network of at least 4 addresses.
    """
    network = ipaddress.ip_network(subnet)
    if network.version != 4 or network.num_addresses < 4:
        raise ValueError(f"sandbox subnet must be an IPv4 network of >= 4 addresses, got {subnet!r}")
    return network.num_addresses // 4


@dataclass(frozen=True)
class EnvNetwork:
    """Names and addresses of env slot `slot` in `subnet`."""

    slot: int
    subnet: str = DEFAULT_SUBNET

    def __post_init__(self) -> None:
        if not 0 <= self.slot < slot_count(self.subnet):
            raise ValueError(f"slot {self.slot} outside subnet {self.subnet} ({slot_count(self.subnet)} slots)")

    def _address(self, offset: int) -> str:
        base = ipaddress.ip_network(self.subnet).network_address
        return str(base + 4 * self.slot + offset)

    @property
    def host_ip(self) -> str:
        """The host end's address, e.g. `10.213.0.5`."""
        return self._address(1)

    @property
    def env_ip(self) -> str:
        """The env's address (its server, Chrome's 9222, VLC's 8080 listen here), e.g. `10.213.0.6`."""
        return self._address(2)

    @property
    def host_if(self) -> str:
        """Host-side veth name (at most 15 characters)."""
        return f"cua{self.slot}h"

    @property
    def env_if(self) -> str:
        """Env-side veth name."""
        return f"cua{self.slot}e"

    @property
    def lock_path(self) -> Path:
        """The slot's lock file."""
        return STATE_DIR / f"slot-{self.slot}.lock"

    def host_if_exists(self) -> bool:
        """True while the host end of the veth pair exists (it disappears with the env's netns)."""
        return Path(f"/sys/class/net/{self.host_if}").exists()

    def link_up(self) -> bool:
        """True once both veth ends are up (addresses and the host route are set before that), so a
        request to `env_ip` reaches the env and not the host's default route."""
        try:
            return Path(f"/sys/class/net/{self.host_if}/operstate").read_text().strip() == "up"
        except OSError:
            return False


def _run(argv: list[str], stdin: str | None = None) -> None:
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=10)
    if result.returncode != 0:
        raise NetworkError(f"`{' '.join(argv)}` failed ({result.returncode}): {result.stderr.strip()}")


def _ip(*args: str) -> None:
    _run(["ip", *args])


class SlotLock:
    """Exclusive, non-blocking flock on a slot's lock file; released when closed or when the holder
    dies (so a killed owner never blocks the slot)."""

    def __init__(self, net: EnvNetwork) -> None:
        self.net = net
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True when this process now holds the slot; False when another process does."""
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.net.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def slot_free(net: EnvNetwork) -> bool:
    """True when no live process holds `net`'s slot (probe: take and drop its lock)."""
    lock = SlotLock(net)
    if not lock.acquire():
        return False
    lock.release()
    return True


def remove_stale(net: EnvNetwork) -> None:
    """Delete a dead owner's veth of this slot (call while holding its lock)."""
    if net.host_if_exists():
        _ip("link", "delete", net.host_if)


def stage_dir(net: EnvNetwork) -> Path:
    """Host directory the env's root filesystem is mounted on (in the env's mount namespace only)."""
    return STATE_DIR / f"stage-{net.slot}"


def release_leftovers(net: EnvNetwork) -> None:
    """After the slot's supervisor exited: remove what a supervisor killed outright leaves (host
    veth, empty stage directory). No-op while another process holds the slot."""
    lock = SlotLock(net)
    if not lock.acquire():
        return
    try:
        remove_stale(net)
        try:
            stage_dir(net).rmdir()
        except OSError:
            pass
    finally:
        lock.release()


def check_subnet_unused(subnet: str) -> None:
    """Raises NetworkError when a host route other than our `cua*` veths overlaps `subnet` (the envs'
    addresses would shadow a real network)."""
    ours = ipaddress.ip_network(subnet)
    result = subprocess.run(["ip", "-o", "-4", "route", "show"], capture_output=True, text=True, timeout=10)
    for line in result.stdout.splitlines():
        fields = line.split()
        if not fields or fields[0] == "default" or "dev" not in fields:
            continue
        device = fields[fields.index("dev") + 1]
        try:
            route = ipaddress.ip_network(fields[0], strict=False)
        except ValueError:
            continue
        if route.overlaps(ours) and not device.startswith("cua"):
            raise NetworkError(f"sandbox subnet {subnet} overlaps the host route {fields[0]} on {device}; "
                               "choose another subnet (LocalEnvLauncher(sandbox_subnet=...))")


def attach(net: EnvNetwork, env_pid: int) -> None:
    """Join the network namespace of process `env_pid` (the env's PID 1) to the host: a fresh veth
    pair with its env end created in that namespace, addresses set, links up, the env's default
    route via the host end. On failure the host end (and so the pair) is removed and NetworkError
    raised naming the command."""
    try:
        _ip("link", "add", net.host_if, "type", "veth", "peer", "name", net.env_if, "netns", str(env_pid))
        _ip("addr", "add", f"{net.host_ip}/30", "dev", net.host_if)
        # one `ip -batch` inside the env's namespace (nsenter: the namespace has no name for `ip -n`)
        _run(["nsenter", f"--net=/proc/{env_pid}/ns/net", "ip", "-batch", "-"],
             stdin=f"link set lo up\naddr add {net.env_ip}/30 dev {net.env_if}\nlink set {net.env_if} up\n"
                   f"route add default via {net.host_ip}\n")
        _ip("link", "set", net.host_if, "up")  # last: `link_up()` means the env end is configured
    except BaseException:
        subprocess.run(["ip", "link", "delete", net.host_if], capture_output=True, timeout=10)
        raise
