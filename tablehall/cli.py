"""`tablehall`: the command line. Every failure is a clear message and an exit code, never a traceback.

Each command is a small handler registered with `set_defaults(run=...)` beside its arguments (here and in
tablehall/*_args.py); `main` parses and calls it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tablehall import bench_args, organize_args, play_args, roles_args

EXIT_ILLEGAL = 1
EXIT_MALFORMED = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tablehall", description="Spectacular Bid and 501♠ match service")
    commands = parser.add_subparsers(dest="command", required=True)

    replay = commands.add_parser("replay", help="re-run a match record and print its outcome (RECORDS.md)")
    replay.add_argument("file", help="a record file, or - for standard input")

    verify = commands.add_parser("verify", help="check every deal of a finished match against its commitment")
    verify.add_argument("file", help="a record from GetRecord, or - for standard input")

    demo = commands.add_parser("demo", help="bots play a match, shown turn by turn")
    demo.add_argument("--game", default="spectacular-bid", choices=["spectacular-bid", "501"])
    demo.add_argument("--players", type=int, default=None, help="501♠: 3 or 4 players")
    demo.add_argument("--seed", type=int, default=None, help="repeat a demo (default: CSPRNG deals)")
    demo.add_argument("--pace", type=float, default=0.6, help="seconds between moves on screen (0: no pauses)")
    demo.add_argument("--greedy", action="store_true", help="bots prefer scoring plays")
    demo.add_argument("--record", type=Path, default=None, help="also write the match record here")
    demo.add_argument("--json", action="store_true", help="print only the outcome as JSON, no story, no pauses")

    bench = commands.add_parser("bench", help="benchmarks that print figures")
    bench_kinds = bench.add_subparsers(dest="kind", required=True)
    engine = bench_kinds.add_parser("engine", help="legal-move applications per second, one core")
    engine.add_argument("--game", default="all", choices=["all", "spectacular-bid", "501"])
    engine.add_argument("--seconds", type=float, default=5.0, help="how long to play each game")
    engine.add_argument("--seed", type=int, default=1)
    load = bench_kinds.add_parser("service", help="bot-vs-bot matches through the gateway; commands/s, p50/p99")
    load.add_argument("--matches", type=int, default=400)
    load.add_argument("--concurrency", type=int, default=200)
    load.add_argument("--game", default="spectacular-bid", choices=["spectacular-bid", "501"])
    load.add_argument("--address", default=None, help="an existing gateway (default: start tablehall serve)")
    load.add_argument("--seed", type=int, default=1)
    load.add_argument("--workers", type=int, default=0, help="worker processes behind the gateway (0: in process)")
    load.add_argument("--database-url", default="memory", help="memory (default), or a database URL")
    recovery = bench_kinds.add_parser("recovery", help="time one worker's recovery of N unfinished matches")
    recovery.add_argument("--matches", type=int, default=10_000)
    recovery.add_argument("--moves", type=int, default=12, help="commands played in each match before the stop")
    recovery.add_argument("--database-url", required=True, help="an empty database, e.g. sqlite:///recovery.db")

    rates = bench_kinds.add_parser("ratings", help="rating updates per second through a real Celery worker")
    rates.add_argument("--database-url", required=True, help="a scratch database (matches are written to it)")
    rates.add_argument("--matches", type=int, default=1000)
    rates.add_argument("--concurrency", type=int, default=4, help="Celery worker processes")
    sweep = bench_kinds.add_parser("sweep", help="time one timeout sweep over N stored matches")
    sweep.add_argument("--database-url", required=True, help="a scratch database (matches are written to it)")
    sweep.add_argument("--matches", type=int, default=100_000)
    sweep.add_argument("--overdue", type=int, default=100)
    messages = bench_kinds.add_parser("messages", help="CPU per streamed gRPC message, server and client")
    messages.add_argument("--messages", type=int, default=40_000, help="round trips in all")
    messages.add_argument("--streams", type=int, default=100)
    roll = bench_kinds.add_parser("roll", help="every worker replaced one at a time under load: voids, pauses")
    roll.add_argument("--workers", type=int, default=3)
    roll.add_argument("--inflight", type=int, default=40, help="matches kept in flight by bots")
    roll.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    failover = bench_kinds.add_parser("failover", help="kill -9 of one worker of three: matches going on")
    failover.add_argument("--matches", type=int, default=900, help="matches with running clocks, on 3 workers")
    failover.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")
    tables = bench_kinds.add_parser("tables", help="time to schedule N tables in one call (tablehall serve)")
    tables.add_argument("--tables", type=int, default=1000)
    tables.add_argument("--game", default="spectacular-bid", choices=["spectacular-bid", "501"])
    tables.add_argument("--database-url", default=None, help="default: a new SQLite file in a temporary directory")

    serving = commands.add_parser("serve", help="the whole service in one process (env TABLEHALL_HOST/PORT)")
    serving.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    serving.add_argument("--port", type=int, default=None, help="port (default 50051; 0 picks a free one)")
    serving.add_argument("--workers", type=int, default=None, help="worker processes (default 0: in process)")
    serving.add_argument("--database-url", default=None, help="memory, or a URL (TABLEHALL_DATABASE_URL)")
    serving.add_argument("--metrics-port", type=int, default=None, help=METRICS_HELP)
    serving.add_argument("--web-port", default=None, help=WEB_HELP.format(default="8080, or a free one with --port 0"))
    serving.add_argument("--cors-origins", default=None, help=CORS_HELP)
    add_server_tls(serving)

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

    worker = commands.add_parser(
        "worker", help="a match worker: takes an even share of the partitions by leases ('worker drain ADDRESS')"
    )
    worker_actions = worker.add_subparsers(dest="action")
    drain = worker_actions.add_parser("drain", help="ask a running worker to hand its partitions over and stop")
    drain.add_argument("address", help="the worker's address (host:port, as its 'serving on' line says)")
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

    from tablehall.devcluster import add_arguments as dev_cluster_arguments

    dev_cluster_arguments(
        commands.add_parser(
            "dev-cluster", help="the k8s topology as local processes: workers, gateway, Celery worker and beat"
        )
    )

    address = os.environ.get("TABLEHALL_ADDRESS", "127.0.0.1:50051")
    play = commands.add_parser("play", help="play a match in the terminal (vs bots, a friend, or one shared device)")
    play.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
    play.add_argument("--game", default="spectacular-bid", choices=["spectacular-bid", "501"])
    play.add_argument("--vs", default="bot", choices=["bot", "friend"], help="who plays the other seats")
    play.add_argument("--join", metavar="MATCH", default=None, help="play a seat of an existing match")
    play.add_argument("--token", default=None, help="the seat's token (with --join)")
    play.add_argument("--shared-device", action="store_true", help="every seat on this terminal, hand-over screens")
    play.add_argument("--players", type=int, default=None, help="501♠: 3 or 4 players")
    play.add_argument("--name", default="You")
    play.add_argument("--names", default=None, help="with --join: every seat's name, comma-separated, in seat order")
    play.add_argument("--think", type=float, default=0.5, help="seconds each bot waits before its move")
    play.add_argument("--points", type=int, default=None, help="Spectacular Bid: starting points (150)")
    play.add_argument("--bank", type=float, default=None, help="Spectacular Bid: bank seconds (120)")
    play.add_argument("--start-score", type=int, default=None, help="501♠: starting score (501)")
    add_client_tls(play)

    bot = commands.add_parser("bot", help="a bot that joins a match with a seat token and plays it to the end")
    bot.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
    bot.add_argument("--match", required=True)
    bot.add_argument("--token", required=True)
    bot.add_argument("--greedy", action="store_true", help="prefer scoring plays")
    bot.add_argument("--seed", type=int, default=None)
    bot.add_argument("--think", type=float, default=0.0, help="seconds to wait before each move")
    add_client_tls(bot)

    record = commands.add_parser("record", help="a finished match's record from the service (for verify, replay)")
    record.add_argument("match", help="the match id")
    record.add_argument("--out", type=Path, default=None, help="write it here (default: standard output)")
    record.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")

    from tablehall.organize_args import add_commands

    add_commands(commands, address)  # organizer, tables, tournament

    args = parser.parse_args(argv)
    try:
        if args.command == "replay":
            return _replay(args.file)
        if args.command == "verify":
            return _verify(args.file)
        if args.command == "record":
            from tablehall.records import record_command

            return record_command(args.address, args.match, args.out)
        if args.command == "serve":
            import asyncio

            from gateway.web import DEFAULT_WEB_PORT, WebSettings
            from tablehall.serve import serve, settings

            host, port = settings(args.host, args.port)
            web = WebSettings.of(args.web_port, args.cors_origins, DEFAULT_WEB_PORT if port else 0)
            if _cannot_listen("serve", host, port):
                return EXIT_MALFORMED
            tls = server_tls(args)
            asyncio.run(serve(host, port, args.workers or 0, args.database_url, args.metrics_port, web, tls))
            return 0
        if args.command == "gateway":
            import asyncio

            from gateway.web import WebSettings
            from tablehall.serve import run_gateway, settings

            web = WebSettings.of(args.web_port, args.cors_origins, None)
            if _cannot_listen("gateway", *settings(args.host, args.port)):
                return EXIT_MALFORMED
            asyncio.run(
                run_gateway(
                    *settings(args.host, args.port), args.workers, args.worker_address, args.metrics_port, web,
                    server_tls(args), args.database_url,
                )
            )
            return 0
        if args.command == "worker" and args.action == "drain":
            from tablehall.worker_role import drain_worker

            return drain_worker(args.address)
        if args.command == "worker":
            import asyncio

            from tablehall.worker_role import run_worker
            from workers.settings import Topology

            if args.ordinal is not None:
                port = args.port if args.port is not None else Topology.from_env(args.workers).base_port + args.ordinal
            else:
                port = args.port if args.port is not None else int(os.environ.get("TABLEHALL_WORKER_PORT", "0"))
            if port and _cannot_listen("worker", args.host, port):
                return EXIT_MALFORMED
            return asyncio.run(
                run_worker(
                    args.ordinal, args.workers, args.host, args.port, args.database_url, args.metrics_port,
                    args.advertise,
                )
            )
        if args.command == "dev-cluster":
            from tablehall.devcluster import run_dev_cluster

            return run_dev_cluster(args)
        if args.command == "demo":
            from tablehall.demo import run_demo

            return run_demo(args.game, args.players, args.seed, args.pace, args.greedy, args.record, args.json)
        if args.command == "bench" and args.kind == "engine":
            from tablehall.bench import bench_engine

            return bench_engine(args.game, args.seconds, args.seed)
        if args.command == "bench" and args.kind == "service":
            from tablehall.bench_service import bench_service

            return bench_service(
                args.address, args.matches, args.concurrency, args.game, args.seed, args.workers, args.database_url
            )
        if args.command == "bench" and args.kind == "messages":
            from tablehall.bench_messages import bench_messages

            return bench_messages(args.messages, args.streams)
        if args.command == "bench" and args.kind == "recovery":
            from tablehall.bench_recovery import bench_recovery

            return bench_recovery(args.matches, args.moves, args.database_url)
        if args.command == "bench" and args.kind in ("ratings", "sweep"):
            from tablehall.bench_ratings import bench_ratings, bench_sweep

            if args.kind == "ratings":
                return bench_ratings(args.database_url, args.matches, args.concurrency)
            return bench_sweep(args.database_url, args.matches, args.overdue)
        if args.command == "bench" and args.kind in ("roll", "failover"):
            from tablehall.bench_leases import bench_failover, bench_roll

            if args.kind == "roll":
                return bench_roll(args.workers, args.inflight, args.database_url)
            return bench_failover(args.matches, args.database_url)
        if args.command == "bench" and args.kind == "tables":
            from tablehall.bench_tables import bench_tables

            return bench_tables(args.tables, args.game, args.database_url)
        if args.command in ("organizer", "tables", "tournament"):
            from tablehall.organize import run

            return run(args)
        if args.command == "play":
            import asyncio

            from tablehall.play import play_options, run_play

            options = play_options(args.game, args.points, args.bank, args.start_score)
            return asyncio.run(
                run_play(
                    args.address, args.game, args.vs, join=args.join, token=args.token, shared=args.shared_device,
                    players=args.players, name=args.name, names=args.names, think_s=args.think, options=options,
                    tls=client_tls(args),
                )
            )
        if args.command == "bot":
            from tablehall.bots import bot_command

            return bot_command(
                args.address, args.match, args.token, args.greedy, args.seed, args.think, tls=client_tls(args)
            )
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        from tablehall.startup import explain

        line = explain(error)
        if line is None:
            raise
        print(f"tablehall {args.command}: {line}", file=sys.stderr)
        return EXIT_MALFORMED


def parser() -> argparse.ArgumentParser:
    """Every command with its arguments and handler, in the order `tablehall --help` lists them."""
    found = argparse.ArgumentParser(prog="tablehall", description="Spectacular Bid and 501♠ match service")
    commands = found.add_subparsers(dest="command", required=True)

    replay = commands.add_parser("replay", help="re-run a match record and print its outcome (RECORDS.md)")
    replay.add_argument("file", help="a record file, or - for standard input")
    replay.set_defaults(run=_replay)

    verify = commands.add_parser("verify", help="check every deal of a finished match against its commitment")
    verify.add_argument("file", help="a record from GetRecord, or - for standard input")
    verify.set_defaults(run=_verify)

    play_args.add_demo(commands)
    bench_args.add_commands(commands)
    roles_args.add_commands(commands)

    address = os.environ.get("TABLEHALL_ADDRESS", "127.0.0.1:50051")
    play_args.add_commands(commands, address)

    record = commands.add_parser("record", help="a finished match's record from the service (for verify, replay)")
    record.add_argument("match", help="the match id")
    record.add_argument("--out", type=Path, default=None, help="write it here (default: standard output)")
    record.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
    record.set_defaults(run=_record)

    organize_args.add_commands(commands, address)  # organizer, tables, tournament
    return found


def _record(args: argparse.Namespace) -> int:
    """`record MATCH`: a finished match's record from the service."""
    from tablehall.records import record_command

    return record_command(args.address, args.match, args.out)


_UNREADABLE = object()


def _read_json(command: str, file: str) -> object:
    """The JSON in `file` (or stdin); `_UNREADABLE` after printing why it cannot be read."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        print(f"tablehall {command}: cannot read {file}: {err}", file=sys.stderr)
        return _UNREADABLE
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        print(f"tablehall {command}: {file} is not JSON: {err}", file=sys.stderr)
        return _UNREADABLE


def _verify(args: argparse.Namespace) -> int:
    """`verify FILE`: every deal against its published commitment, then every event replayed."""
    from workers.commitments import NotVerifiable, broken_commitments
    from workers.games.catalog import game_named
    from workers.games.records import MalformedRecord, replay

    file: str = args.file
    record = _read_json("verify", file)
    if record is _UNREADABLE:
        return EXIT_MALFORMED
    try:
        game = game_named(str(record.get("game"))) if isinstance(record, dict) else None
        if game is None:
            raise NotVerifiable("the record names no known game")
        problems = broken_commitments(record, game.deals_key)
        result = replay(record)
    except (NotVerifiable, MalformedRecord) as err:
        served = "" if not isinstance(record, dict) or "commitments" in record else (
            " (a served match's record has them: tablehall record MATCH; tablehall demo --record files do not)")
        print(f"tablehall verify: {file} cannot be verified: {err}{served}", file=sys.stderr)
        return EXIT_MALFORMED
    if result.error is not None:
        problems.append(f"event {result.event} is illegal: {result.error}")
    for problem in problems:
        print(f"tablehall verify: {problem}", file=sys.stderr)
    if problems:
        return EXIT_ILLEGAL
    assert isinstance(record, dict)
    print(f"verified: {len(record[game.deals_key])} deal(s) match their commitments; every event is legal")
    return 0


def _replay(args: argparse.Namespace) -> int:
    """`replay FILE`: the record re-run through the rules engine, its outcome printed as JSON."""
    from workers.games.records import MalformedRecord, replay

    file: str = args.file
    record = _read_json("replay", file)
    if record is _UNREADABLE:
        return EXIT_MALFORMED
    try:
        result = replay(record)
    except MalformedRecord as err:
        print(f"tablehall replay: {file} is not a valid record: {err}", file=sys.stderr)
        return EXIT_MALFORMED
    print(json.dumps(result.to_json()))
    return 0 if result.error is None else EXIT_ILLEGAL


if __name__ == "__main__":
    raise SystemExit(main())
