"""The Celery app: `celery -A ratings worker`, `celery -A ratings beat`.

Broker: Redis at `TABLEHALL_REDIS_URL`; database: `TABLEHALL_DATABASE_URL` (migrated on first use).
Beat runs on celery-redbeat: the schedule lives in Redis behind a lock, so a second beat process waits
for the lock instead of sending every sweep twice (and takes over if the first one dies).

Tasks ack late and are re-queued if the worker dies mid-task: a rating may run twice, which the
applied-marker makes harmless (ratings/rating.py); sweeps are idempotent (ratings/sweep.py).

Metrics: with `TABLEHALL_METRICS_PORT` set, the worker's main process serves `/metrics` for all its
prefork children through prometheus-client's multiprocess mode: `PROMETHEUS_MULTIPROC_DIR` must name an
empty, writable directory in the environment the worker starts with (prometheus-client reads it when it
is first imported); the main process empties it at start, serves a `MultiProcessCollector` over it, and
marks each child dead when it exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from celery import Celery, signals
from sqlalchemy.exc import OperationalError

from ratings import rating, settings
from ratings.owners import over_grpc, over_leases
from ratings.sweep import sweep_once
from workers import metrics
from workers.settings import Topology
from workers.sql.engine import database_url
from workers.sql.migrate import engine_for

log = logging.getLogger("tablehall.ratings")

app = Celery("tablehall", broker=settings.redis_url())
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    timezone="UTC",
    beat_scheduler="redbeat.RedBeatScheduler",
    redbeat_redis_url=settings.redis_url(),
    redbeat_key_prefix="tablehall:redbeat",
    beat_max_loop_interval=min(5.0, settings.sweep_s()),
    redbeat_lock_timeout=max(5.0, 5 * settings.sweep_s()),
    beat_schedule={
        "tablehall-sweep": {"task": "ratings.sweep", "schedule": settings.sweep_s()},
        "tablehall-rating-backlog": {"task": "ratings.backlog", "schedule": max(30.0, settings.sweep_s())},
        "tablehall-tournaments": {"task": "tournaments.advance", "schedule": settings.sweep_s()},
    },
    include=["gateway.tournaments.tasks"],  # the director lives in the gateway; loaded by name, not imported
)


@app.task(  # type: ignore[untyped-decorator]
    name="ratings.rate", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=10, acks_late=True
)
def rate(match_id: str) -> str:
    """Rate one finished match (exactly once, however often this runs). A match held by a spectator delay —
    a delayed table, or a match of a player entered in a delayed tournament with a hidden result — is sent
    again for when that result is shown (its end not recorded yet: for now + the delay; a match behind
    another is not); the backlog would find it too."""
    rated = rating.rate(engine_for(database_url()), match_id)
    if rated.until_unix_ms is not None:
        rate.apply_async((match_id,), countdown=max(0.0, (rated.until_unix_ms - rating.now_ms()) / 1000))
    log.info("match %s: %s", match_id, rated.result)
    return rating.observe(rated)


@app.task(name="ratings.sweep")  # type: ignore[untyped-decorator]
def sweep() -> dict[str, object]:
    topology = Topology.from_env()

    async def run() -> dict[str, object]:
        owners = over_grpc(topology) if topology.workers >= 1 else over_leases(database_url())
        async with owners as settle:
            report = await sweep_once(engine_for(database_url()), settle)
        return report.to_json()

    report = asyncio.run(run())
    log.info("sweep: %s", report)
    return report


@app.task(name="ratings.backlog")  # type: ignore[untyped-decorator]
def backlog() -> int:
    """Finished matches whose rating task never arrived (Redis was down, a worker died): rate them."""
    pending = rating.backlog(engine_for(database_url()))
    for match_id in pending:
        rate.delay(match_id)
    return len(pending)


def enqueue(match_id: str) -> None:
    """Send the rating task (from a worker process, off its event loop)."""
    rate.delay(match_id)


MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def start_multiprocess_metrics(port: int, host: str) -> Any:
    """Serve `/metrics` for this process and every forked child (prometheus-client multiprocess mode)."""
    from prometheus_client import CollectorRegistry, multiprocess

    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        raise RuntimeError(
            f"TABLEHALL_METRICS_PORT={port} needs {MULTIPROC_ENV}: start the Celery worker with "
            f"{MULTIPROC_ENV}=/some/empty/dir (prefork children write their metrics there)"
        )
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):  # values of a previous run would be added to this one's
        stale.unlink()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return metrics.serve_metrics(port, host, registry)


@signals.worker_init.connect  # type: ignore[untyped-decorator]
def _metrics_at_start(**_: object) -> None:
    port = metrics.metrics_port(None)
    if port > 0:
        start_multiprocess_metrics(port, metrics.metrics_host("127.0.0.1"))


@signals.worker_process_shutdown.connect  # type: ignore[untyped-decorator]
def _child_exited(pid: int | None = None, **_: object) -> None:
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())  # type: ignore[no-untyped-call]
