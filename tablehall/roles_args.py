"""The service's roles on the command line (`tablehall serve | gateway | worker | dev-cluster`): their
arguments and one small handler each. Nothing here imports gRPC until a handler runs (`tablehall` starts
without it); a port that cannot be listened on is said before anything starts (exit 2)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tablehall.tls_args import add_server_tls, server_tls

EXIT_CANNOT_START = 2
"""The address cannot be listened on (or a setting cannot be used): said before anything starts."""

METRICS_HELP = "serve /metrics on this port (TABLEHALL_METRICS_PORT; 0 = off, the default)"
WEB_HELP = (
    "the HTTP door for browsers: the web page, Connect and gRPC-Web (TABLEHALL_WEB_PORT; 'off' disables it; "
    "0 picks a free port). Default: {default}"
)
CORS_HELP = "origins allowed to call the HTTP door from other sites, comma-separated, * = any (TABLEHALL_CORS_ORIGINS)"


def add_commands(commands: Any) -> None:
    """`serve`, `gateway`, `worker` (and `worker drain`), `dev-cluster`."""
    _add_serve(commands)
    _add_gateway(commands)
    _add_worker(commands)
    from tablehall.devcluster import add_arguments as dev_cluster_arguments
    from tablehall.devcluster import run_dev_cluster

    cluster = commands.add_parser(
        "dev-cluster", help="the k8s topology as local processes: workers, gateway, Celery worker and beat"
    )
    dev_cluster_arguments(cluster)
    cluster.set_defaults(run=run_dev_cluster)


def _add_serve(commands: Any) -> None:
    serving = commands.add_parser("serve", help="the whole service in one process (env TABLEHALL_HOST/PORT)")
    serving.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    serving.add_argument("--port", type=int, default=None, help="port (default 50051; 0 picks a free one)")
    serving.add_argument("--workers", type=int, default=None, help="worker processes (default 0: in process)")
    serving.add_argument("--database-url", default=None, help="memory, or a URL (TABLEHALL_DATABASE_URL)")
    serving.add_argument("--metrics-port", type=int, default=None, help=METRICS_HELP)
    serving.add_argument("--web-port", default=None, help=WEB_HELP.format(default="8080, or a free one with --port 0"))
    serving.add_argument("--cors-origins", default=None, help=CORS_HELP)
    add_server_tls(serving)
    serving.set_defaults(run=run_serve)


def _add_gateway(commands: Any) -> None:
    front = commands.add_parser("gateway", help="the gateway alone, routing to the worker processes")
    front.add_argument("--host", default=None)
    front.add_argument("--port", type=int, default=None)
    front.add_argument("--database-url", default=None, help="where the workers' leases are (TABLEHALL_DATABASE_URL)")
    front.add_argument(
        "--workers", type=int, default=None, help="static mode: N workers p mod N (TABLEHALL_WORKERS; default: leases)"
    )
    front.add_argument(
        "--worker-address", default=None, help="static mode: template with {ordinal}/{port} (TABLEHALL_WORKER_ADDRESS)"
    )
    front.add_argument("--metrics-port", type=int, default=None, help=METRICS_HELP)
    front.add_argument("--web-port", default=None, help=WEB_HELP.format(default="off"))
    front.add_argument("--cors-origins", default=None, help=CORS_HELP)
    add_server_tls(front)
    front.set_defaults(run=run_gateway)


def _add_worker(commands: Any) -> None:
    worker = commands.add_parser(
        "worker", help="a match worker: takes an even share of the partitions by leases ('worker drain ADDRESS')"
    )
    worker_actions = worker.add_subparsers(dest="action")
    drain = worker_actions.add_parser("drain", help="ask a running worker to hand its partitions over and stop")
    drain.add_argument("address", help="the worker's address (host:port, as its 'serving on' line says)")
    drain.set_defaults(run=run_drain)
    worker.add_argument("--ordinal", type=int, default=None, help="static mode: serve the partitions p mod N = K")
    worker.add_argument("--workers", type=int, default=None, help="static mode: N (TABLEHALL_WORKERS)")
    worker.add_argument("--host", default="127.0.0.1")
    worker.add_argument(
        "--port", type=int, default=None,
        help="default: TABLEHALL_WORKER_PORT, else a free port (static mode: TABLEHALL_WORKER_BASE_PORT + K)",
    )
    worker.add_argument(
        "--advertise", default=None,
        help="the address others dial to reach it (TABLEHALL_WORKER_ADVERTISE; default: host:port)",
    )
    worker.add_argument("--database-url", default=None, help="memory, or a URL (TABLEHALL_DATABASE_URL)")
    worker.add_argument("--metrics-port", type=int, default=None, help=METRICS_HELP)
    worker.set_defaults(run=run_worker)


def run_serve(args: argparse.Namespace) -> int:
    """The gateway and its workers in one command, until Ctrl-C."""
    from gateway.web import DEFAULT_WEB_PORT, WebSettings
    from tablehall.serve import serve, settings
    from workers import event_loop
    from workers.settings import fork_log_writers

    host, port = settings(args.host, args.port)
    web = WebSettings.of(args.web_port, args.cors_origins, DEFAULT_WEB_PORT if port else 0)
    if cannot_listen("serve", host, port):
        return EXIT_CANNOT_START
    tls = server_tls(args)
    if not args.workers:
        fork_log_writers(args.database_url)
    event_loop.serve(serve(host, port, args.workers or 0, args.database_url, args.metrics_port, web, tls))
    return 0


def run_gateway(args: argparse.Namespace) -> int:
    """The gateway alone, routing to workers found by lease (or by the static template)."""
    from gateway.web import WebSettings
    from tablehall.serve import run_gateway as gateway_role
    from tablehall.serve import settings
    from workers import event_loop

    web = WebSettings.of(args.web_port, args.cors_origins, None)
    if cannot_listen("gateway", *settings(args.host, args.port)):
        return EXIT_CANNOT_START
    event_loop.serve(
        gateway_role(
            *settings(args.host, args.port), args.workers, args.worker_address, args.metrics_port, web,
            server_tls(args), args.database_url,
        )
    )
    return 0


def run_worker(args: argparse.Namespace) -> int:
    """One match worker, on leases or (with `--ordinal`) in the static mode."""
    from tablehall.worker_role import run_worker as worker_role
    from workers import event_loop, loop_first
    from workers.settings import Topology

    loop_first.batch_process()  # started by `tablehall serve --workers N` beside its gateway (BATCH_ENV)

    if args.ordinal is not None:
        port = args.port if args.port is not None else Topology.from_env(args.workers).base_port + args.ordinal
    else:
        port = args.port if args.port is not None else int(os.environ.get("TABLEHALL_WORKER_PORT", "0"))
    if port and cannot_listen("worker", args.host, port):
        return EXIT_CANNOT_START
    return event_loop.serve(
        worker_role(
            args.ordinal, args.workers, args.host, args.port, args.database_url, args.metrics_port, args.advertise,
        )
    )


def run_drain(args: argparse.Namespace) -> int:
    """`worker drain ADDRESS`: ask a running worker to hand its partitions over and stop."""
    from tablehall.worker_role import drain_worker

    return drain_worker(args.address)


def cannot_listen(command: str, host: str, port: int) -> bool:
    """True after saying why `host:port` cannot be listened on (before anything starts)."""
    from tablehall.startup import port_taken

    reason = port_taken(host, port)
    if reason is not None:
        print(f"tablehall {command}: {reason}", file=sys.stderr)
    return reason is not None
