"""Real vLLM OpenAI servers for the tests (no stand-in): the tiny models of `scripts/make_tiny_model.py`, served by
`python -m vllm.entrypoints.openai.api_server` from `.venv-vllm` (`scripts/setup.sh --vllm`).

Import the fixtures into a conftest (`from tests.vllm_fixtures import tiny_text_model, vllm_replicas  # noqa:
F401`). `vllm_replicas` starts TWO servers of the trained tiny text model (`tiny-qwen2-osworld`, served as
`SERVED_MODEL`) once per test session, each on a free port with `VLLM_CPU_KVCACHE_SPACE=1`,
`--enable-prefix-caching`, runtime LoRA on (`--enable-lora`, `VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`), polls
`/health` until `START_TIMEOUT_S` and returns a `VLLMReplicas`. Under xdist the servers are shared by every
worker through a file lock and a state file in the run's temporary root (each ~110 s to start on busy cores);
the last worker using them stops them, by PID. A server that does not come up is a test error carrying the tail
of vLLM's log, never a skip.

`start_vllm` / `wait_healthy` / `stop_vllm` start other configurations (a test's own servers).
Environment: `CUA_VLLM_VENV` (default `<repo>/.venv-vllm`), `CUA_MODELS_DIR` (default `<repo>/.cua/models`).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import pytest

from common.polling import free_port

ROOT = Path(__file__).resolve().parents[1]
VLLM_VENV = Path(os.environ.get("CUA_VLLM_VENV", ROOT / ".venv-vllm"))
MODELS_DIR = Path(os.environ.get("CUA_MODELS_DIR", ROOT / ".cua" / "models"))
SERVED_MODEL = "tiny-qwen2"
START_TIMEOUT_S = 420.0
BUILD_TIMEOUT_S = 900.0
MAX_MODEL_LEN = 16384


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive `flock` on `path` (created) while the block runs: one process of the machine at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def vllm_python() -> Path:
    """The Python of the vLLM environment. Raises: RuntimeError naming the setup command when it is missing."""
    python = VLLM_VENV / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"{python} does not exist: install vLLM with `scripts/setup.sh --vllm`")
    return python


def build_model(name: str, *args: str) -> Path:
    """`MODELS_DIR/<name>` built by `scripts/make_tiny_model.py <dir> <args>` (skipped when its stamp is
    current), one builder at a time. Raises: RuntimeError with the script's output when the build fails."""
    out = MODELS_DIR / name
    with file_lock(MODELS_DIR / ".build.lock"):
        done = subprocess.run([str(vllm_python()), str(ROOT / "scripts" / "make_tiny_model.py"), str(out), *args],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"make_tiny_model.py {name} {' '.join(args)} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return out


@dataclass
class VLLMServer:
    """One vLLM OpenAI server process: its base URL (`http://127.0.0.1:<port>`), PID and log file."""

    url: str
    pid: int
    log: str

    def log_tail(self, chars: int = 4000) -> str:
        """The last `chars` characters of the server's log."""
        try:
            return Path(self.log).read_text(errors="replace")[-chars:]
        except OSError as exc:
            return f"(no log: {exc})"


def start_vllm(model_dir: Path, log_dir: Path, served_name: str = SERVED_MODEL, lora: bool = False,
               extra_args: tuple[str, ...] = ()) -> VLLMServer:
    """Start one server of `model_dir` on a free port (not waiting for it: `wait_healthy`). Its own process
    group, stdout and stderr to `log_dir/vllm-<port>.log`."""
    port = free_port()
    log = log_dir / f"vllm-{port}.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    args = [str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", str(MAX_MODEL_LEN), "--enable-prefix-caching", "--max-num-seqs", "8",
            *extra_args]
    if lora:
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"
        args += ["--enable-lora", "--max-lora-rank", "8", "--max-loras", "2"]
    log_dir.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log_dir,
                                   start_new_session=True)
    return VLLMServer(url=f"http://127.0.0.1:{port}", pid=process.pid, log=str(log))


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:  # not our child (started by another xdist worker)
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_healthy(servers: list[VLLMServer], timeout_s: float = START_TIMEOUT_S) -> None:
    """Poll each server's `/health` until all answer 200. Raises: RuntimeError with the log tail of a server
    that exited or was not up within `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    pending = list(servers)
    while pending:
        for server in list(pending):
            if not _alive(server.pid):
                raise RuntimeError(f"vLLM server {server.url} (pid {server.pid}) exited while starting; "
                                   f"log {server.log}:\n{server.log_tail()}")
            try:
                if httpx.get(server.url + "/health", timeout=2.0).status_code == 200:
                    pending.remove(server)
            except httpx.HTTPError:
                pass
        if pending and time.monotonic() >= deadline:
            raise RuntimeError(f"vLLM server {pending[0].url} not healthy after {timeout_s:.0f} s; "
                               f"log {pending[0].log}:\n{pending[0].log_tail()}")
        if pending:
            time.sleep(0.5)  # poll interval, bounded by the deadline above


def stop_vllm(server: VLLMServer, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group (it was started as its leader: the engine core process with it),
    SIGKILL after `timeout_s`."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while _alive(server.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class VLLMReplicas:
    """The session's vLLM servers: base URLs, the served model name, the model directory (its tokenizer and
    chat template are the ones the servers use) and the servers themselves."""

    urls: list[str]
    model: str
    model_dir: Path
    servers: list[VLLMServer]


@pytest.fixture(scope="session")
def tiny_text_model() -> Path:
    """The tiny Qwen2 text model trained on OSWorld's pyautogui format (`.cua/models/tiny-qwen2-osworld`)."""
    return build_model("tiny-qwen2-osworld", "--kind", "text", "--train", "osworld_pyautogui")


@pytest.fixture(scope="session")
def vllm_replicas(tiny_text_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMReplicas]:
    """Two real vLLM servers of `tiny_text_model`, shared by the xdist workers of this run (module docstring)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: the run's root, not a worker's
    state_file, lock = shared / "vllm-replicas.json", shared / "vllm-replicas.lock"
    with file_lock(lock):
        state = json.loads(state_file.read_text()) if state_file.exists() else {"users": 0, "servers": []}
        servers = [VLLMServer(**s) for s in state["servers"]]
        if not servers or not all(_alive(s.pid) for s in servers):
            for server in servers:
                stop_vllm(server)
            servers = [start_vllm(tiny_text_model, shared / "vllm-logs", lora=True) for _ in range(2)]
            state = {"users": 0, "servers": [asdict(s) for s in servers]}
            state_file.write_text(json.dumps(state))
            try:
                wait_healthy(servers)
            except RuntimeError:
                for server in servers:
                    stop_vllm(server)
                state_file.unlink()
                raise
        state["users"] += 1
        state_file.write_text(json.dumps(state))
    yield VLLMReplicas(urls=[s.url for s in servers], model=SERVED_MODEL, model_dir=tiny_text_model, servers=servers)
    with file_lock(lock):
        state = json.loads(state_file.read_text())
        state["users"] -= 1
        if state["users"] <= 0:
            for server in servers:
                stop_vllm(server)
            state_file.unlink()
        else:
            state_file.write_text(json.dumps(state))


def tokenizer_oracle(model_dir: Path, chats: list[list[dict[str, object]]] | None = None,
                     decode: list[list[int]] | None = None, encode: list[str] | None = None) -> dict[str, list[object]]:
    """The model's real tokenizer (transformers, in .venv-vllm: `tests/vllm/tokenizer_oracle.py`) applied to
    `chats` (chat template with the generation prompt -> ids), `decode` (ids -> text, specials skipped) and
    `encode` (text -> ids). Raises: RuntimeError with the helper's stderr when it fails."""
    job = {"model_dir": str(model_dir), "chats": chats or [], "decode": decode or [], "encode": encode or []}
    done = subprocess.run([str(vllm_python()), str(ROOT / "tests" / "vllm" / "tokenizer_oracle.py")],
                          input=json.dumps(job), capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tokenizer_oracle.py failed ({done.returncode}): {done.stderr[-3000:]}")
    result: dict[str, list[object]] = json.loads(done.stdout)
    return result
