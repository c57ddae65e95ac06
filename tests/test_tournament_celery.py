"""The distributed setup: rounds move on through the Celery task, not in the gateway's process.

A real `tablehall worker` process (PostgreSQL, Redis configured) sends `tournaments.table_ended` for every
match that ends; a real Celery worker process runs it against the worker over gRPC. The gateway here runs
no tournament jobs at all, so the tournament can only finish if the tasks move it on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.server import start_gateway
from gateway.tournaments.organizers import create_organizer
from gateway.workers import GrpcWorker, Router
from protos.tablehall.v1 import matches_pb2, tournaments_pb2, tournaments_pb2_grpc
from tablehall.client import Client
from tablehall.entrant import play_tournament
from tablehall.ports import free_port
from tests.storage_backends import postgres_database
from tests.test_ratings_jobs import emptied, spawn, stop, wait_for
from workers.sql.migrate import engine_for

REDIS = os.environ.get("TABLEHALL_TEST_TOURNAMENT_REDIS_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture
def broker() -> Iterator[str]:
    yield from emptied(REDIS)


def test_every_task_is_registered_under_the_name_queues_and_beat_use() -> None:
    """Queued tasks and redbeat's schedule name tasks, so a task's name must outlive a move of its code."""
    from ratings.celery import app

    app.loader.import_default_modules()  # what a Celery worker does with the app's `include`
    names = {"ratings.rate", "ratings.sweep", "ratings.backlog", "tournaments.table_ended", "tournaments.advance"}
    assert names <= set(app.tasks)
    assert {entry["task"] for entry in app.conf.beat_schedule.values()} <= names


def test_rounds_move_on_through_the_celery_task(broker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with postgres_database() as url:
        port = free_port()
        common = {"TABLEHALL_REDIS_URL": broker, "TABLEHALL_DATABASE_URL": url, "TABLEHALL_LOG_LEVEL": "INFO"}
        worker = spawn(["-m", "tablehall.cli", "worker", "--ordinal", "0", "--workers", "1", "--port", str(port),
                        "--database-url", url], common, tmp_path / "worker.log")  # fmt: skip
        topology = {"TABLEHALL_WORKERS": "1", "TABLEHALL_WORKER_ADDRESS": f"127.0.0.1:{port}"}
        celery_log = tmp_path / "celery.log"
        jobs = spawn(["-m", "celery", "-A", "ratings", "worker", "-c", "1", "-l", "INFO", "-n", "t8@%h",
                      "--without-mingle", "--without-gossip"], {**common, **topology}, celery_log)  # fmt: skip
        try:
            wait_for(lambda: "serving on" in (tmp_path / "worker.log").read_text(), 60, "the worker to start")
            wait_for(lambda: "ready." in celery_log.read_text(), 60, "the Celery worker to start")
            monkeypatch.setenv("TABLEHALL_DATABASE_URL", url)
            key = create_organizer(engine_for(url), "Remote arbiter")
            ranks = asyncio.run(asyncio.wait_for(_tournament(port, key), 180))
            assert sorted(ranks) == [1, 2, 3]
            ran = celery_log.read_text()
            assert "tournaments.table_ended" in ran and "succeeded" in ran
        finally:
            stop(jobs)
            stop(worker)


async def _tournament(port: int, key: str) -> list[int]:
    worker = GrpcWorker(f"127.0.0.1:{port}")
    gateway = await start_gateway(Router([worker]), "127.0.0.1", 0)
    try:
        async with Client(f"127.0.0.1:{gateway.port}") as client:
            stub = tournaments_pb2_grpc.TournamentsStub(client.channel)
            created = await stub.CreateTournament(
                tournaments_pb2.CreateTournamentRequest(
                    name="Remote", game="spectacular-bid", players=["ann", "bob", "cid"], format="round-robin",
                    options=matches_pb2.Options(start_points=20), round_pause_s=0,
                ),
                metadata=(("authorization", f"Bearer {key}"),),
            )  # fmt: skip
            finals = await asyncio.gather(
                *(play_tournament(client, created.tournament_id, p.token) for p in created.players)
            )
            return [f.rank for f in finals]
    finally:
        await gateway.stop(grace=0.5)
        await worker.close()
