"""Generates the gRPC/protobuf modules from protos/ at build and install time (never edited by hand).

`pip install -e .` and `pip install .` both run `build_py`, which runs grpcio-tools' protoc with the
mypy-protobuf plugins (typed stubs) before the Python files are collected.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def generate_protos() -> None:
    from grpc_tools import protoc  # build requirement (pyproject [build-system])

    include = Path(protoc.__file__).resolve().parent / "_proto"
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "protos").rglob("*.proto"))
    scripts = Path(sys.executable).parent
    args = [
        "protoc",
        f"-I{ROOT}",
        f"-I{include}",
        f"--python_out={ROOT}",
        f"--grpc_python_out={ROOT}",
    ]
    mypy, mypy_grpc = scripts / "protoc-gen-mypy", scripts / "protoc-gen-mypy_grpc"
    if mypy.exists() and mypy_grpc.exists():
        args += [f"--plugin=protoc-gen-mypy={mypy}", f"--mypy_out={ROOT}"]
        args += [f"--plugin=protoc-gen-mypy_grpc={mypy_grpc}", f"--mypy_grpc_out={ROOT}"]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        if protoc.main([*args, *protos]) != 0:
            raise SystemExit("protoc failed on " + " ".join(protos))
    finally:
        os.chdir(cwd)


class BuildWithProtos(build_py):
    def run(self) -> None:
        generate_protos()
        super().run()


setup(cmdclass={"build_py": BuildWithProtos})
