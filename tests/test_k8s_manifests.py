"""k8s/ rendered offline: `kubectl kustomize` on the base and every overlay, the output validated by
`kubernetes-validate --strict` against the newest Kubernetes it ships schemas for, and the promises the
manifests make checked on the rendered objects: workers roll with the new pod in before an old one drains,
advertise their pod IP and have the time to drain; every role that reaches the workers reads the lease table
and none is given a static worker count; probes are native gRPC on the health service the process really
serves (the rendered commands are started, the worker on a migrated SQLite file, and a match goes through
the gateway to the worker at its advertised address); every container has resources, secrets come from
Secrets, and the Prometheus configuration passes `promtool`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gateway.server import MATCHES
from tablehall.client import Client
from tablehall.ports import free_port
from tests.k8s_support import (
    K8S,
    OVERLAYS,
    RENDERED,
    Obj,
    config_env,
    container,
    containers,
    expand,
    flag,
    one,
    pod_env,
    pod_spec,
    port,
    render,
    render_text,
    workloads,
)
from tests.metrics_support import binary
from tests.processes import stop_process
from workers.partitions import PARTITIONS
from workers.sql.leases import Board
from workers.sql.migrate import migrate

GRPC_ROLES = {"tablehall-worker": "worker", "tablehall-gateway": "gateway"}
"""Deployment -> container, for the roles that serve gRPC (and so must have gRPC probes)."""
REACH_WORKERS = {
    "tablehall-gateway": "gateway",
    "tablehall-worker": "worker",
    "tablehall-celery-worker": "celery-worker",
}
"""Deployment -> container, for the roles that find workers in the lease table: the gateway routes commands,
workers hand partitions to their peers, the Celery sweeps and tournament tasks dial a match's owner."""
STATIC_TOPOLOGY = {"TABLEHALL_WORKERS", "TABLEHALL_WORKER_ADDRESS", "TABLEHALL_WORKER_BASE_PORT"}
"""The settings of the static mode (p mod N): set anywhere, they would take a role off the leases."""
HANDOFF_BUDGET_S = 0.15
"""A drain's hand-off, generously: tens of ms each; 82 of them took 9 s on this 2-core machine overloaded
(load average 12) by a bench, ~2 s otherwise."""
SERVER_GRACE_S = 5
"""The worker's gRPC server's grace for calls in flight once drained (tablehall/serve.py)."""
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
    assert {"Deployment", "Service", "PodDisruptionBudget", "ConfigMap"} <= kinds


def test_strict_validation_rejects_an_unknown_field(tmp_path: Path) -> None:
    """The check above can fail: one misspelt probe field is refused."""
    objs = render("overlays/dev")
    worker = one(objs, "Deployment", "tablehall-worker")
    probe = container(worker, "worker")["readinessProbe"]
    probe["periodSecond"] = probe.pop("periodSeconds")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all(objs))
    done = validate(broken)
    assert done.returncode != 0 and "periodSecond" in done.stdout + done.stderr


@pytest.mark.parametrize("target", RENDERED)
def test_workers_roll_a_new_pod_in_before_an_old_one_drains(target: str) -> None:
    """A Deployment (identity does not matter under leases) that surges one pod and keeps every old one until
    its replacement is Ready (= its health service serves), with no preStop: SIGTERM itself drains."""
    objs = render(target)
    assert not [o for o in objs if o["kind"] == "StatefulSet" and "tablehall-worker" in o["metadata"]["name"]]
    workers = one(objs, "Deployment", "tablehall-worker")
    strategy = workers["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    worker = container(workers, "worker")
    assert worker["readinessProbe"]["grpc"]["port"] == port(worker, "grpc")
    assert "lifecycle" not in worker
    assert workers["spec"].get("minReadySeconds", 0) == 0  # Ready is enough: the old pod hands over on SIGTERM


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_an_overlay_sets_the_worker_count_on_the_deployment(overlay: str) -> None:
    """The worker count is the Deployment's replicas, set by the overlay's `replicas:` (a misnamed entry would
    be ignored by kustomize without a word)."""
    kustomization = yaml.safe_load((K8S / "overlays" / overlay / "kustomization.yaml").read_text())
    counts = {entry["name"]: entry["count"] for entry in kustomization.get("replicas", [])}
    workers = one(render(f"overlays/{overlay}"), "Deployment", "tablehall-worker")
    assert workers["spec"]["replicas"] == counts["tablehall-worker"] >= 2  # a peer to drain to


@pytest.mark.parametrize("target", RENDERED)
def test_workers_advertise_their_pod_ip_on_the_port_they_listen_on(target: str) -> None:
    objs = render(target)
    worker = container(one(objs, "Deployment", "tablehall-worker"), "worker")
    listens = int(flag(worker, "port"))
    assert port(worker, "grpc") == listens and flag(worker, "host") == "0.0.0.0"
    env = pod_env(objs, worker, {"status.podIP": "10.244.1.7"})  # the test's pod IP; any other fieldRef fails
    assert env["TABLEHALL_WORKER_ADVERTISE"] == f"10.244.1.7:{listens}"
    assert not {a.split("=")[0] for a in map(str, worker["args"])} & {"--ordinal", "--workers", "--advertise"}


@pytest.mark.parametrize("target", RENDERED)
def test_every_role_that_reaches_the_workers_reads_the_lease_table(target: str) -> None:
    """The gateway, the workers and the Celery side get the database URL from the Secret; nothing anywhere
    sets the static mode's worker count or addresses, and no Service stands in front of the workers (each
    owns different partitions: a Service would balance over the wrong ones)."""
    objs = render(target)
    shipped = {o["metadata"]["name"] for o in objs if o["kind"] == "Secret"}  # dev's (hash-named); prod ships none
    for workload, name in REACH_WORKERS.items():
        c = container(one(objs, "Deployment", workload), name)
        ref = next(e for e in c.get("env", []) if e["name"] == "TABLEHALL_DATABASE_URL")["valueFrom"]["secretKeyRef"]
        assert ref["key"] == "url" and ref["name"].startswith("tablehall-database"), workload
        assert not shipped or ref["name"] in shipped, (workload, ref["name"], shipped)
    for obj in workloads(objs):
        for c in containers(obj):
            where = (obj["metadata"]["name"], c["name"])
            assert not STATIC_TOPOLOGY & {*config_env(objs, c), *(e["name"] for e in c.get("env", []))}, where
            flags = {str(a).split("=")[0] for a in c.get("args", [])}
            assert not flags & {"--workers", "--worker-address", "--ordinal"}, (where, flags)
    for config in (o for o in objs if o["kind"] == "ConfigMap"):
        assert not STATIC_TOPOLOGY & set(config.get("data", {})), config["metadata"]["name"]
    labels = one(objs, "Deployment", "tablehall-worker")["spec"]["template"]["metadata"]["labels"]
    for service in (o for o in objs if o["kind"] == "Service"):
        assert not service["spec"].get("selector", {}).items() <= labels.items(), service["metadata"]["name"]


@pytest.mark.parametrize("target", RENDERED)
def test_grpc_roles_probe_the_health_service_they_serve(target: str) -> None:
    objs = render(target)
    for workload, name in GRPC_ROLES.items():
        c = container(one(objs, "Deployment", workload), name)
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
        obj = one(objs, "Deployment", other)
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
    worker = container(one(objs, "Deployment", "tablehall-worker"), "worker")
    ref = next(e for e in worker["env"] if e["name"] == "TABLEHALL_DATABASE_URL")["valueFrom"]["secretKeyRef"]
    assert ref["name"] == secret["metadata"]["name"]  # the generated (hashed) name


@pytest.mark.parametrize("target", RENDERED)
def test_termination_leaves_time_to_hand_over(target: str) -> None:
    objs = render(target)
    gateway = one(objs, "Deployment", "tablehall-gateway")
    pre_stop = container(gateway, "gateway")["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod_spec(gateway)["terminationGracePeriodSeconds"] >= pre_stop + 5 + 5  # + 5 s server grace + margin
    # a worker with a peer holds at most half the partitions (two workers, one stopping): its drain hands
    # them over one at a time, then the server's grace, then closing the log (margin)
    worker = one(objs, "Deployment", "tablehall-worker")
    drain_s = PARTITIONS // 2 * HANDOFF_BUDGET_S
    assert pod_spec(worker)["terminationGracePeriodSeconds"] >= drain_s + SERVER_GRACE_S + 10
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
        obj = one(objs, "Deployment", workload)
        assert obj["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "tablehall"
        assert any(port(c, "metrics") for c in pod_spec(obj)["containers"])
    dashboard = one(objs, "ConfigMap", "tablehall-dashboard")
    shipped = json.loads((K8S / "monitoring" / "tablehall-dashboard.json").read_text())
    assert json.loads(dashboard["data"]["tablehall-dashboard.json"]) == shipped
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"


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


def _local_env(objs: list[Obj], c: Obj, database_url: str) -> dict[str, str]:
    """The container's environment as Kubernetes builds it, on this machine: the pod IP is loopback, the
    Secret's URL is `database_url`, no /metrics port; nothing of this process's own static topology."""
    env = {k: v for k, v in os.environ.items() if k not in STATIC_TOPOLOGY}
    env.update(pod_env(objs, c, {"status.podIP": "127.0.0.1"}, {"TABLEHALL_DATABASE_URL": database_url}))
    env.pop("TABLEHALL_METRICS_PORT")
    return env


def _migrated(tmp_path: Path) -> str:
    """A SQLite file with the schema (event log and lease table), standing for the Secret's database."""
    url = f"sqlite:///{tmp_path / 'tablehall.db'}"
    migrate(url)
    return url


def _start(c: Obj, env: dict[str, str], listen: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tablehall.cli", *_local_args(c, env, listen)], env=env, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


def test_the_prod_gateway_serves_tls_and_its_probes_in_plaintext(tmp_path: Path) -> None:
    """The prod overlay's gateway command and environment, the Secret's files made by a test CA: its probes
    get SERVING in plaintext on the health port, its gRPC port answers only over TLS."""
    import trustme

    objs = render("overlays/prod")
    c = container(one(objs, "Deployment", "tablehall-gateway"), "gateway")
    env = _local_env(objs, c, _migrated(tmp_path))  # an empty lease table: health needs no worker
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
    process = _start(c, env, listen, tmp_path / "gateway.log")
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


def test_the_rendered_commands_serve_the_probed_health_services(tmp_path: Path) -> None:
    """Start the worker and the gateway with the args and environment of the dev overlay (on loopback, one
    migrated SQLite file for the Secret's database) and ask each probe's health service what a kubelet
    would: SERVING. The worker writes its advertised address (from the pod IP) into the lease table, and a
    match created at the gateway reaches it there."""
    objs = render("overlays/dev")
    url = _migrated(tmp_path)
    started = []
    listening = {}
    try:
        for workload, name in GRPC_ROLES.items():  # the worker first: the gateway routes by its lease
            c = container(one(objs, "Deployment", workload), name)
            env = _local_env(objs, c, url)
            listen = listening[name] = free_port()
            if name == "worker":  # the pod's address on the port the container listens on, here the free one
                assert env["TABLEHALL_WORKER_ADVERTISE"] == f"127.0.0.1:{flag(c, 'port')}"
                env["TABLEHALL_WORKER_ADVERTISE"] = f"127.0.0.1:{listen}"
            started.append(_start(c, env, listen, tmp_path / f"{name}.log"))
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                service = c[probe]["grpc"].get("service", "")
                status = _health(f"127.0.0.1:{listen}", service)
                assert status == health_pb2.HealthCheckResponse.SERVING, (workload, probe, status)

        async def through_the_gateway() -> set[str]:
            async with Client(f"127.0.0.1:{listening['gateway']}") as client:
                created = await client.create_match("501", ["ann", "bob", "cy"])
            board = Board(url)
            try:
                table = await board.leases()
            finally:
                await board.close()
            assert created.match_id
            return {m.address for m in table.members.values()}

        assert asyncio.run(through_the_gateway()) == {f"127.0.0.1:{listening['worker']}"}
    finally:
        for process in reversed(started):
            stop_process(process)
