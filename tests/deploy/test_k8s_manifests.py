"""deploy/k8s, checked offline: each overlay rendered by the real `kubectl kustomize` and piped to
`kubernetes-validate --strict`, KEDA objects against the vendored CRD schemas, every container's
probes / limits / securityContext, and what the manifests promise (RBAC, NetworkPolicies, Secret
scope, KEDA triggers on the real queue keys, settings names that exist). No cluster is used."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from rq import Queue
from rq.registry import StartedJobRegistry

from common import keys
from scripts import validate_k8s as vk
from services.desktop_env.settings import DesktopEnvSettings
from services.model_gateway.settings import GatewaySettings
from services.runner.settings import RunnerSettings
from services.scripted_policy.settings import ScriptedPolicySettings
from services.storage_sink.settings import SinkSettings
from services.task_producer.settings import ProducerSettings
from tests.deploy.netpolicy import Endpoint, Network
from tests.docs.test_readme import env_names

OVERLAYS = ["dev", "gpu"]
APP_NS, ENV_NS = "cua-rollout", "cua-envs"


@functools.cache
def rendered(overlay: str) -> str:
    return vk.render(vk.K8S_DIR / "overlays" / overlay)


def docs(overlay: str) -> list[dict[str, Any]]:
    return copy.deepcopy(vk.documents(rendered(overlay)))


def find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = vk.pod_spec(obj) or {}
    return list(spec.get("containers", [])) + list(spec.get("initContainers", []))


def test_overlays_are_the_ones_tested() -> None:
    assert [p.name for p in vk.overlays()] == OVERLAYS


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_and_validates(overlay: str) -> None:
    assert vk.check_rendered(rendered(overlay)) == []
    kinds = {o["kind"] for o in docs(overlay)}
    assert {"Namespace", "Deployment", "StatefulSet", "Service", "PodDisruptionBudget", "ScaledObject",
            "TriggerAuthentication", "Role", "RoleBinding", "NetworkPolicy", "ConfigMap"} <= kinds


def test_the_whole_check_runs_as_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert vk.main([str(vk.K8S_DIR / "overlays" / "dev")]) == 0
    assert "0 problems" in capsys.readouterr().out


def test_kubernetes_validate_rejects_an_unknown_field() -> None:
    objs = docs("dev")
    runner = find(objs, "Deployment", "runner")
    runner["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}  # misspelt
    problems = vk.kubernetes_validate(yaml.safe_dump_all(objs))
    assert any("livenessprobe" in p for p in problems), problems


def test_kinds_without_any_schema_are_problems() -> None:
    problems = vk.kubernetes_validate(yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget",
                                                      "metadata": {"name": "w"}}))
    assert problems == ["no schema anywhere for Widget example.com/v1"]


@pytest.mark.parametrize("mutation, expected", [
    (lambda so: so["spec"].update(minReplicas=1), "minReplicas"),
    (lambda so: so["spec"].update(minReplicaCount=9, maxReplicaCount=3), "minReplicaCount 9 > maxReplicaCount 3"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].update(listname="x"), "unknown metadata keys ['listname']"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].pop("listName"), "lacks metadata listName"),
    (lambda so: so["spec"]["triggers"][0]["metadata"].update(listLength=1), "is not of type 'string'"),
    (lambda so: so["spec"].pop("scaleTargetRef"), "'scaleTargetRef' is a required property"),
])
def test_vendored_keda_schemas_catch_mistakes(mutation: Any, expected: str) -> None:
    objs = docs("dev")
    scaled = find(objs, "ScaledObject", "runner")
    assert vk.validate_custom_resources([scaled]) == []
    mutation(scaled)
    problems = vk.validate_custom_resources([scaled])
    assert any(expected in p for p in problems), problems


def _drop(path: list[str]) -> Any:
    def mutate(container: dict[str, Any]) -> None:
        node = container
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


@pytest.mark.parametrize("mutation, expected", [
    (_drop(["readinessProbe"]), "no readinessProbe"),
    (_drop(["livenessProbe"]), "no livenessProbe"),
    (_drop(["resources", "limits", "memory"]), "no memory in resources.limits"),
    (_drop(["resources", "requests", "cpu"]), "no cpu in resources.requests"),
    (_drop(["securityContext"]), "no securityContext"),
    (_drop(["securityContext", "capabilities"]), "capabilities do not drop ALL"),
    (_drop(["securityContext", "allowPrivilegeEscalation"]), "allowPrivilegeEscalation is not false"),
    (lambda c: c["securityContext"].update(runAsNonRoot=False), "runAsNonRoot is not true"),
])
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_container_check_fails_on_a_missing_probe_limit_or_security_context(
        overlay: str, mutation: Any, expected: str) -> None:
    objs = docs(overlay)
    workloads = [o for o in objs if o["kind"] in ("Deployment", "StatefulSet")]
    assert len(workloads) >= 6
    for obj in workloads:  # every container, one at a time (init containers run to completion: no probes)
        long_running = len((vk.pod_spec(obj) or {}).get("containers", []))
        for index in range(len(containers(obj))):
            if index >= long_running and "Probe" in expected:
                continue
            broken = copy.deepcopy(obj)
            mutation(containers(broken)[index])
            problems = vk.container_problems(broken)
            assert any(expected in p for p in problems), (vk.name_of(obj), problems)


def test_a_job_needs_a_deadline_and_no_probes() -> None:
    job = find(docs("dev"), "Job", "minio-bucket")
    assert vk.container_problems(job) == []
    del job["spec"]["activeDeadlineSeconds"]
    assert vk.container_problems(job) == ["Job/cua-rollout/minio-bucket: Job without activeDeadlineSeconds"]


def test_env_pod_template_is_valid_and_labelled() -> None:
    assert vk.ENV_POD_TEMPLATE.resolve() == vk.K8S_DIR / "base" / "env-pod-template.yaml"
    assert vk.check_env_pod_template() == []
    pod = yaml.safe_load(vk.ENV_POD_TEMPLATE.read_text())
    (container,) = pod["spec"]["containers"]
    assert container["image"].startswith("cua-rollout-desktop")
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    # the runner gets the same file through the ConfigMap the base generates from it
    (config_map,) = [o for o in docs("dev") if o["metadata"]["name"].startswith("cua-env-pod-template")]
    assert config_map["data"]["env-pod-template.yaml"] == vk.ENV_POD_TEMPLATE.read_text()
    runner = find(docs("dev"), "Deployment", "runner")
    volumes = runner["spec"]["template"]["spec"]["volumes"]
    assert {"name": "env-pod-template", "configMap": {"name": config_map["metadata"]["name"]}} in volumes
    # mounted at the provider's default path (relative to the image's WORKDIR)
    (mount,) = [m for m in containers(runner)[0]["volumeMounts"] if m["name"] == "env-pod-template"]
    workdir = re.findall(r"^WORKDIR (\S+)", (vk.ROOT / "deploy/docker/Dockerfile").read_text(), re.M)[-1]
    field = RunnerSettings.model_fields.get("k8s_pod_template")  # the provider's setting, when merged
    default = str(field.default) if field else "deploy/k8s/env-pod-template.yaml"
    assert mount["mountPath"] == f"{workdir}/{default}"
    assert mount["subPath"] == "env-pod-template.yaml"


def test_env_pod_template_without_the_label_is_a_problem(tmp_path: Path) -> None:
    broken = tmp_path / "pod.yaml"
    broken.write_text(vk.ENV_POD_TEMPLATE.read_text().replace("app: cua-env", "app: other"))
    assert vk.check_env_pod_template(broken) == ["pod.yaml: label app=cua-env missing"]


SETTINGS = (ProducerSettings, RunnerSettings, GatewaySettings, SinkSettings, DesktopEnvSettings,
            ScriptedPolicySettings)
# Read by the process or its libraries, not by our settings classes: the home of a user the image
# does not have, and the caches of numba (librosa) and matplotlib on a read-only root filesystem.
PROCESS_VARS = {"HOME", "NUMBA_CACHE_DIR", "MPLCONFIGDIR"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_env_vars_of_our_images_are_real_settings(overlay: str) -> None:
    known = set().union(*(env_names(s) for s in SETTINGS)) | PROCESS_VARS
    template = yaml.safe_load(vk.ENV_POD_TEMPLATE.read_text())
    checked = 0
    for obj in docs(overlay) + [template]:
        for container in containers(obj):
            if not container["image"].startswith("cua-rollout"):
                continue
            env = container.get("env", [])
            interpolated = set(re.findall(r"\$\((\w+)\)", " ".join(str(e.get("value", "")) for e in env)))
            names = {e["name"] for e in env}
            assert names - known - interpolated == set(), vk.name_of(obj)
            assert interpolated <= names, vk.name_of(obj)  # $(X) only refers to variables defined
            checked += 1
    assert checked >= 5


def test_keda_triggers_watch_the_real_queue_and_stream_keys() -> None:
    objs = docs("dev")
    runner = find(objs, "ScaledObject", "runner")
    assert runner["spec"]["scaleTargetRef"]["name"] == "runner"
    queued = {t["metadata"]["listName"] for t in runner["spec"]["triggers"] if t["name"].startswith("queued_")}
    running = {t["metadata"]["listName"] for t in runner["spec"]["triggers"] if t["name"].startswith("running_")}
    unconnected = redis.Redis()  # RQ builds its key names without talking to Redis
    assert queued == {Queue(name, connection=unconnected).key for name in keys.QUEUE_NAMES.values()}
    assert running == {StartedJobRegistry(name, connection=unconnected).key for name in keys.QUEUE_NAMES.values()}
    assert all(t["type"] == "redis" for t in runner["spec"]["triggers"])
    formula = runner["spec"]["advanced"]["scalingModifiers"]["formula"]
    assert sorted(formula.replace(" ", "").split("+")) == sorted(t["name"] for t in runner["spec"]["triggers"])
    sink = find(objs, "ScaledObject", "sink")
    assert {t["metadata"]["stream"] for t in sink["spec"]["triggers"]} == {keys.EVENTS_STREAM}
    (pending,) = [t for t in sink["spec"]["triggers"] if "pendingEntriesCount" in t["metadata"]]
    assert pending["type"] == "redis-streams" and pending["metadata"]["consumerGroup"] == keys.SINK_GROUP
    # KEDA reads REDIS_ADDRESS from the scale target's container
    for scaled in (runner, sink):
        target = find(objs, "Deployment", scaled["spec"]["scaleTargetRef"]["name"])
        env = {e["name"] for e in containers(target)[0]["env"]}
        assert {t["metadata"]["addressFromEnv"] for t in scaled["spec"]["triggers"]} <= env


def test_overlays_set_their_own_replica_bounds() -> None:
    bounds = {}
    for overlay in OVERLAYS:
        for name in ("runner", "sink"):
            spec = find(docs(overlay), "ScaledObject", name)["spec"]
            bounds[overlay, name] = (spec["minReplicaCount"], spec["maxReplicaCount"])
    assert bounds == {("dev", "runner"): (1, 4), ("dev", "sink"): (1, 2),
                      ("gpu", "runner"): (2, 200), ("gpu", "sink"): (2, 16)}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_runner_may_only_manage_pods_in_the_env_namespace(overlay: str) -> None:
    objs = docs(overlay)
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    bindings = [o for o in objs if o["kind"] == "RoleBinding"]
    assert [(b["metadata"]["namespace"], b["subjects"]) for b in bindings] == [
        (ENV_NS, [{"kind": "ServiceAccount", "name": "runner", "namespace": APP_NS}])]
    role = find(objs, "Role", bindings[0]["roleRef"]["name"])
    assert role["metadata"]["namespace"] == ENV_NS
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                              "verbs": ["create", "get", "list", "watch", "delete"]}]
    for obj in objs:
        spec = vk.pod_spec(obj)
        if spec is not None:
            token = spec.get("automountServiceAccountToken")
            assert (spec["serviceAccountName"] == "runner") == bool(token), vk.name_of(obj)


def _secret_users(overlay: str, secret: str) -> set[str]:
    """Names of the objects whose pods read Secret `secret` (a `secretKeyRef` in env)."""
    users = set()
    for obj in docs(overlay):
        text = yaml.safe_dump(vk.pod_spec(obj) or {})
        if re.search(rf"name: {re.escape(secret)}\n", text):
            users.add(obj["metadata"]["name"])
    return users


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_s3_credentials_reach_only_the_sink_and_the_producer(overlay: str) -> None:
    # dev: MinIO's bucket Job creates the services' S3 user from the same Secret
    assert _secret_users(overlay, "cua-s3") == ({"sink", "producer", "minio-bucket"} if overlay == "dev"
                                                else {"sink", "producer"})
    # the runners' put-only key (deploy/policies): the runners, and the Job that creates their MinIO user
    assert _secret_users(overlay, "cua-s3-runner") == ({"runner", "minio-bucket"} if overlay == "dev" else {"runner"})
    assert not _secret_users(overlay, "cua-s3") & {"runner", "env-pod-template"}


def test_the_bucket_job_gives_the_runners_the_shipped_put_only_policy() -> None:
    """The dev Job mounts the component's policy file (the one deploy/policies links to) and attaches it to
    the runners' user; the file allows PutObject on `_blobs/*` and nothing else."""
    job = find(docs("dev"), "Job", "minio-bucket")
    script = "\n".join(job["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "mc admin policy attach cua cua-runner-blobs --user \"$RUNNER_S3_ACCESS_KEY\"" in script
    volume = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "policies"][0]
    policies = find(docs("dev"), "ConfigMap", volume["configMap"]["name"])  # generated: a hash suffix
    assert policies["metadata"]["name"].startswith("cua-minio-policies")
    shipped = (vk.ROOT / "deploy/policies/runner-blobs.minio.json").read_text()
    assert json.loads(policies["data"]["runner-blobs.minio.json"]) == json.loads(shipped)
    assert [s["Action"] for s in json.loads(shipped)["Statement"]] == [["s3:PutObject"]]


def _pod(component: str, namespace: str = APP_NS) -> Endpoint:
    return Endpoint(namespace, {"app.kubernetes.io/part-of": "cua-rollout", "app.kubernetes.io/component": component})


ENV_POD = Endpoint(ENV_NS, {"app": "cua-env"})
EXTERNAL_S3 = Endpoint(ip="52.216.0.10")
KEDA = Endpoint("keda", {"app": "keda-operator"})
SERVICES = ["producer", "gateway", "runner", "sink", "redis", "minio", "model-server", "minio-init"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies(overlay: str) -> None:
    net = Network(docs(overlay), extra_namespaces={"keda": {}, "kube-system": {}, "monitoring": {}})
    # env pods: only runners, only on 5000
    assert [c for c in SERVICES if net.allowed(_pod(c), ENV_POD, 5000)] == ["runner"]
    assert not net.allowed(_pod("runner"), ENV_POD, 22)
    assert not net.allowed(Endpoint(ENV_NS, {"app": "cua-env"}), ENV_POD, 5000)  # env to env
    # Redis: our Redis clients and KEDA's operator
    # (the gateway: its sessions publish their calls on the event stream)
    redis_clients = [c for c in SERVICES if net.allowed(_pod(c), _pod("redis"), 6379)]
    assert redis_clients == ["producer", "gateway", "runner", "sink"]
    assert net.allowed(KEDA, _pod("redis"), 6379)
    assert not net.allowed(ENV_POD, _pod("redis"), 6379)
    assert not net.allowed(Endpoint("default", {"app": "x"}), _pod("redis"), 6379)
    # S3 in the cluster (MinIO, dev only): sink, producer, runners (put-only key) and the bucket Job
    minio_clients = [c for c in SERVICES if net.allowed(_pod(c), _pod("minio"), 9000)]
    assert minio_clients == (["producer", "runner", "sink", "minio-init"] if overlay == "dev" else [])
    assert not net.allowed(ENV_POD, _pod("minio"), 9000)
    # external S3 over HTTPS: the sink, the producer and the runners (their key may only put step files)
    assert [c for c in SERVICES if net.allowed(_pod(c), EXTERNAL_S3, 443)] == ["producer", "runner", "sink"]
    # the model path
    assert [c for c in SERVICES if net.allowed(_pod(c), _pod("gateway"), 8000)] == ["runner"]
    assert [c for c in SERVICES if net.allowed(_pod(c), _pod("model-server"), 8000)] == ["gateway"]


def test_network_evaluator_denies_what_no_rule_allows() -> None:
    net = Network([{"kind": "NetworkPolicy", "metadata": {"name": "d", "namespace": "a"},
                    "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}], extra_namespaces={"a": {}})
    assert not net.allowed(Endpoint("a", {"x": "1"}), Endpoint("a", {"y": "1"}), 80)
    assert net.allowed(Endpoint("a", {"y": "1"}), Endpoint("b", {"y": "1"}), 80)  # b has no policy


def test_redis_keeps_aof_everysec_noeviction_on_a_volume() -> None:
    redis = find(docs("dev"), "StatefulSet", "redis")
    args = " ".join(containers(redis)[0]["args"])
    assert "--appendonly yes" in args and "--appendfsync everysec" in args
    assert "--maxmemory-policy noeviction" in args
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    assert {"name": "data", "mountPath": "/data"} in containers(redis)[0]["volumeMounts"]


def test_gpu_overlay_serves_vllm_from_a_volume_on_gpus() -> None:
    objs = docs("gpu")
    vllm = find(objs, "Deployment", "vllm")
    (container,) = containers(vllm)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "--enable-prefix-caching" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 600  # model load: minutes
    model = container["args"][container["args"].index("--model") + 1]
    (mount,) = [m for m in container["volumeMounts"] if model.startswith(m["mountPath"])]
    (volume,) = [v for v in vllm["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    find(objs, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    gateway = find(objs, "Deployment", "gateway")
    replicas = {e["name"]: e.get("value") for e in containers(gateway)[0]["env"]}["GATEWAY_REPLICAS"]
    assert replicas == "http://vllm.cua-rollout.svc.cluster.local:8000"
    assert not [o for o in objs if o["metadata"]["name"] in ("minio", "policy")]


def test_dev_overlay_runs_the_scripted_policy_and_minio() -> None:
    objs = docs("dev")
    policy = find(objs, "Deployment", "policy")
    assert containers(policy)[0]["command"] == ["python", "-m", "services.scripted_policy"]
    find(objs, "StatefulSet", "minio")
    find(objs, "Job", "minio-bucket")
    assert not [o for o in objs if o["metadata"]["name"] == "vllm"]
    for obj in objs:
        for container in containers(obj):
            command = container.get("command") or []
            if command[:2] == ["python", "-m"]:
                assert (vk.ROOT / command[2].replace(".", "/") / "__main__.py").exists(), command


def test_hpa_component_replaces_keda(tmp_path: Path) -> None:
    """The plain-HPA alternative, added to the dev overlay the way the README says."""
    root = Path(os.path.relpath(vk.K8S_DIR, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(
        {"resources": [str(root / "overlays" / "dev")], "components": [str(root / "components" / "hpa")]}))
    text = vk.render(tmp_path)
    assert vk.check_rendered(text) == []
    objs = vk.documents(text)
    assert not [o for o in objs if o["apiVersion"].startswith("keda.sh/")]
    hpas = {o["spec"]["scaleTargetRef"]["name"] for o in objs if o["kind"] == "HorizontalPodAutoscaler"}
    assert hpas == {"runner", "sink"}
    exporter = find(objs, "Deployment", "redis-exporter")
    env = {e["name"]: e.get("value") for e in containers(exporter)[0]["env"]}
    runner_keys = {t["metadata"]["listName"] for t in find(docs("dev"), "ScaledObject", "runner")["spec"]["triggers"]}
    assert set(env["REDIS_EXPORTER_CHECK_SINGLE_KEYS"].split(",")) == runner_keys
    assert env["REDIS_EXPORTER_CHECK_SINGLE_STREAMS"] == keys.EVENTS_STREAM


def test_vendored_schemas_accept_every_documented_scaled_object_field() -> None:
    """Strict, but not stricter than KEDA: a ScaledObject using the spec's optional fields passes."""
    scaled = find(docs("dev"), "ScaledObject", "sink")
    scaled["spec"].update(
        idleReplicaCount=0, initialCooldownPeriod=30,
        fallback={"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"},
        advanced={"restoreToOriginalReplicaCount": True, "horizontalPodAutoscalerConfig": {
            "name": "sink-hpa", "behavior": {"scaleUp": {
                "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}}}})
    scaled["spec"]["triggers"][0].update(metricType="AverageValue", useCachedMetrics=True)
    scaled["spec"]["scaleTargetRef"].update(apiVersion="apps/v1", kind="Deployment", envSourceContainerName="sink")
    assert vk.validate_custom_resources([scaled]) == []
    scaled["spec"]["fallback"]["behavior"] = "sometimes"
    assert any("fallback.behavior" in p for p in vk.validate_custom_resources([scaled]))


def test_trigger_authentication_schema_is_strict() -> None:
    auth = find(docs("dev"), "TriggerAuthentication", "redis-auth")
    assert vk.validate_custom_resources([auth]) == []
    auth["spec"]["secretTargetRef"][0]["param"] = auth["spec"]["secretTargetRef"][0].pop("parameter")
    problems = vk.validate_custom_resources([auth])
    assert any("'parameter' is a required property" in p for p in problems), problems
