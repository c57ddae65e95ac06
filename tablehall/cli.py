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

from tablehall import bench_args, lobby_args, organize_args, play_args, roles_args

EXIT_ILLEGAL = 1
EXIT_MALFORMED = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, then run the command's handler; a failure the user can fix is one line and exit 2."""
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
        return code
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
    record.add_argument(
        "--token", default=None, help="a seat's token or the organizer's key: a delayed tournament table's record now"
    )
    record.set_defaults(run=_record)

    organize_args.add_commands(commands, address)  # organizer, tables, tournament
    lobby_args.add_commands(commands, address)  # lobby register, join, leave, challenge
    return found


def _record(args: argparse.Namespace) -> int:
    """`record MATCH`: a finished match's record from the service."""
    from tablehall.records import record_command

    return record_command(args.address, args.match, args.out, args.token)


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
