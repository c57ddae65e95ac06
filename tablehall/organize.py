"""The organizers' command line: `tablehall organizer`, `tablehall tables` and `tablehall tournament`.

Calls carry the organizer key from `--key` or `TABLEHALL_ORGANIZER_KEY`. Exit codes: 0 done; 1 the
service refused (its message and code on stderr) or cannot be reached; 2 bad input here (a file that
cannot be read, a time that cannot be parsed, no database for `organizer create`).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import re
import sys
import tarfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.json_format import MessageToDict
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from protos.tablehall.v1 import matches_pb2, tournaments_pb2, tournaments_pb2_grpc
from tablehall.client import TablehallError, open_channel
from tablehall.tls_args import client_tls
from workers.games.catalog import SPECTACULAR_BID

T = TypeVar("T")
EXIT_REFUSED = 1
EXIT_INPUT = 2


class BadInput(Exception):
    """Something on this side is wrong (a file, a time): exit 2 before any call."""


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    try:
        if args.command == "organizer":
            return _organizer(args.name, args.database_url)
        return asyncio.run(_remote(args, console))
    except BadInput as error:
        console.print(f"tablehall {args.command}: {error}", markup=False, soft_wrap=True)
        return EXIT_INPUT
    except TablehallError as error:  # one line, however long (a terminal wraps it, a log keeps it whole)
        console.print(f"tablehall {args.command}: {error.line()}", markup=False, soft_wrap=True)
        return EXIT_REFUSED


def _organizer(name: str, url: str | None) -> int:
    from gateway.tournaments.organizers import create_organizer
    from workers.games.errors import MalformedAction
    from workers.sql.engine import database_url
    from workers.sql.migrate import engine_for

    url = url or database_url()
    if url == "memory":
        raise BadInput("organizers live in the database: give --database-url (or TABLEHALL_DATABASE_URL)")
    try:
        key = create_organizer(engine_for(url), name)
    except MalformedAction as error:
        raise BadInput(str(error)) from None
    print(f"organizer {name.strip()!r} created. Its key, shown only now (keep it secret):\n{key}")
    print("Use it as --key, or: export TABLEHALL_ORGANIZER_KEY=" + key, file=sys.stderr)
    return 0


async def _remote(args: argparse.Namespace, console: Console) -> int:
    channel = open_channel(args.address, client_tls(args))
    stub = tournaments_pb2_grpc.TournamentsStub(channel)
    try:
        if args.command == "tournament" and args.kind == "bot":
            return await _bot(args)
        key = args.key or os.environ.get("TABLEHALL_ORGANIZER_KEY")
        if not key:
            raise BadInput("an organizer key is needed: --key KEY or TABLEHALL_ORGANIZER_KEY")
        call = _Caller(stub, key)
        if args.command == "tables":
            return await (_tables_create(call, args) if args.kind == "create" else _tables_start(call, args))
        handlers: dict[str, Callable[[_Caller, argparse.Namespace, Console], Awaitable[int]]] = {
            "create": _create, "status": _status, "standings": _standings, "next": _next, "export": _export,
        }  # fmt: skip
        return await handlers[args.kind](call, args, console)
    finally:
        await channel.close()


class _Caller:
    def __init__(self, stub: tournaments_pb2_grpc.TournamentsStub, key: str) -> None:
        self.stub, self.metadata = stub, (("authorization", f"Bearer {key}"),)

    async def __call__(self, method: str, request: Any) -> Any:
        try:
            return await getattr(self.stub, method)(request, metadata=self.metadata)
        except grpc.aio.AioRpcError as error:
            raise TablehallError.of(error) from None


# --- input ---------------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[list[str]]:
    """A CSV file's non-empty rows, cells stripped; a first row `name`/`player...` is a header."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"cannot read {path}: {error}") from None
    found = [[c.strip() for c in row if c.strip()] for row in csv.reader(io.StringIO(text))]
    found = [row for row in found if row]
    if found and found[0][0].lower() in ("name", "player", "players", "seat 0", "seat0"):
        found = found[1:]
    if not found:
        raise BadInput(f"{path} lists nobody")
    return found


def parse_when(text: str | None, now: float | None = None) -> int | None:
    """Unix ms from an ISO 8601 time (UTC if it names no zone) or a delay such as +90s, +10m, +1h."""
    if text is None:
        return None
    now = time.time() if now is None else now
    delay = re.fullmatch(r"\+(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if delay:
        return round((now + float(delay.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[delay.group(2)]) * 1000)
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"--start-at {text!r}: an ISO time (2030-05-01T18:00:00Z) or a delay (+90s, +10m)") from None
    return round((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def options_of(args: argparse.Namespace) -> matches_pb2.Options:
    fields = {"start_points": args.points, "bank_s": args.bank, "delay_s": args.delay,
              "start_score": args.start_score, "decision_limit_s": args.decision_limit}  # fmt: skip
    return matches_pb2.Options(**{k: v for k, v in fields.items() if v is not None})


def write_csv(path: Path | None, header: list[str], rows: list[list[Any]]) -> None:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    if path is None:
        sys.stdout.write(out.getvalue())
    else:
        path.write_text(out.getvalue(), encoding="utf-8")
        path.chmod(0o600)  # secrets


def _stdout() -> Console:
    """Tables on stdout; piped, they keep their full width (rich would wrap at 80 columns)."""
    return Console() if sys.stdout.isatty() else Console(width=200)


def when_text(unix_ms: int) -> str:
    return datetime.fromtimestamp(unix_ms / 1000, UTC).isoformat(timespec="seconds")


# --- commands --------------------------------------------------------------------------------------------


async def _tables_create(call: _Caller, args: argparse.Namespace) -> int:
    request = tournaments_pb2.CreateTablesRequest(
        game=args.game, options=options_of(args),
        tables=[tournaments_pb2.TableRequest(players=row) for row in read_rows(args.tables)],
    )  # fmt: skip
    start = parse_when(args.start_at)
    if start is not None:
        request.start_unix_ms = start
    made = await call("CreateTables", request)
    rows = [[t.match_id, s.seat, s.player, s.token] for t in made.tables for s in t.seats]
    write_csv(args.out, ["match_id", "seat", "player", "token"], rows)
    print(f"batch {made.batch_id}: {len(made.tables)} tables, clocks start {when_text(made.starts_unix_ms)}",
          file=sys.stderr)  # fmt: skip
    return 0


async def _tables_start(call: _Caller, args: argparse.Namespace) -> int:
    started = await call("StartTables", tournaments_pb2.StartTablesRequest(batch_id=args.batch))
    since = when_text(started.started_unix_ms)
    print(f"batch {started.batch_id}: {started.started} held tables started now; its clocks run since {since}")
    return 0


async def _create(call: _Caller, args: argparse.Namespace, console: Console) -> int:
    request = tournaments_pb2.CreateTournamentRequest(
        name=args.name, game=args.game, players=[row[0] for row in read_rows(args.players)], format=args.format,
        rounds=args.rounds, options=options_of(args), voided=args.voided, manual=args.manual,
        spectator_delay_s=args.spectator_delay,
    )  # fmt: skip
    start = parse_when(args.start_at)
    if start is not None:
        request.start_unix_ms = start
    if args.round_pause is not None:
        request.round_pause_s = args.round_pause
    made = await call("CreateTournament", request)
    write_csv(args.out, ["seed", "player", "token"], [[p.seed, p.player, p.token] for p in made.players])
    console.print(f"tournament {made.tournament_id}: {len(made.players)} players; their tokens are shown only now")
    await _follow(call, made.tournament_id, console)
    return 0


async def _follow(call: _Caller, tournament_id: str, console: Console) -> tournaments_pb2.Tournament:
    """A progress bar while the newest round's tables are created on the workers."""
    ask = tournaments_pb2.GetTournamentRequest(tournament_id=tournament_id)
    state: tournaments_pb2.Tournament = await call("GetTournament", ask)
    with console.status(f"tournament {tournament_id}: pairing"):
        while state.status == "pairing":  # the service pairs in a process of its own; the call came back at once
            await asyncio.sleep(0.1)
            state = await call("GetTournament", ask)
    if state.status == "pairing_failed":
        console.print(f"tournament {tournament_id}: {state.detail}")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:  # fmt: skip
        task = None
        while state.round_states and state.round_states[-1].status == "scheduling":
            current = state.round_states[-1]
            if task is None:
                task = bar.add_task(f"round {current.number}: scheduling tables", total=current.tables)
            bar.update(task, completed=current.scheduled)
            await asyncio.sleep(0.1)
            state = await call("GetTournament", ask)
        if state.round_states:
            current = state.round_states[-1]
            if task is None:
                task = bar.add_task(f"round {current.number}: tables", total=current.tables)
            bar.update(task, completed=current.tables, description=f"round {current.number}: {current.tables} tables "
                       f"scheduled, clocks start {when_text(current.starts_unix_ms)}")  # fmt: skip
    return state


async def _next(call: _Caller, args: argparse.Namespace, console: Console) -> int:
    await call("NextRound", tournaments_pb2.NextRoundRequest(tournament_id=args.tournament))
    state = await _follow(call, args.tournament, console)
    print(f"tournament {args.tournament}: round {state.current_round} of {state.rounds}")
    return 0


async def _status(call: _Caller, args: argparse.Namespace, console: Console) -> int:
    t = await call("GetTournament", tournaments_pb2.GetTournamentRequest(tournament_id=args.tournament))
    out = _stdout()
    print(f"{t.name} ({t.tournament_id}): {t.game}, {t.format}, {len(t.players)} players, "
          f"round {t.current_round} of {t.rounds}, {t.status}" + (" (manual)" if t.manual else ""), flush=True)
    table = Table("round", "status", "tables", "scheduled", "ended", "byes", "starts")
    for r in t.round_states:
        table.add_row(str(r.number), r.status, str(r.tables), str(r.scheduled), str(r.ended), ", ".join(r.byes),
                      when_text(r.starts_unix_ms))  # fmt: skip
    out.print(table)
    return 0


async def _standings(call: _Caller, args: argparse.Namespace, console: Console) -> int:
    s = await call("GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=args.tournament))
    sb = s.game == SPECTACULAR_BID
    columns = ["rank", "player", "games", *(["wins", "points", "Buchholz"] if sb else ["placement", "score"])]
    table = Table(*columns, title=f"after round {s.after_round}", caption=f"ties: {s.tie_breaks}")
    for line in s.standings:
        values = [line.wins, line.points, line.buchholz] if sb else [line.placement_points, line.score]
        table.add_row(str(line.rank), line.player, str(line.games), *(f"{v:g}" for v in values))
    _stdout().print(table)
    return 0


async def _export(call: _Caller, args: argparse.Namespace, console: Console) -> int:
    if bool(args.tournament) == bool(args.batch):
        raise BadInput("export one tournament (ID) or one batch (--batch ID)")
    request = tournaments_pb2.ExportRecordsRequest(tournament_id=args.tournament or "", batch_id=args.batch or "")
    try:
        records = [r async for r in call.stub.ExportRecords(request, metadata=call.metadata)]
    except grpc.aio.AioRpcError as error:
        raise TablehallError.of(error) from None
    files: dict[str, bytes] = {}
    for r in records:
        folder = f"round-{r.round:02}" if args.tournament else f"batch-{args.batch}"
        name = f"{folder}/table-{r.table:03}" + (f"-replay{r.attempt}" if r.attempt else "") + f"-{r.match_id}.json"
        files[name] = json.dumps(json.loads(r.record_json), indent=1).encode()
    if args.tournament:
        t = await call("GetTournament", tournaments_pb2.GetTournamentRequest(tournament_id=args.tournament,
                                                                                with_tables=True))  # fmt: skip
        s = await call("GetStandings", tournaments_pb2.GetStandingsRequest(tournament_id=args.tournament))
        for name, message in (("tournament.json", t), ("standings.json", s)):
            files[name] = json.dumps(MessageToDict(message, preserving_proto_field_name=True), indent=1).encode()
    try:
        with tarfile.open(args.out, "w:gz") as archive:
            for name, data in sorted(files.items()):
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(data), int(time.time())
                archive.addfile(info, io.BytesIO(data))
    except OSError as error:
        raise BadInput(f"cannot write {args.out}: {error}") from None
    console.print(f"{len(records)} table records written to {args.out}")
    return 0


async def _bot(args: argparse.Namespace) -> int:
    from tablehall.client import Client
    from tablehall.entrant import play_tournament

    client = Client(args.address, client_tls(args))
    try:
        final = await play_tournament(
            client, args.tournament, args.token, on_table=lambda a: print(f"round {a.round}: table {a.match_id}, "
                                                                          f"seat {a.seat} of {list(a.players)}")
        )  # fmt: skip
    finally:
        await client.close()
    print(f"{final.player}: the tournament is over, rank {final.rank}")
    return 0
