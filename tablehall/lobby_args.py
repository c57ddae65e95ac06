"""The arguments of `tablehall lobby register | whoami | join | leave | bot | challenge ...`, kept apart from
their implementation (tablehall/lobby_cli.py) so that `tablehall` starts without loading gRPC."""

from __future__ import annotations

import argparse
from typing import Any

from tablehall.play_args import BANK_HELP, DELAY_HELP, LEVELS, POINTS_HELP, START_SCORE_HELP
from tablehall.tls_args import add_client_tls
from workers.games.catalog import names


def add_commands(commands: Any, address: str) -> None:
    lobby = commands.add_parser("lobby", help="register a player, queue for a rated opponent, challenges")
    lobby.set_defaults(run=run_lobby)
    kinds = lobby.add_subparsers(dest="kind", required=True)

    def remote(parser: argparse.ArgumentParser, key: bool = True) -> None:
        parser.add_argument("--address", default=address, help=f"the service (env TABLEHALL_ADDRESS; now {address})")
        if key:
            parser.add_argument("--key", default=None, help="your player key (env TABLEHALL_PLAYER_KEY)")
        add_client_tls(parser)

    def game(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--game", default=names()[0], choices=names())
        parser.add_argument("--points", type=int, default=None, help=POINTS_HELP)
        parser.add_argument("--bank", type=float, default=None, help=BANK_HELP)
        parser.add_argument("--delay", type=float, default=None, help=DELAY_HELP)
        parser.add_argument("--start-score", type=int, default=None, help=START_SCORE_HELP)
        parser.add_argument("--decision-limit", type=float, default=None, help="501♠: seconds per decision")

    register = kinds.add_parser("register", help="a new player: prints its key once (only its hash is stored)")
    register.add_argument("name", help="1 to 32 letters, digits, spaces, '-', '_', '.'")
    remote(register, key=False)
    remote(kinds.add_parser("whoami", help="the player of a key"))
    join = kinds.add_parser("join", help="queue for a rated opponent and wait to be seated (Ctrl-C leaves)")
    game(join)
    join.add_argument("--no-wait", action="store_true", help="queue and return (`lobby leave` to leave)")
    remote(join)
    remote(kinds.add_parser("leave", help="leave the queue"))
    bot = kinds.add_parser("bot", help="play a practice bot at once (prints the line that plays your seat)")
    game(bot)
    bot.add_argument("--level", default="search", choices=LEVELS, help="the bot's strength (default: search)")
    remote(bot)

    challenge = kinds.add_parser("challenge", help="open, list or take challenges (a friend link is one)")
    ways = challenge.add_subparsers(dest="way", required=True)
    opened = ways.add_parser("open", help="a table waiting for takers; prints its id (the friend link)")
    game(opened)
    opened.add_argument("--seats", type=int, default=0, help="501♠: 3 or 4 (default: the game's least)")
    opened.add_argument("--unlisted", action="store_true", help="not in the list: only its link seats you")
    opened.add_argument("--no-wait", action="store_true", help="do not wait for the table to fill")
    remote(opened)
    listed = ways.add_parser("list", help="the listed challenges waiting, each with its time left")
    listed.add_argument("--game", default=None, choices=names(), help="default: every game")
    remote(listed)
    take = ways.add_parser("take", help="take a seat of a challenge (its id)")
    take.add_argument("challenge")
    remote(take)
    cancel = ways.add_parser("cancel", help="withdraw your challenge while it waits")
    cancel.add_argument("challenge")
    remote(cancel)


def run_lobby(args: argparse.Namespace) -> int:
    from tablehall.lobby_cli import run

    return run(args)
