"""`tablehall dev-cluster`'s settings, and its checks before anything starts: sane numbers, free ports, a
reachable Redis, a database that exists (a missing PostgreSQL database is created) and is migrated once."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Settings:
    """What `tablehall dev-cluster` runs and where: its flags, read once."""

    workers: int
    host: str
    port: int
    worker_base_port: int
    database_url: str
    redis_url: str
    metrics_port: int
    """0: off; else the gateway's /metrics, the Celery worker's on the next port, worker k's on P + 2 + k."""
    celery_concurrency: int
    log_dir: Path

    @property
    def dial_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host

    def worker_port(self, slot: int) -> int:
        return self.worker_base_port + slot

    def metrics_of(self, index: int) -> int:
        """/metrics port of role `index` (0 gateway, 1 the Celery worker, 2 + k worker slot k), 0 when off."""
        return self.metrics_port + index if self.metrics_port else 0

    def environment(self) -> dict[str, str]:
        """What every role reads (the ConfigMap and Secret of k8s/, here from one place)."""
        env = dict(os.environ)
        env.update(
            TABLEHALL_DATABASE_URL=self.database_url,
            TABLEHALL_REDIS_URL=self.redis_url,
            TABLEHALL_METRICS_HOST=self.host,
            PYTHONUNBUFFERED="1",
        )
        for static in ("TABLEHALL_WORKERS", "TABLEHALL_WORKER_ADDRESS"):  # the workers are found by their leases
            env.pop(static, None)
        env.pop("TABLEHALL_METRICS_PORT", None)  # each role gets its own port by flag (or none)
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # only the Celery worker counts across processes
        return env


class DevClusterError(Exception):
    """A setting or a service the cluster needs is wrong or missing (exit 2, nothing started)."""


def preflight(settings: Settings) -> None:
    """Clear errors before anything starts: bad numbers, busy ports, an unreachable Redis or database."""
    if settings.workers < 1:
        raise DevClusterError("--workers must be at least 1")
    if settings.celery_concurrency < 1:
        raise DevClusterError("--celery-concurrency must be at least 1")
    if settings.database_url == "memory":
        raise DevClusterError("the roles are separate processes: they need a shared database, not 'memory'")
    ports = [settings.port, *(settings.worker_port(k) for k in range(settings.workers))]
    if settings.metrics_port:
        ports += [settings.metrics_of(i) for i in range(settings.workers + 2)]
    for port in ports:
        _port_free(settings.host, port)
    _redis_reachable(settings.redis_url)
    _database_ready(settings.database_url)


def _port_free(host: str, port: int) -> None:
    if not 0 < port < 65536:
        raise DevClusterError(f"port {port} is out of range")
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as error:
            raise DevClusterError(f"port {port} on {host} is not free ({error.strerror}): choose other ports") from None


def _redis_reachable(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except (redis.RedisError, ValueError) as error:
        raise DevClusterError(f"Redis is not reachable at {url}: {error}") from None


def _database_ready(url: str) -> None:
    """Create the PostgreSQL database when it does not exist yet, then migrate it once (the workers would
    each do it, taking turns on a lock)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from workers.sql.migrate import migrate

    try:
        parsed = make_url(url)
    except ArgumentError as error:
        raise DevClusterError(f"not a database URL: {url!r} ({error})") from None
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "postgresql":
        _create_postgres_database(parsed.render_as_string(hide_password=False), shown)
    try:
        migrate(url)
    except SQLAlchemyError as error:
        raise DevClusterError(f"cannot prepare the database {shown}: {error}") from None


def _create_postgres_database(url: str, shown: str) -> None:
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    target = make_url(url)
    dsn = target.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
        return
    except psycopg.OperationalError as error:
        if "does not exist" not in str(error):
            raise DevClusterError(f"PostgreSQL is not reachable for {shown}: {error}") from None
    admin = target.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(str(target.database))))
    except psycopg.Error as error:
        raise DevClusterError(f"cannot create the database of {shown}: {error}") from None


