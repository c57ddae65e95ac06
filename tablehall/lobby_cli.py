"""`tablehall lobby ...`: a player's side of the Lobby from the terminal. A seat prints the line that
plays it (`tablehall play --join MATCH --token KEY --names ...`: the seat token is the player's key)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from google.protobuf.json_format import MessageToDict

from protos.tablehall.v1 import lobby_pb2
from tablehall.client import Client, TablehallError
from tablehall.lobby_client import LobbyClient, register
from tablehall.organize import options_of
from tablehall.tls_args import client_tls

EXIT_REFUSED = 1
EXIT_INPUT = 2
KEY_ENV = "TABLEHALL_PLAYER_KEY"


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except TablehallError as error:
        print(f"tablehall lobby {args.kind}: {error.line()}", file=sys.stderr)
        return EXIT_REFUSED


async def _run(args: argparse.Namespace) -> int:
    async with Client(args.address, client_tls(args)) as client:
        if args.kind == "register":
            me = await register(client, args.name)
            print(f"player {me.name!r} (id {me.player_id}) registered. Its key, shown only now (keep it secret):")
            print(me.key)
            print(f"Use it as --key, or: export {KEY_ENV}={me.key}", file=sys.stderr)
            return 0
        key = args.key or os.environ.get(KEY_ENV, "")
        if not key:
            print(
                f"tablehall lobby {args.kind}: give --key or {KEY_ENV} (tablehall lobby register NAME)", file=sys.stderr
            )
            return EXIT_INPUT
        lobby = LobbyClient(client, key)
        if args.kind == "whoami":
            info = await lobby.me()
            print(f"{info.name} (id {info.player_id})")
            return 0
        if args.kind == "leave":
            await lobby.leave()
            print("left the queue")
            return 0
        if args.kind == "join":
            return await _join(lobby, args, key)
        if args.kind == "bot":
            seat = await lobby.play_bot(args.game, args.level, _options(args))
            if not seat.players:  # the worker was away: the table comes on Seated
                seat = await lobby.seated()
            _print_seat(seat, key)
            return 0
        return await _challenge(lobby, args, key)


def _options(args: argparse.Namespace) -> dict[str, object]:
    return MessageToDict(options_of(args), preserving_proto_field_name=True)


async def _join(lobby: LobbyClient, args: argparse.Namespace, key: str) -> int:
    ticket = await lobby.join(args.game, _options(args))
    print(f"queued for {ticket.game} (rating {ticket.ordinal:.1f}, ticket {ticket.ticket})", flush=True)
    if args.no_wait:
        return 0
    try:
        seat = await lobby.seated(ticket.ticket)
    except (KeyboardInterrupt, asyncio.CancelledError):
        await lobby.leave()
        print("left the queue", file=sys.stderr)
        return 130
    _print_seat(seat, key)
    return 0


EXPIRY_GRACE_S = 5.0
"""How long `challenge open` waits beyond its challenge's lifetime (a table made at the last moment)."""


def time_left(ms: int) -> str:
    """`M:SS` (or `H h M min`) of a challenge's time left, 0:00 when it is over."""
    s = max(0, ms) // 1000
    return f"{s // 3600} h {s % 3600 // 60} min" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


async def _challenge(lobby: LobbyClient, args: argparse.Namespace, key: str) -> int:
    if args.way == "list":
        listed = await lobby.challenge_list(args.game or "")
        for found in listed.challenges:
            taken = f", taken by {', '.join(found.taken_by)}" if found.taken_by else ""
            left = time_left(found.expires_unix_ms - listed.now_unix_ms)
            print(f"{found.challenge_id}  {found.game}  by {found.host}  {found.seats} seats{taken}  expires in {left}")
        return 0
    if args.way == "cancel":
        await lobby.cancel(args.challenge)
        print(f"challenge {args.challenge} cancelled")
        return 0
    if args.way == "take":
        seat = await lobby.take(args.challenge)
        if not seat.match_id:
            print(f"seat {seat.seat} taken; waiting for the others", flush=True)
            seat = await lobby.seated(args.challenge)
        _print_seat(seat, key)
        return 0
    made = await lobby.open_challenge(args.game, _options(args), args.seats, args.unlisted)
    print(f"challenge {made.challenge_id}: send it to a friend (tablehall lobby challenge take {made.challenge_id},")
    print(f"or the page's link #challenge={made.challenge_id})", flush=True)
    if args.no_wait:
        return 0
    lifetime_s = (made.expires_unix_ms - made.opened_unix_ms) / 1000
    try:
        seat = await asyncio.wait_for(lobby.seated(made.challenge_id), lifetime_s + EXPIRY_GRACE_S)
    except TimeoutError:
        print(f"challenge {made.challenge_id} expired: nobody took it in {time_left(round(lifetime_s * 1000))}",
              file=sys.stderr)  # fmt: skip
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        await lobby.cancel(made.challenge_id)
        print("challenge cancelled", file=sys.stderr)
        return 130
    _print_seat(seat, key)
    return 0


def _print_seat(seat: lobby_pb2.Seat, key: str) -> None:
    names = ",".join(seat.players)
    print(f"seated: match {seat.match_id}, seat {seat.seat} of {len(seat.players)} ({', '.join(seat.players)})")
    print(f"play it: tablehall play --join {seat.match_id} --token {key} --names {names}")
