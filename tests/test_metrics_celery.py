"""The Celery worker's `/metrics` under prefork: rating tasks run in the forked children, and the main
process's scrape (prometheus-client multiprocess mode over PROMETHEUS_MULTIPROC_DIR) counts them all.
Needs Redis at 127.0.0.1:6379 (`.ci/run` starts it): a failure under CI, a skip elsewhere."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from tablehall.ports import free_port
from tests.metrics_support import samples, until, value
from tests.processes import stop_process
from tests.test_ratings_jobs import on_this_worker

BROKER = on_this_worker(os.environ.get("TABLEHALL_TEST_METRICS_REDIS_URL", "redis://127.0.0.1:6379/14"))
"""A database of its own (the tournament tests use 13, the dev-cluster 12, the rating jobs 15)."""


def _redis_up() -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", 6379)) == 0


@pytest.fixture
def celery_worker(tmp_path: Path) -> Iterator[str]:
    if not _redis_up():
        if os.environ.get("CI"):
            pytest.fail("Redis is not running at 127.0.0.1:6379 (.ci/run starts it)")
        pytest.skip("Redis is not running at 127.0.0.1:6379")
    port = free_port()
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    (multiproc / "counter_1.db").write_bytes(b"stale")  # a previous run's file: emptied at start
    env = {
        **os.environ,
        "TABLEHALL_REDIS_URL": BROKER,
        "TABLEHALL_DATABASE_URL": f"sqlite:///{tmp_path / 'ratings.db'}",
        "TABLEHALL_METRICS_PORT": str(port),
        "TABLEHALL_METRICS_HOST": "127.0.0.1",
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
    }
    queue = f"metrics-test-{port}"
    command = [sys.executable, "-m", "celery", "-A", "ratings", "worker", "-P", "prefork", "-c", "2", "-Q", queue]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"]
    log = (tmp_path / "celery.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        yield f"http://127.0.0.1:{port}/metrics|{queue}"
    finally:
        stop_process(process, grace=20)
        log.close()


def test_prefork_children_are_counted_in_the_main_process_scrape(celery_worker: str) -> None:
    import urllib.request

    url, queue = celery_worker.split("|")

    def scrape() -> str | None:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                return str(reply.read().decode())
        except OSError:
            return None

    until(lambda: scrape() is not None, 30, "the Celery worker's /metrics")
    sender = Celery(broker=BROKER)
    for i in range(6):
        sender.send_task("ratings.rate", args=[f"{i:016x}"], queue=queue)  # no such match: `unknown`
    until(
        lambda: value(samples(scrape() or ""), "tablehall_rating_updates_total", result="unknown") == 6,
        60,
        "six rating tasks counted across the prefork children",
    )
    text = scrape() or ""
    assert "tablehall_matches_active" not in text  # the worker-only collector is not in the Celery registry
