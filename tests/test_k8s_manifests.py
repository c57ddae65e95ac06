"""k8s/ rendered offline: `kubectl kustomize` on the base and every overlay, the output validated by
`kubernetes-validate --strict` against the newest Kubernetes it ships schemas for, and the promises the
manifests make checked on the rendered objects: the gateway's worker count and addresses are the
StatefulSet's, probes are native gRPC on the health service the process really serves, every container
has resources, secrets come from Secrets, and the Prometheus configuration passes `promtool`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.server import MATCHES
from tests.k8s_support import (
    K8S,
    RENDERED,
    Obj,
    config_env,
    container,
    containers,
    expand,
    flag,
    one,
    pod_spec,
    port,
    render,
    render_text,
    workloads,
)
from tests.metrics_support import binary
from tests.processes import stop_process
from workers.settings import Topology

GRPC_ROLES = {"tablehall-gateway": "gateway", "tablehall-worker": "worker"}
"""Workload -> container, for the roles that serve gRPC (and so must have gRPC probes)."""
HEALTH_SERVICES = {"gateway": {"", MATCHES}, "worker": {""}}
"""What gateway/server.py and workers/service.py register as SERVING in the standard health service."""
OWN_IMAGE = "tablehall"


def validator_version() -> str:
    from kubernetes_validate.utils import latest_version

    version = str(latest_version())
    major, minor = (int(x) for x in version.split(".")[:2])
    assert (major, minor) >= (1, 34), f"kubernetes-validate {version} ships no current schemas"
    return version


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet", "-k", validator_version(), str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("target", RENDERED)
def test_renders_and_validates_strictly(target: str, tmp_path: Path) -> None:
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(render_text(target))
    done = validate(rendered)
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = {o["kind"] for o in render(target)}
    assert {"Deployment", "StatefulSet", "Service", "PodDisruptionBudget", "ConfigMap"} <= kinds


def test_strict_validation_rejects_an_unknown_field(tmp_path: Path) -> None:
    """The check above can fail: one misspelt probe field is refused."""
    objs = render("overlays/dev")
    worker = one(objs, "StatefulSet", "tablehall-worker")
    probe = container(worker, "worker")["readinessProbe"]
    probe["periodSecond"] = probe.pop("periodSeconds")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all(objs))
    done = validate(broken)
    assert done.returncode != 0 and "periodSecond" in done.stdout + done.stderr


@pytest.mark.parametrize("target", RENDERED)
def test_worker_count_and_addresses_have_one_source(target: str) -> None:
    objs = render(target)
    config = one(objs, "ConfigMap", "tablehall-config")
    data = config["data"]
    workers = one(objs, "StatefulSet", "tablehall-worker")
    count = int(data["TABLEHALL_WORKERS"])
    assert workers["spec"]["replicas"] == count, (workers["spec"]["replicas"], count)

    # the template the gateway and the sweeps format names pod k of the StatefulSet, behind its headless Service
    service = one(objs, "Service", workers["spec"]["serviceName"])
    assert service["spec"]["clusterIP"] == "None"
    labels = workers["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    worker = container(workers, "worker")
    grpc_port = port(worker, "grpc")
    assert grpc_port in [p["port"] for p in service["spec"]["ports"]]
    topology = Topology(count, data["TABLEHALL_WORKER_ADDRESS"], base_port=0)
    name, dns = workers["metadata"]["name"], workers["spec"]["serviceName"]
    assert [topology.worker_address(k) for k in range(count)] == [f"{name}-{k}.{dns}:{grpc_port}" for k in range(count)]

    # every role that needs the topology reads it from that ConfigMap, and nothing overrides it
    readers = {
        "tablehall-gateway": "gateway",
        "tablehall-worker": "worker",
        "tablehall-celery-worker": "celery-worker",  # the sweeps dial the workers
        "tablehall-beat": "beat",
    }
    for workload, name in readers.items():
        kind = "StatefulSet" if workload == "tablehall-worker" else "Deployment"
        c = container(one(objs, kind, workload), name)
        assert config["metadata"]["name"] in [s["configMapRef"]["name"] for s in c.get("envFrom", [])], workload
        assert not {e["name"] for e in c.get("env", [])} & {"TABLEHALL_WORKERS", "TABLEHALL_WORKER_ADDRESS"}
    for workload in ("tablehall-gateway", "tablehall-worker"):
        kind = "StatefulSet" if workload == "tablehall-worker" else "Deployment"
        c = container(one(objs, kind, workload), GRPC_ROLES[workload])
        assert expand(flag(c, "workers"), config_env(objs, c)) == str(count)
    assert flag(worker, "ordinal") == "$(POD_INDEX)"
    index = next(e for e in worker["env"] if e["name"] == "POD_INDEX")
    assert index["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['apps.kubernetes.io/pod-index']"


@pytest.mark.parametrize("target", RENDERED)
def test_grpc_roles_probe_the_health_service_they_serve(target: str) -> None:
    objs = render(target)
    for workload, name in GRPC_ROLES.items():
        kind = "StatefulSet" if workload == "tablehall-worker" else "Deployment"
        c = container(one(objs, kind, workload), name)
        env = config_env(objs, c)
        listens = int(flag(c, "port"))
        assert port(c, "grpc") == listens
        if "TABLEHALL_TLS_CERT" in env:  # kubelet probes speak no TLS: the plaintext health-only port
            listens = int(env["TABLEHALL_HEALTH_PORT"])
            assert port(c, "health") == listens
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert set(c[probe]) & {"grpc", "httpGet", "exec", "tcpSocket"} == {"grpc"}, (workload, probe)
            assert c[probe]["grpc"]["port"] == listens, (workload, probe)
            assert c[probe]["grpc"].get("service", "") in HEALTH_SERVICES[name], (workload, probe)


@pytest.mark.parametrize("target", RENDERED)
def test_every_container_has_requests_and_a_memory_limit(target: str) -> None:
    for obj in workloads(render(target)):
        for c in containers(obj):
            resources = c.get("resources", {})
            where = f"{obj['kind']} {obj['metadata']['name']} container {c['name']}"
            assert {"cpu", "memory"} <= set(resources.get("requests", {})), where
            assert "memory" in resources.get("limits", {}), where


@pytest.mark.parametrize("target", RENDERED)
def test_one_image_for_every_role_and_non_root_pods(target: str) -> None:
    objs = render(target)
    ours = [c["image"] for o in workloads(objs) for c in containers(o) if c["image"].split(":")[0].endswith(OWN_IMAGE)]
    assert len(ours) == 4 and len(set(ours)) == 1, ours  # gateway, worker, Celery worker, beat
    for obj in workloads(objs):
        spec = pod_spec(obj)
        assert spec["securityContext"]["runAsNonRoot"] is True, obj["metadata"]["name"]
        for c in containers(obj):
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, c["name"]
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], c["name"]


def test_prod_takes_the_database_url_from_a_secret_it_does_not_ship() -> None:
    objs = render("overlays/prod")
    assert not [o for o in objs if o["kind"] == "Secret"], "prod must not ship credentials"
    assert not [o for o in workloads(objs) if o["metadata"]["name"] == "postgres"]
    refs = []
    for obj in workloads(objs):
        for c in containers(obj):
            for item in c.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    refs.append((item["name"], ref["name"], ref["key"]))
    assert refs and set(refs) == {("TABLEHALL_DATABASE_URL", "tablehall-database", "url")}, refs
    for config in (o for o in objs if o["kind"] == "ConfigMap"):
        assert "TABLEHALL_DATABASE_URL" not in config.get("data", {})


def test_prod_serves_tls_from_a_secret_it_does_not_ship_behind_a_grpc_ingress() -> None:
    objs = render("overlays/prod")
    gateway = one(objs, "Deployment", "tablehall-gateway")
    c = container(gateway, "gateway")
    env = config_env(objs, c)
    volumes = {v["name"]: v for v in pod_spec(gateway)["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for name, key in (("TABLEHALL_TLS_CERT", "tls.crt"), ("TABLEHALL_TLS_KEY", "tls.key")):
        folder, _, file = env[name].rpartition("/")
        assert file == key and mounts[folder]["readOnly"] is True
        assert volumes[mounts[folder]["name"]]["secret"]["secretName"] == "tablehall-tls"
    for other in ("tablehall-worker", "tablehall-celery-worker"):  # only the gateway holds the key
        obj = one(objs, "StatefulSet" if other == "tablehall-worker" else "Deployment", other)
        secrets = [v["secret"]["secretName"] for v in pod_spec(obj).get("volumes", []) if "secret" in v]
        assert "tablehall-tls" not in secrets, other
    ingress = one(objs, "Ingress", "tablehall")
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/backend-protocol"] == "GRPCS"
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 600  # quiet streams live on
    assert ingress["spec"]["ingressClassName"] == "nginx"
    (tls,) = ingress["spec"]["tls"]
    (rule,) = ingress["spec"]["rules"]
    assert tls["secretName"] == "tablehall-tls" and rule["host"] in tls["hosts"]
    (path,) = rule["http"]["paths"]
    backend = path["backend"]["service"]
    (service,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == backend["name"]]
    target = next(p for p in service["spec"]["ports"] if p["name"] == backend["port"]["name"])["targetPort"]
    assert port(c, target) == int(flag(c, "port"))  # the Ingress reaches the gateway's TLS gRPC port
    for dev in (o for o in render("overlays/dev") if o["kind"] == "Ingress"):
        raise AssertionError(f"dev has an Ingress: {dev['metadata']['name']}")  # dev stays plaintext, port-forwarded


def test_dev_runs_postgres_with_a_volume_and_points_the_roles_at_it() -> None:
    objs = render("overlays/dev")
    postgres = one(objs, "StatefulSet", "postgres")
    assert postgres["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    secret = one(objs, "Secret", "tablehall-database")
    import base64

    url = base64.b64decode(secret["data"]["url"]).decode()
    assert url.startswith("postgresql+psycopg://") and "@postgres:5432/" in url
    worker = container(one(objs, "StatefulSet", "tablehall-worker"), "worker")
    ref = next(e for e in worker["env"] if e["name"] == "TABLEHALL_DATABASE_URL")["valueFrom"]["secretKeyRef"]
    assert ref["name"] == secret["metadata"]["name"]  # the generated (hashed) name


@pytest.mark.parametrize("target", RENDERED)
def test_termination_leaves_time_to_hand_over(target: str) -> None:
    objs = render(target)
    gateway = one(objs, "Deployment", "tablehall-gateway")
    pre_stop = container(gateway, "gateway")["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod_spec(gateway)["terminationGracePeriodSeconds"] >= pre_stop + 5 + 5  # + 5 s server grace + margin
    worker = one(objs, "StatefulSet", "tablehall-worker")
    assert pod_spec(worker)["terminationGracePeriodSeconds"] >= 5 + 10  # the 5 s server grace + closing the log
    assert "lifecycle" not in container(worker, "worker")  # every second before the replacement is outage
    budget = one(objs, "PodDisruptionBudget", "tablehall-worker")
    assert budget["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize("target", RENDERED)
def test_prometheus_configuration_passes_promtool(target: str, tmp_path: Path) -> None:
    """The files Prometheus's pod mounts, laid out as mounted, pass `promtool check config` (rules included)."""
    objs = render(target)
    prometheus = one(objs, "Deployment", "tablehall-prometheus")
    c = container(prometheus, "prometheus")
    maps = {o["metadata"]["name"]: o["data"] for o in objs if o["kind"] == "ConfigMap"}
    volumes = {v["name"]: v for v in pod_spec(prometheus)["volumes"]}
    for mount in c["volumeMounts"]:
        source = volumes[mount["name"]].get("configMap")
        if source:
            folder = tmp_path / mount["mountPath"].lstrip("/")
            folder.mkdir(parents=True)
            for key, text in maps[source["name"]].items():
                (folder / key).write_text(text)
    config = tmp_path / flag(c, "config.file").lstrip("/")
    # Debian's Prometheus is built without Kubernetes discovery: check that part's shape here, and the rest
    # (rule files as mounted, relabelling) with promtool on a copy where the pods are a static target.
    parsed = yaml.safe_load(config.read_text())
    job = next(j for j in parsed["scrape_configs"] if j["job_name"] == "tablehall")
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"own_namespace": True}}]
    job["static_configs"] = [{"targets": ["127.0.0.1:9100"]}]
    del job["kubernetes_sd_configs"]
    config.write_text(yaml.safe_dump(parsed))
    done = subprocess.run([binary("promtool"), "check", "config", str(config)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    alerts = yaml.safe_load((K8S / "monitoring" / "alerts.yaml").read_text())
    rules = sum(len(group["rules"]) for group in alerts["groups"])
    assert f"{rules} rules found" in done.stdout + done.stderr, done.stdout + done.stderr
    # the tablehall pods carry what the scrape job keeps: the part-of label and a port named `metrics`
    for workload in ("tablehall-gateway", "tablehall-worker", "tablehall-celery-worker"):
        obj = one(objs, "StatefulSet" if workload == "tablehall-worker" else "Deployment", workload)
        assert obj["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "tablehall"
        assert any(port(c, "metrics") for c in pod_spec(obj)["containers"])
    dashboard = one(objs, "ConfigMap", "tablehall-dashboard")
    shipped = json.loads((K8S / "monitoring" / "tablehall-dashboard.json").read_text())
    assert json.loads(dashboard["data"]["tablehall-dashboard.json"]) == shipped
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _health(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        return int(reply.status)


def _local_args(c: Obj, env: dict[str, str], listen: int) -> list[str]:
    """The container's args as Kubernetes expands them, listening on loopback instead of the pod's address."""
    args = [expand(str(a), env) for a in c["args"]]
    out = []
    for arg in args:
        if arg.startswith("--host="):
            arg = "--host=127.0.0.1"
        elif arg.startswith("--port="):
            arg = f"--port={listen}"
        out.append(arg)
    return out


def test_the_prod_gateway_serves_tls_and_its_probes_in_plaintext(tmp_path: Path) -> None:
    """The prod overlay's gateway command and environment, the Secret's files made by a test CA: its probes
    get SERVING in plaintext on the health port, its gRPC port answers only over TLS."""
    import trustme

    objs = render("overlays/prod")
    c = container(one(objs, "Deployment", "tablehall-gateway"), "gateway")
    env = {**os.environ, **config_env(objs, c), "TABLEHALL_DATABASE_URL": "memory", "TABLEHALL_WORKERS": "1"}
    env.pop("TABLEHALL_METRICS_PORT")
    authority = trustme.CA()
    issued = authority.issue_cert("127.0.0.1")
    secret = tmp_path / "tls"  # stands for the Secret's mount
    secret.mkdir()
    (secret / "tls.crt").write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(secret / "tls.key"))
    for name in ("TABLEHALL_TLS_CERT", "TABLEHALL_TLS_KEY"):
        env[name] = str(secret / env[name].rpartition("/")[2])
    listen, probes = free_port(), free_port()
    env["TABLEHALL_HEALTH_PORT"] = str(probes)
    env["TABLEHALL_WORKER_ADDRESS"] = f"127.0.0.1:{free_port()}"  # never dialled: health needs no worker
    log = (tmp_path / "gateway.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "tablehall.cli", *_local_args(c, env, listen)], env=env, stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            status = _health(f"127.0.0.1:{probes}", c[probe]["grpc"].get("service", ""))
            assert status == health_pb2.HealthCheckResponse.SERVING, probe
        credentials = grpc.ssl_channel_credentials(authority.cert_pem.bytes())
        with grpc.secure_channel(f"127.0.0.1:{listen}", credentials) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=MATCHES), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        with grpc.insecure_channel(f"127.0.0.1:{listen}") as channel, pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    finally:
        stop_process(process)
        log.close()


def test_the_rendered_commands_serve_the_probed_health_services(tmp_path: Path) -> None:
    """Start the worker and the gateway with the args and ConfigMap of the dev overlay (on loopback, with an
    in-memory log) and ask each probe's health service what a kubelet would: SERVING."""
    objs = render("overlays/dev")
    started = []
    try:
        for workload, name in GRPC_ROLES.items():
            kind = "StatefulSet" if workload == "tablehall-worker" else "Deployment"
            c = container(one(objs, kind, workload), name)
            env = {**os.environ, **config_env(objs, c), "POD_INDEX": "0", "TABLEHALL_DATABASE_URL": "memory"}
            env.pop("TABLEHALL_METRICS_PORT")  # no /metrics port needed here
            listen = free_port()
            log = (tmp_path / f"{name}.log").open("w")
            process = subprocess.Popen(
                [sys.executable, "-m", "tablehall.cli", *_local_args(c, env, listen)],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            started.append(process)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                service = c[probe]["grpc"].get("service", "")
                status = _health(f"127.0.0.1:{listen}", service)
                assert status == health_pb2.HealthCheckResponse.SERVING, (workload, probe, status)
    finally:
        for process in started:
            stop_process(process)
