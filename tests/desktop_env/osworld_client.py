"""Client of `osworld_client_runner.py`: calls OSWorld's own `PythonController` and
`SetupController` (in `.venv-oracle`, a separate process) against an env pod."""

from __future__ import annotations

import base64
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.oracle.client import ORACLE_PYTHON, ROOT, OracleUnavailable

RUNNER = Path(__file__).with_name("osworld_client_runner.py")


class OSWorldCallError(AssertionError):
    """OSWorld's controller raised: `type` is the exception class, `detail` its repr and traceback."""

    def __init__(self, method: str, type_name: str, detail: str) -> None:
        super().__init__(f"OSWorld {method} raised {type_name}: {detail}")
        self.type = type_name


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@dataclass
class OSWorldClient:
    """OSWorld's controllers pointed at the env `host:port`. `retry_interval` 0 (OSWorld: 5 s)
    so that calls OSWorld retries on an error reply do not sleep 15 s; `retry_times` stays 3."""

    host: str
    port: int

    def __post_init__(self) -> None:
        if not ORACLE_PYTHON.exists():
            raise OracleUnavailable(f"{ORACLE_PYTHON} is missing: run `bash scripts/setup.sh --oracle`")
        self._process = subprocess.Popen([str(ORACLE_PYTHON), str(RUNNER)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def _call(self, request: dict[str, Any]) -> Any:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise OracleUnavailable(f"OSWorld client runner exited with {self._process.poll()}")
        reply = json.loads(line)
        if reply.get("setup_error"):
            raise OracleUnavailable(f"cannot load OSWorld's controllers: {reply['error']}\n{reply['traceback']}")
        if not reply["ok"]:
            raise OSWorldCallError(request["method"], reply["type"], f"{reply['error']}\n{reply['traceback']}")
        return _decode(reply["value"])

    def python(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`PythonController(host, port).<method>(*args, **kwargs)`; raises OSWorldCallError when it raises."""
        return self._call({"controller": "python", "init": {"vm_ip": self.host, "server_port": self.port},
                           "attrs": {"retry_interval": 0}, "method": method, "args": list(args), "kwargs": kwargs})

    def setup(self, config: list[dict[str, Any]], cache_dir: Path, **init: Any) -> Any:
        """`SetupController(host, port, cache_dir=...).setup(config)` (True when every step ran)."""
        arguments = {"vm_ip": self.host, "server_port": self.port, "cache_dir": str(cache_dir), **init}
        return self._call({"controller": "setup", "init": arguments, "method": "setup", "args": [config]})

    def close(self) -> None:
        """Stop the runner process."""
        if self._process.stdin:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
