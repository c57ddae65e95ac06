"""`tablehall bench KIND`: every benchmark's arguments and one small handler each. The benchmarks
themselves live in tablehall/bench_*.py and are imported only when their handler runs."""

from __future__ import annotations

import argparse
from typing import Any

from workers.games.catalog import SPECTACULAR_BID, names


def add_commands(commands: Any) -> None:
    bench = commands.add_parser("bench", help="benchmarks that print figures")
    kinds = bench.add_subparsers(dest="kind", required=True)
    engine = kinds.add_parser("engine", help="legal-move applications per second, one core")
    engine.add_argument("--game", default="all", choices=["all", *names()])
    engine.add_argument("--seconds", type=float, default=5.0, help="how long to play each game")
    engine.add_argument("--seed", type=int, default=1)
    engine.set_defaults(run=run_engine)
    views = kinds.add_parser("views", help="one view's cost, typed against JSON: build, wire bytes, client")
    views.add_argument("--game", default="all", choices=["all", *names()])
    views.add_argument("--matches", type=int, default=3, help="self-played matches per game")
    views.add_argument("--seed", type=int, default=1)
    views.set_defaults(run=run_views)
    load = kinds.add_parser("service", help="bot-vs-bot matches through the gateway; commands/s, p50/p99")
    load.add_argument("--matches", type=int, default=400)
    load.add_argument("--concurrency", type=int, default=200)
    load.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    load.add_argument("--address", default=None, help="an existing gateway (default: start tablehall serve)")
    load.add_argument("--seed", type=int, default=1)
    load.add_argument("--workers", type=int, default=0, help="worker processes behind the gateway (0: in process)")
    load.add_argument("--database-url", default="memory", help="memory (default), or a database URL")
    load.add_argument(
        "--same-players", action="store_true",
        help="every match between the same players (each rating waits for the one before: the backlog's worst case)",
    )
    for figure in ("moves-per-s", "p99-ms", "cpu-ms"):  # boardgame.io's harness figures, printed beside ours
        load.add_argument(f"--peer-{figure}", type=float, default=None, help=f"the peer harness's {figure}")
    load.set_defaults(run=run_service)
    path = kinds.add_parser("path", help="the service's CPU per command in one process, no gRPC (seeded: exact)")
    path.add_argument("--matches", type=int, default=300)
    path.add_argument("--concurrency", type=int, default=50)
    path.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    path.add_argument("--seed", type=int, default=1, help="also seeds the service's deals, ids and tokens")
    path.add_argument("--database-url", default="memory", help="memory (default), or a scratch database's URL")
    path.set_defaults(run=run_path)
    clocks = kinds.add_parser("clocks", help="timer lateness p50/p99/max with N running clocks on one worker")
    clocks.add_argument("--clocks", type=int, default=10_000)
    clocks.add_argument("--load", type=int, default=0, help="also with bots playing this many matches at a time")
    clocks.add_argument("--swiss", type=int, default=0, help="also while a Swiss round 1 of this many is paired")
    clocks.add_argument("--window", type=float, default=30.0, help="seconds the clock starts (and flags) spread over")
    clocks.add_argument("--seed", type=int, default=1)
    clocks.add_argument("--swiss-in-thread", action="store_true", help="pair as before: a thread of the worker")
    clocks.set_defaults(run=run_clocks)
    recovery = kinds.add_parser("recovery", help="time one worker's recovery of N unfinished matches")
    recovery.add_argument("--matches", type=int, default=10_000)
    recovery.add_argument("--moves", type=int, default=12, help="commands played in each match before the stop")
    recovery.add_argument("--database-url", required=True, help="an empty database, e.g. sqlite:///recovery.db")
    recovery.set_defaults(run=run_recovery)
    _add_celery_benches(kinds)
    messages = kinds.add_parser("messages", help="CPU per streamed gRPC message, server and client")
    messages.add_argument("--messages", type=int, default=40_000, help="round trips in all")
    messages.add_argument("--streams", type=int, default=100)
    messages.set_defaults(run=run_messages)
    floor = kinds.add_parser("floor", help="grpc.aio alone, a two-seat match's traffic: bench service's floor")
    floor.add_argument("--matches", type=int, default=50, help="matches in flight")
    floor.add_argument("--commands", type=int, default=60, help="commands per match")
    floor.add_argument("--seconds", type=float, default=20.0)
    floor.add_argument("--database-url", default=None,
                       help="the durable floor: each command committed to this database before its answer")  # fmt: skip
    floor.add_argument("--workers", type=int, default=0,
                       help="through a relay to N worker processes (bench service --workers's floor)")  # fmt: skip
    floor.set_defaults(run=run_floor)
    _add_lease_benches(kinds)
    tables = kinds.add_parser("tables", help="time to schedule N tables in one call (tablehall serve)")
    tables.add_argument("--tables", type=int, default=1000)
    tables.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    tables.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    tables.set_defaults(run=run_tables)
    lobby = kinds.add_parser("lobby", help="players join the Lobby's queue over a period; join→seated p50/p99")
    lobby.add_argument("--players", type=int, default=2000)
    lobby.add_argument("--over-s", type=float, default=60.0, help="the period the joins are spread over")
    lobby.add_argument("--game", default=SPECTACULAR_BID, choices=names())
    lobby.add_argument("--grace-s", type=float, default=60.0, help="how long after the last join to wait for seats")
    lobby.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    lobby.set_defaults(run=run_lobby)
    log = kinds.add_parser("log", help="durable appends per second with group commit (the event log alone)")
    log.add_argument("--database-url", default=None, help="a scratch database (default: TABLEHALL_DATABASE_URL)")
    log.add_argument("--matches", type=int, default=500, help="concurrent matches")
    log.add_argument("--per-match", type=int, default=40, help="appends per match")
    log.add_argument("--recovery", type=int, default=0, metavar="N", help="also time unfinished() over N matches")
    log.add_argument(
        "--busy-ms", type=float, default=0.0, metavar="N", help="keep the event loop busy N ms a turn meanwhile"
    )
    log.set_defaults(run=run_log)


def _add_celery_benches(kinds: Any) -> None:
    rates = kinds.add_parser("ratings", help="rating updates per second through a real Celery worker")
    rates.add_argument("--database-url", required=True, help="a scratch database (matches are written to it)")
    rates.add_argument("--matches", type=int, default=1000)
    rates.add_argument("--concurrency", type=int, default=4, help="Celery worker processes")
    rates.set_defaults(run=run_ratings)
    sweep = kinds.add_parser("sweep", help="time one timeout sweep over N stored matches")
    sweep.add_argument("--database-url", required=True, help="a scratch database (matches are written to it)")
    sweep.add_argument("--matches", type=int, default=100_000)
    sweep.add_argument("--overdue", type=int, default=100)
    sweep.set_defaults(run=run_sweep)


def _add_lease_benches(kinds: Any) -> None:
    roll = kinds.add_parser("roll", help="every worker replaced one at a time under load: voids, pauses")
    roll.add_argument("--workers", type=int, default=3)
    roll.add_argument("--inflight", type=int, default=40, help="matches kept in flight by bots")
    roll.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    roll.set_defaults(run=run_roll)
    failover = kinds.add_parser("failover", help="kill -9 of one worker of three: matches going on")
    failover.add_argument("--matches", type=int, default=900, help="matches with running clocks, on 3 workers")
    failover.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    failover.set_defaults(run=run_failover)
    bots = kinds.add_parser("bots", help="bot levels against each other in-process: win rates with 95%% intervals")
    bots.add_argument("--game", default="all", choices=["all", *names()])
    bots.add_argument("--matches", type=int, default=200, help="matches per pairing and game")
    bots.add_argument("--move-ms", type=int, default=1000, help="the search level's time per move")
    bots.add_argument(
        "--pair", action="append", default=None, metavar="LEVEL:LEVEL",
        help="levels to compare, the first in one seat (repeatable; default search:greedy and greedy:random)",
    )  # fmt: skip
    bots.add_argument("--workers", type=int, default=1, help="processes playing matches (2 uses both cores)")
    bots.add_argument("--seed", type=int, default=1)
    bots.add_argument("--iterations", type=int, default=None, help="search: a fixed iteration count instead of time")
    bots.set_defaults(run=run_bots)


def run_engine(args: argparse.Namespace) -> int:
    from tablehall.bench import bench_engine

    return bench_engine(args.game, args.seconds, args.seed)


def run_views(args: argparse.Namespace) -> int:
    from tablehall.bench_views import bench_views

    return bench_views(args.game, args.matches, args.seed)


def run_service(args: argparse.Namespace) -> int:
    from tablehall.bench_service import Peer, bench_service

    peer = Peer(args.peer_moves_per_s, args.peer_p99_ms, args.peer_cpu_ms)
    return bench_service(
        args.address, args.matches, args.concurrency, args.game, args.seed, args.workers, args.database_url,
        peer if peer != Peer() else None, args.same_players,
    )


def run_path(args: argparse.Namespace) -> int:
    from tablehall.bench_path import bench_path

    return bench_path(args.game, args.matches, args.concurrency, args.seed, args.database_url)


def run_clocks(args: argparse.Namespace) -> int:
    from tablehall.bench_clocks import bench_clocks

    return bench_clocks(args.clocks, args.load, args.swiss, args.window, args.seed, args.swiss_in_thread)


def run_recovery(args: argparse.Namespace) -> int:
    from tablehall.bench_recovery import bench_recovery

    return bench_recovery(args.matches, args.moves, args.database_url)


def run_ratings(args: argparse.Namespace) -> int:
    from tablehall.bench_ratings import bench_ratings

    return bench_ratings(args.database_url, args.matches, args.concurrency)


def run_sweep(args: argparse.Namespace) -> int:
    from tablehall.bench_ratings import bench_sweep

    return bench_sweep(args.database_url, args.matches, args.overdue)


def run_messages(args: argparse.Namespace) -> int:
    from tablehall.bench_messages import bench_messages

    return bench_messages(args.messages, args.streams)


def run_floor(args: argparse.Namespace) -> int:
    from tablehall.bench_floor import bench_floor

    return bench_floor(args.matches, args.commands, args.seconds, args.database_url, args.workers)


def run_roll(args: argparse.Namespace) -> int:
    from tablehall.bench_leases import bench_roll

    return bench_roll(args.workers, args.inflight, args.database_url)


def run_failover(args: argparse.Namespace) -> int:
    from tablehall.bench_leases import bench_failover

    return bench_failover(args.matches, args.database_url)


def run_tables(args: argparse.Namespace) -> int:
    from tablehall.bench_tables import bench_tables

    return bench_tables(args.tables, args.game, args.database_url)


def run_lobby(args: argparse.Namespace) -> int:
    from tablehall.bench_lobby import bench_lobby

    return bench_lobby(args.players, args.over_s, args.game, args.database_url, args.grace_s)


def run_log(args: argparse.Namespace) -> int:
    from tablehall.bench_log import bench_log

    return bench_log(args.database_url, args.matches, args.per_match, args.recovery, args.busy_ms)


def run_bots(args: argparse.Namespace) -> int:
    import sys

    from tablehall.bench_bots import Pairing, bench_bots

    try:
        pairs = [Pairing.parse(text) for text in args.pair or ["search:greedy", "greedy:random"]]
    except ValueError as error:
        print(f"tablehall bench bots: {error}; levels are random, greedy, search", file=sys.stderr)
        return 2
    if args.matches < 1 or args.move_ms < 1 or args.workers < 1 or (args.iterations or 1) < 1:
        print("tablehall bench bots: --matches, --move-ms, --workers and --iterations are at least 1", file=sys.stderr)
        return 2
    return bench_bots(args.game, args.matches, args.move_ms, pairs, args.workers, args.seed, args.iterations)
