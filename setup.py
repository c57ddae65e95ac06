"""Generates the gRPC/protobuf modules from protos/ at build and install time (never edited by hand).

`pip install -e .` and `pip install .` both run `build_py`, which runs grpcio-tools' protoc with the
mypy-protobuf plugins (typed stubs) before the Python files are collected.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def generate_protos() -> None:
    from grpc_tools import protoc  # build requirement (pyproject [build-system])

    include = Path(protoc.__file__).resolve().parent / "_proto"
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "protos").rglob("*.proto"))
    args = [
        "protoc",
        f"-I{ROOT}",
        f"-I{include}",
        f"--python_out={ROOT}",
        f"--grpc_python_out={ROOT}",
    ]
    plugins = Path(tempfile.mkdtemp(prefix="tablehall-protoc-"))
    args += [f"--plugin=protoc-gen-mypy={_plugin(plugins, 'main')}", f"--mypy_out={ROOT}"]
    args += [f"--plugin=protoc-gen-mypy_grpc={_plugin(plugins, 'grpc')}", f"--mypy_grpc_out={ROOT}"]
    # the Connect/gRPC-Web door's stubs (`*_connect.py`, connect-python's own protoc plugin)
    args += [f"--plugin=protoc-gen-connect-python={_connect_plugin()}", f"--connect-python_out={ROOT}"]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        if protoc.main([*args, *protos]) != 0:
            raise SystemExit("protoc failed on " + " ".join(protos))
    finally:
        os.chdir(cwd)


def _plugin(folder: Path, entry: str) -> str:
    """mypy-protobuf's protoc plugin: on PATH, or run by this interpreter with the build's own sys.path
    (pip's isolated build environment does not always put the plugin's script where protoc looks)."""
    name = "protoc-gen-mypy" if entry == "main" else "protoc-gen-mypy_grpc"
    found = shutil.which(name)
    if found:
        return found
    script = folder / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path[:0] = {[p for p in sys.path if p]!r}\n"
        f"from mypy_protobuf.main import {entry}\n"
        f"sys.exit({entry}())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _connect_plugin() -> str:
    """protoc-gen-connect-python (a binary shipped in its wheel): on PATH, or beside this interpreter."""
    name = "protoc-gen-connect-python"
    for found in (shutil.which(name), Path(sys.executable).parent / name, Path(sysconfig.get_path("scripts")) / name):
        if found and Path(found).is_file():
            return str(found)
    raise SystemExit(f"{name} is missing: pip install protoc-gen-connect-python (a build requirement)")


class BuildWithProtos(build_py):
    def run(self) -> None:
        generate_protos()
        super().run()


setup(cmdclass={"build_py": BuildWithProtos})
