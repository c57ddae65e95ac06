"""Helpers for the metrics tests: a real `tablehall serve --metrics-port` subprocess, scraping and parsing
its `/metrics`, and the Prometheus binaries (Debian's `prometheus` package)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tablehall.ports import free_ports
from tests.processes import stop_process

REPO = Path(__file__).resolve().parents[1]
MONITORING = REPO / "k8s" / "monitoring"

Labels = frozenset[tuple[str, str]]


def binary(name: str) -> str:
    """The path of a Prometheus binary; a failure under CI (`.ci/run` installs them), a skip elsewhere."""
    found = shutil.which(name)
    if found is None:
        message = f"{name} is missing: apt-get install prometheus (Debian), as .ci/run does"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Served:
    address: str
    metrics_url: str
    process: subprocess.Popen[str]

    def scrape(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as reply:
            assert reply.status == 200
            return str(reply.read().decode())

    def samples(self) -> dict[tuple[str, Labels], float]:
        return samples(self.scrape())


def samples(text: str) -> dict[tuple[str, Labels], float]:
    """Every sample of a scrape: (name, labels) → value."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, Labels], float], name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def exported_names(text: str) -> set[str]:
    """The series names a scrape can show, from its TYPE lines (a histogram's _bucket/_sum/_count too)."""
    names: set[str] = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count", f"{name}_created"}
        elif kind == "counter":
            names |= {f"{name}_total", f"{name}_created", name.removesuffix("_total") + "_created"}
    return names


@contextlib.contextmanager
def serve_with_metrics(tmp: Path, workers: int = 0, **env: str) -> Iterator[Served]:
    """`tablehall serve` (a SQLite file, embedded ratings and sweeps) with /metrics on; `workers` > 0: that
    many worker processes, whose /metrics are on the next ports."""
    metrics_port = free_ports(1 + workers)  # the workers' /metrics are on the next ports: free too
    environ = {**os.environ, "TABLEHALL_LOG_LEVEL": "WARNING", **env}
    environ.pop("TABLEHALL_METRICS_PORT", None)
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--metrics-port", str(metrics_port)]
    command += ["--database-url", f"sqlite:///{tmp / 'tablehall.db'}", "--workers", str(workers)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=environ, cwd=tmp)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        serving = next((line for line in lines if "serving on" in line), None)
        assert serving is not None, f"tablehall serve did not start: {lines!r}"
        assert any(f":{metrics_port}/metrics" in line for line in lines), lines
        address = serving.split("serving on ")[1].split()[0]
        yield Served(address, f"http://127.0.0.1:{metrics_port}/metrics", process)
    finally:
        stop_process(process)


def until(check: object, timeout: float = 20.0, what: str = "a condition") -> None:
    """Poll `check()` until it is truthy."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
