"""Every tablehall process sets how gRPC's core does its I/O before grpc is imported (workers/grpc_core.py),
and leaves an operator's own `GRPC_EXPERIMENTS` alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workers.grpc_core import EXPERIMENTS

PROBE = "import os, sys; import {module}; print(os.environ.get('GRPC_EXPERIMENTS'), 'grpc' in sys.modules)"


@pytest.mark.parametrize("module", ["tablehall.cli", "gateway.server", "workers.service", "ratings.celery"])
def test_set_before_grpc_is_imported(module: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    package = PROBE.format(module=module.split(".")[0])
    said = subprocess.run([sys.executable, "-c", package], env=env, capture_output=True, text=True, check=True)
    assert said.stdout.split() == [EXPERIMENTS, "False"], "set by the package, before anything imported grpc"
    loaded = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], env=env, capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert loaded.stdout.split()[0] == EXPERIMENTS


def test_an_operators_own_setting_is_kept() -> None:
    env = {**os.environ, "GRPC_EXPERIMENTS": "-event_engine_client"}
    said = subprocess.run([sys.executable, "-c", PROBE.format(module="gateway.server")], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert said.stdout.split()[0] == "-event_engine_client"
